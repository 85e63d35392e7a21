// Settings + input embeddings → every matrix the page draws, computed by the
// package's wasm engine through its public API.
//
// The book's route: ca.manualSeed(seed), then the book's class
// (CausalAttention, MultiHeadAttentionWrapper or MultiHeadAttention), then
// forward(). With those settings the page shows exactly what this prints:
//
//   ca.manualSeed(seed);
//   const layer = new ca.CausalAttention(3, dOut, T, dropout, qkvBias);
//   layer.forward(x, [1, T, 3], { returnWeights: true, returnScores: true });
//
// The book's classes are always causal with equal query and key lengths.
// "Causal off" and a decoding-style view (fewer queries than keys, with
// top-left or bottom-right alignment) go one level down: the same module's
// forward hands back the Q, K and V heads it computed (returnQKV), and
// ca.attention() runs on them with the `causal` option. The page says which
// route ran.

import { maskShiftFor, visibleEnd } from '../core/mask.mjs';
import { D_IN } from '../core/tokens.mjs';

/** The module the settings describe, with its head size and output width. */
function describeModule({ heads, dOut, multiHead }) {
  if (heads === 1) return { kind: 'CausalAttention', headDim: dOut, outDim: dOut, listing: '3.3' };
  if (multiHead === 'mha') {
    return { kind: 'MultiHeadAttention', headDim: dOut / heads, outDim: dOut, listing: '3.5' };
  }
  return { kind: 'MultiHeadAttentionWrapper', headDim: dOut, outDim: heads * dOut, listing: '3.4' };
}

async function buildModule(ca, state, mod, T) {
  // torch.manual_seed(seed) right before construction, as in the book, so
  // the parameters are PyTorch's for that seed.
  await ca.manualSeed(state.seed);
  const { dOut, heads, dropout, qkvBias } = state;
  switch (mod.kind) {
    case 'CausalAttention': return new ca.CausalAttention(D_IN, dOut, T, dropout, qkvBias);
    case 'MultiHeadAttention': return new ca.MultiHeadAttention(D_IN, dOut, T, dropout, heads, qkvBias);
    default: return new ca.MultiHeadAttentionWrapper(D_IN, dOut, T, dropout, heads, qkvBias);
  }
}

/** Rows from..rows-1 of each of H [rows, width] blocks. */
function lastRows(a, H, rows, width, from) {
  if (from === 0) return a;
  const keep = rows - from;
  const out = new Float32Array(H * keep * width);
  for (let h = 0; h < H; h++) {
    out.set(a.subarray((h * rows + from) * width, (h + 1) * rows * width), h * keep * width);
  }
  return out;
}

/** One head of an [H, rows, width] array (a copy). */
function head(a, h, rows, width) {
  return a.slice(h * rows * width, (h + 1) * rows * width);
}

/**
 * [H, Tq, hd] → [Tq, H·hd]: the book's transpose(1, 2).contiguous().view(...).
 * For the ca.attention() route only, which returns the heads split; the
 * module's forward merges its own, but it cannot run without the mask or
 * with fewer queries than keys.
 */
function mergeHeads(o, H, Tq, hd) {
  const out = new Float32Array(Tq * H * hd);
  for (let h = 0; h < H; h++) {
    for (let t = 0; t < Tq; t++) {
      for (let d = 0; d < hd; d++) out[t * H * hd + h * hd + d] = o[(h * Tq + t) * hd + d];
    }
  }
  return out;
}

function maxAbsDiff(a, b) {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

/**
 * The chapter's first masking route for one head: softmax over every key,
 * times the lower-triangular mask, divided by the row sums (section 3.5.1).
 * Returns the three stages and how far they land from the −∞ route.
 */
async function renormalizeRoute(ca, qkv, { h, T, Tq, q0, hd, shift, alignment, minusInf }) {
  const q = lastRows(head(qkv.queries, h, T, hd), 1, T, hd, q0);
  const k = head(qkv.keys, h, T, hd);
  const v = head(qkv.values, h, T, hd);
  const shape = { batch: 1, heads: 1, queryLength: Tq, keyLength: T, headDim: hd, returnWeights: true };
  // Step 1 in wasm: the unmasked softmax (SelfAttention_v2's weights).
  const { weights: full } = await ca.attention(q, k, v, { ...shape, causal: false });
  // Steps 2 and 3 in plain JS, as the book writes them with tensors.
  const tri = new Float32Array(full.length);
  const renorm = new Float32Array(full.length);
  for (let i = 0; i < Tq; i++) {
    const end = visibleEnd(i, T, shift);
    let sum = 0;
    for (let j = 0; j < end; j++) {
      tri[i * T + j] = full[i * T + j];
      sum += tri[i * T + j];
    }
    for (let j = 0; j < end; j++) renorm[i * T + j] = tri[i * T + j] / sum;
  }
  // The engine's own 'renormalize' strategy, for comparison.
  const { weights: engine } = await ca.attention(q, k, v, { ...shape, causal: alignment, maskStrategy: 'renormalize' });
  return {
    head: h, full, tri, renorm, engine,
    manualVsMinusInf: maxAbsDiff(renorm, minusInf),
    engineVsMinusInf: maxAbsDiff(engine, minusInf),
  };
}

/**
 * Runs everything for `state` on x [T, D_IN]. Returns typed arrays
 * [H, Tq, T] for scores (raw Q·Kᵀ), weights (softmax, before dropout) and
 * dropped (after dropout, or null when dropout is off), output [Tq, outDim],
 * the renormalise route for `state.head`, and timings.
 *
 * `ca` is the runtime of init({ worker: true }): every engine call is
 * awaited, and runs in the engine's worker, so the page's thread stays free
 * (hover keeps answering while a long input computes). A plain runtime
 * works too: awaiting a value is harmless.
 */
export async function runPipeline(ca, state, tokens, x) {
  const started = performance.now();
  const T = tokens.length;
  const mod = describeModule(state);
  const H = state.heads;
  const hd = mod.headDim;
  const Tq = Math.min(state.queries ?? T, T);
  const q0 = T - Tq;
  const shift = maskShiftFor(state, Tq, T);
  const dropoutActive = state.training && state.dropout > 0;
  const shape = [1, T, D_IN];

  const layer = await buildModule(ca, state, mod, T);

  // The module's forward in eval mode: raw scores (which no mask touches),
  // the softmax weights before dropout, and the Q, K, V heads [1, H, T, hd]
  // it projected (the other routes run on them). Eval draws no dropout seed,
  // so the generator is where PyTorch's would be for the training forward.
  await layer.eval();
  let t0 = performance.now();
  const ev = await layer.forward(x, shape, { returnWeights: true, returnScores: true, returnQKV: true });
  let forwardMs = performance.now() - t0;
  const scores = lastRows(ev.scores, H, T, T, q0);

  let route;
  let weights;
  let dropped = null;
  let output;
  if (state.causal && Tq === T) {
    route = {
      kind: 'module',
      call: `${mod.kind}.forward(x, [1, ${T}, ${D_IN}]) in ${dropoutActive ? 'training' : 'eval'} mode`,
    };
    weights = ev.weights;
    output = ev.output;
    if (dropoutActive) {
      await layer.train();
      t0 = performance.now();
      const tr = await layer.forward(x, shape, { returnWeights: true });
      forwardMs = performance.now() - t0;
      dropped = tr.weights;
      output = tr.output;
    }
  } else {
    const causal = state.causal ? state.alignment : false;
    route = {
      kind: 'kernel',
      call: `ca.attention(q, k, v, { queryLength: ${Tq}, keyLength: ${T}, causal: ${causal === false ? 'false' : `'${causal}'`} })` +
        ' on the module\u2019s Q, K, V (its forward with returnQKV)',
    };
    const q = lastRows(ev.queries, H, T, hd, q0);
    const opts = { batch: 1, heads: H, queryLength: Tq, keyLength: T, headDim: hd, causal, returnWeights: true };
    t0 = performance.now();
    let r = await ca.attention(q, ev.keys, ev.values, opts);
    forwardMs = performance.now() - t0;
    weights = r.weights;
    if (dropoutActive) {
      t0 = performance.now();
      r = await ca.attention(q, ev.keys, ev.values, { ...opts, dropout: state.dropout, training: true });
      forwardMs = performance.now() - t0;
      dropped = r.weights;
    }
    // ca.attention() stops at the heads' outputs: merge them, and for
    // MultiHeadAttention apply the module's own out_proj (a Linear, in wasm).
    output = mergeHeads(r.output, H, Tq, hd);
    if (mod.kind === 'MultiHeadAttention') output = await (await layer.outProj).forward(output, [Tq, state.dOut]);
  }

  const h = Math.min(state.head, H - 1);
  const renorm = state.causal
    ? await renormalizeRoute(ca, ev, {
      h, T, Tq, q0, hd, shift, alignment: state.alignment, minusInf: head(weights, h, Tq, T),
    })
    : null;

  return {
    mod, route, T, Tq, q0, H, hd, head: h,
    outDim: mod.outDim,
    scale: await ca.defaultScale(hd),
    maskShift: shift,
    dropoutActive,
    dropoutScale: 1 / (1 - state.dropout),
    scores, weights, dropped, output, renorm,
    forwardMs,
    computeMs: performance.now() - started,
  };
}
