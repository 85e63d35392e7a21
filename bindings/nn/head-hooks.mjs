// What an attention module with an output projection (MultiHeadAttention,
// GroupedQueryAttention) writes into the residual stream, head by head, and
// how a forward replaces some heads' writes: the hooks interpretability
// needs (capture for the logit lens and direct attribution, patching for
// causal tracing).
//
// Head h's output: its context vectors (the attention output before the
// heads merge, times its headMask factor) through its columns of out_proj,
// [batch, tokens, outputDim]; out_proj's bias belongs to no head. The
// module's output is the bias plus the heads' outputs. With either hook
// (returnHeadOutputs, patchHeads) the forward computes it so — bias, then
// each head's output (or its patch) in head order, in float32 — so that
// patching heads with the values a returnHeadOutputs forward captured gives
// the same bits however many heads are patched, and a model's later layers
// see the same stream; the fused forward's output differs from that sum by
// rounding (within 1e-5 · (1 + |y|)).

import { checkInteger, checkOptionNames, checkTensor, describe } from '../api/validate.mjs';

/** @import { Engine } from './module.mjs' */

/**
 * A forward's patch: which heads, their replacement outputs, and where.
 * @typedef {{ heads: number[], values: Float32Array, positions: number[] | null }} HeadPatch
 */

/**
 * options.patchHeads checked: { heads, values [batch, heads.length,
 * tokens, outputDim], positions? (token indices; default all) }.
 * @param {unknown} patch
 * @param {{ batch: number, tokens: number, numHeads: number, outputDim: number }} sizes
 * @returns {HeadPatch}
 */
export function checkPatch(patch, { batch, tokens, numHeads, outputDim }) {
  const p = /** @type {Record<string, any>} */ (checkOptionNames('options.patchHeads',
    /** @type {object | undefined} */ (patch), ['heads', 'values', 'positions']));
  if (!Array.isArray(p.heads) && !(p.heads instanceof Int32Array)) {
    throw new TypeError(`options.patchHeads.heads must be an Array of head indices, got ${describe(p.heads)}`);
  }
  const heads = Array.from(p.heads, (h, i) => checkInteger(`options.patchHeads.heads[${i}]`, h, 0));
  heads.forEach((h, i) => {
    if (h >= numHeads) throw new RangeError(`options.patchHeads.heads[${i}] must be below numHeads ${numHeads}, got ${h}`);
    if (heads.indexOf(h) !== i) throw new RangeError(`options.patchHeads.heads names head ${h} twice`);
  });
  const values = checkTensor('options.patchHeads.values', p.values, batch * heads.length * tokens * outputDim,
    `[batch ${batch}, heads ${heads.length}, tokens ${tokens}, outputDim ${outputDim}]`);
  let positions = null;
  if (p.positions !== undefined) {
    if (!Array.isArray(p.positions) && !(p.positions instanceof Int32Array)) {
      throw new TypeError(`options.patchHeads.positions must be an Array of token indices, got ${describe(p.positions)}`);
    }
    positions = Array.from(p.positions, (t, i) => {
      checkInteger(`options.patchHeads.positions[${i}]`, t, 0);
      if (t >= tokens) throw new RangeError(`options.patchHeads.positions[${i}] must be below tokens ${tokens}, got ${t}`);
      return t;
    });
  }
  return { heads, values, positions };
}

/**
 * Each head's output [batch, heads, tokens, outputDim] from the layer's
 * context [batch, heads, tokens, headDim] (times headMask [1 or batch,
 * heads], or none) and out_proj's weight [outputDim, heads · headDim]: one
 * GEMM per head through the engine.
 * @param {Pick<Engine, 'linearForward'>} engine
 * @param {Float32Array} context
 * @param {Float32Array | null} headMask
 * @param {{ batch: number, tokens: number, numHeads: number, headDim: number, outputDim: number }} sizes
 * @param {Float32Array} wOut
 * @returns {Float32Array}
 */
export function headOutputs(engine, context, headMask, { batch, tokens, numHeads, headDim, outputDim }, wOut) {
  const width = numHeads * headDim;
  const out = new Float32Array(batch * numHeads * tokens * outputDim);
  const w = new Float32Array(outputDim * headDim);
  const span = tokens * headDim;
  // Head h's context rows of every sequence, [batch · tokens, headDim]: one GEMM per head.
  const ctx = new Float32Array(batch * span);
  for (let h = 0; h < numHeads; h++) {
    // Head h's columns of out_proj: [outputDim, headDim].
    for (let o = 0; o < outputDim; o++) w.set(wOut.subarray(o * width + h * headDim, o * width + (h + 1) * headDim), o * headDim);
    for (let b = 0; b < batch; b++) {
      const factor = headMask ? headMask[(headMask.length === numHeads ? 0 : b * numHeads) + h] : 1;
      const from = (b * numHeads + h) * span;
      for (let i = 0; i < span; i++) ctx[b * span + i] = context[from + i] * factor;
    }
    const y = engine.linearForward(ctx, batch * tokens, headDim, outputDim, w, null);
    const block = tokens * outputDim;
    for (let b = 0; b < batch; b++) out.set(y.subarray(b * block, (b + 1) * block), (b * numHeads + h) * block);
  }
  return out;
}

/**
 * The output with `patch` applied: bias, then for each head in order its
 * own output or, for a patched head at a patched position, its patch value.
 * @param {Float32Array} own  headOutputs' [batch, heads, tokens, outputDim]
 * @param {Float32Array | null} bias
 * @param {HeadPatch} patch
 * @param {{ batch: number, tokens: number, numHeads: number, outputDim: number }} sizes
 * @returns {Float32Array} [batch, tokens, outputDim]
 */
export function patchedOutput(own, bias, patch, { batch, tokens, numHeads, outputDim }) {
  const y = new Float32Array(batch * tokens * outputDim);
  const at = new Map(patch.heads.map((h, k) => [h, k]));
  const patchedRows = patch.positions ? new Set(patch.positions) : null;
  for (let b = 0; b < batch; b++) {
    for (let t = 0; t < tokens; t++) {
      const row = (b * tokens + t) * outputDim;
      if (bias) y.set(bias, row);
      for (let h = 0; h < numHeads; h++) {
        const k = at.get(h);
        const source = k !== undefined && (!patchedRows || patchedRows.has(t))
          ? patch.values.subarray(((b * patch.heads.length + k) * tokens + t) * outputDim)
          : own.subarray(((b * numHeads + h) * tokens + t) * outputDim);
        for (let o = 0; o < outputDim; o++) y[row + o] += source[o];
      }
    }
  }
  return y;
}

/**
 * The head mask a patched forward's backward uses: the user's (or ones)
 * times 0 for every patched head ([batch, heads]): a patched head's output
 * is a given value, so no gradient reaches its projections (with positions,
 * none at any position).
 * @param {Float32Array | null} headMask  [heads] or [batch, heads], or null
 * @param {HeadPatch} patch
 * @param {number} batch
 * @param {number} numHeads
 * @returns {Float32Array}
 */
export function backwardMask(headMask, patch, batch, numHeads) {
  const m = new Float32Array(batch * numHeads);
  for (let b = 0; b < batch; b++) {
    for (let h = 0; h < numHeads; h++) {
      const factor = headMask ? headMask[(headMask.length === numHeads ? 0 : b * numHeads) + h] : 1;
      m[b * numHeads + h] = patch.heads.includes(h) ? 0 : factor;
    }
  }
  return m;
}
