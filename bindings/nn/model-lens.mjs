// The interpretability lab's views of a whole language model (GPTModel,
// Llama3Model), computed where the model lives (in worker mode: in the
// worker, so a page never runs a 50k-vocabulary loop):
//
//   logit lens      each layer's residual stream through the model's final
//                   norm and out_head (nostalgebraist 2020): the top token
//                   and its probability per position (the chosen ones);
//   direct logit    each head's output [tokens, emb] as the final norm sees
//   attribution     it — LayerNorm: centred (mean over emb taken out) and
//                   divided by the final residual's sqrt(var + eps); RMSNorm:
//                   divided by its sqrt(mean(x²) + eps) — times the norm's
//                   weight and out_head's row of the target token
//                   (TransformerLens's apply_ln_to_stack). The components of
//                   the final residual (embeddings, every head, out_proj's
//                   bias, every feed-forward) add up to the target's logit
//                   minus the final norm's shift · that row;
//   head circuits   a head's QK and OV circuits (circuits.mjs) through the
//                   embedding and unembedding over a chosen list of tokens
//                   (n × n, not vocab × vocab), with the norms' scales folded
//                   into the matrices as TransformerLens's fold_ln does:
//                   QK = (E_S ⊙ w₁) W_QK (E_S ⊙ w₁)ᵀ, OV = (E_S ⊙ w₁) W_OV
//                   ((U_S ⊙ w_f))ᵀ, w₁ the block's norm1 weight, w_f the
//                   final norm's, E_S and U_S the tokens' rows of tok_emb and
//                   out_head; for GPT models the same QK over the first n
//                   position embeddings. The norms' centring and
//                   normalisation, biases and RoPE are left out.

import { checkIndices, checkInteger, checkOptionNames } from '../api/validate.mjs';

/** @import { Engine } from './module.mjs' */

/** crossEntropy's ignore index: a target with this value has no attribution. */
const IGNORE = -100;

/**
 * The parts the lab reads, by the book's names (gpt.mjs, llama.mjs).
 * @typedef {{ vocabSize: number, embDim: number, nLayers: number, nHeads: number, training: boolean,
 *   train(mode?: boolean): unknown, forward: Function, parts(): any, posEmb?: { weight: Float32Array },
 *   tokEmb: { weight: Float32Array }, trfBlocks: Iterable<any> }} LensModel
 */

/**
 * A norm's weight: LayerNorm's scale, RMSNorm's weight.
 * @param {any} norm
 * @returns {Float32Array}
 */
export const normWeight = (norm) => norm.scale ?? norm.weight;

/**
 * @param {unknown} model
 * @returns {LensModel}
 */
export function checkLensModel(model) {
  const m = /** @type {any} */ (model);
  if (!m || typeof m.parts !== 'function' || !m.trfBlocks || !m.tokEmb || typeof m.nLayers !== 'number') {
    throw new TypeError(`model must be a GPTModel or Llama3Model, got ${m?.constructor?.name ?? typeof model}`);
  }
  return m;
}

/**
 * The logit lens of one sequence, and with targets each head's direct
 * logit attribution. Runs in eval mode (the model's mode restored after).
 * @param {LensModel} model
 * @param {unknown} idx  token ids [tokens]
 * @param {unknown} [options]  { targets?: token ids [tokens] (-100: none), positions?: the
 *   token indices whose lens is computed (default all; [] for none: out_head over a 50k vocabulary
 *   is most of the cost) }
 * @returns {{ tokens: Int32Array, probabilities: Float32Array, directLogit: Float32Array | null }}
 *   tokens, probabilities [nLayers + 1, positions] (row 0: the embeddings);
 *   directLogit [nLayers, nHeads, tokens] (0 where the target is -100)
 */
export function logitLens(model, idx, options) {
  const o = /** @type {{ targets?: unknown, positions?: unknown }} */ (checkOptionNames('options',
    /** @type {object | undefined} */ (options), ['targets', 'positions']));
  const ids = checkIndices('idx', idx, model.vocabSize);
  const T = ids.length;
  if (T === 0) throw new RangeError('idx must hold at least one token, got length 0');
  const targets = o.targets === undefined ? null : checkIndices('options.targets', o.targets, model.vocabSize, IGNORE);
  if (targets && targets.length !== T) {
    throw new RangeError(`options.targets must have idx's length ${T}, got length ${targets.length}`);
  }
  const positions = o.positions === undefined ? Int32Array.from(ids.keys()) : checkIndices('options.positions', o.positions, T);
  const n = positions.length;
  const { finalNorm, outHead } = model.parts();
  const [L, H, d, V] = [model.nLayers, model.nHeads, model.embDim, model.vocabSize];
  const wasTraining = model.training;
  model.train(false);
  try {
    const r = model.forward(ids, [1, T], { returnResidual: true, returnHeadOutputs: targets !== null });
    const tokens = new Int32Array((L + 1) * n);
    const probabilities = new Float32Array((L + 1) * n);
    const rows = new Float32Array(n * d);
    if (n > 0) {
      r.residual.forEach((/** @type {Float32Array} */ x, /** @type {number} */ l) => {
        for (let i = 0; i < n; i++) rows.set(x.subarray(positions[i] * d, (positions[i] + 1) * d), i * d);
        const logits = outHead.forward(finalNorm.forward(rows, [1, n, d]), [1, n, d]);
        for (let i = 0; i < n; i++) {
          const row = logits.subarray(i * V, (i + 1) * V);
          let best = 0;
          for (let v = 1; v < V; v++) if (row[v] > row[best]) best = v;
          let z = 0;
          for (let v = 0; v < V; v++) z += Math.exp(row[v] - row[best]);
          tokens[l * n + i] = best;
          probabilities[l * n + i] = 1 / z;
        }
      });
    }
    if (!targets) return { tokens, probabilities, directLogit: null };
    // Per position: out_head's target row times the final norm's weight, its
    // sum (the centring's share), and the final residual's normaliser.
    const w = normWeight(finalNorm);
    const layerNorm = finalNorm.scale !== undefined;
    const U = outHead.weight;
    const final = r.residual[L];
    const wu = new Float64Array(T * d);
    const wuSum = new Float64Array(T);
    const inverse = new Float64Array(T);
    for (let t = 0; t < T; t++) {
      if (targets[t] === IGNORE) continue;
      for (let e = 0; e < d; e++) {
        wu[t * d + e] = w[e] * U[targets[t] * d + e];
        wuSum[t] += wu[t * d + e];
      }
      let mean = 0;
      for (let e = 0; e < d; e++) mean += final[t * d + e];
      mean /= d;
      let sq = 0;
      for (let e = 0; e < d; e++) sq += (final[t * d + e] - (layerNorm ? mean : 0)) ** 2;
      inverse[t] = 1 / Math.sqrt(sq / d + finalNorm.eps);
    }
    const directLogit = new Float32Array(L * H * T);
    r.headOutputs.forEach((/** @type {Float32Array} */ heads, /** @type {number} */ l) => {
      for (let h = 0; h < H; h++) {
        for (let t = 0; t < T; t++) {
          if (targets[t] === IGNORE) continue;
          const at = (h * T + t) * d;
          let dot = 0;
          let sum = 0;
          for (let e = 0; e < d; e++) {
            dot += heads[at + e] * wu[t * d + e];
            sum += heads[at + e];
          }
          directLogit[(l * H + h) * T + t] = (dot - (layerNorm ? (sum / d) * wuSum[t] : 0)) * inverse[t];
        }
      }
    });
    return { tokens, probabilities, directLogit };
  } finally {
    model.train(wasTraining);
  }
}

/**
 * Rows `ids` of a [rows, d] matrix, each times `scale` [d] elementwise.
 * @param {Float32Array} matrix
 * @param {Int32Array | number[]} ids
 * @param {number} d
 * @param {Float32Array} scale
 */
function scaledRows(matrix, ids, d, scale) {
  const out = new Float32Array(ids.length * d);
  for (let i = 0; i < ids.length; i++) for (let e = 0; e < d; e++) out[i * d + e] = matrix[ids[i] * d + e] * scale[e];
  return out;
}

/**
 * [rows, cols] → [cols, rows].
 * @param {Float32Array} a
 * @param {number} rows
 * @param {number} cols
 */
function transpose(a, rows, cols) {
  const t = new Float32Array(a.length);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) t[c * rows + r] = a[r * cols + c];
  return t;
}

/**
 * Head `head` of layer `layer`: its QK and OV circuits over `tokens` (and
 * its QK circuit over the first tokens.length positions for a model with
 * position embeddings), norms' scales folded; engine GEMMs.
 * @param {Pick<Engine, 'linearForward'>} engine
 * @param {LensModel} model
 * @param {unknown} layer
 * @param {unknown} head
 * @param {unknown} tokens
 * @returns {{ qk: Float32Array, ov: Float32Array, qkPositions: Float32Array | null }}
 *   qk [query token, key token], ov [attended token, logit of token], qkPositions [query, key position]
 */
export function headCircuits(engine, model, layer, head, tokens) {
  checkInteger('layer', layer, 0);
  checkInteger('head', head, 0);
  if (/** @type {number} */ (layer) >= model.nLayers) throw new RangeError(`layer must be below nLayers ${model.nLayers}, got ${layer}`);
  if (/** @type {number} */ (head) >= model.nHeads) throw new RangeError(`head must be below nHeads ${model.nHeads}, got ${head}`);
  const ids = checkIndices('tokens', tokens, model.vocabSize);
  const n = ids.length;
  if (n === 0) throw new RangeError('tokens must name at least one token, got length 0');
  const d = model.embDim;
  const block = [...model.trfBlocks][/** @type {number} */ (layer)];
  const { finalNorm, outHead } = model.parts();
  const w1 = normWeight(block.norm1);
  const wQK = transpose(block.att.qkCircuit(head), d, d); // linearForward multiplies by wᵀ
  const wOV = transpose(block.att.ovCircuit(head), d, d);
  /** (rows ⊙ w₁) W_QK (rows ⊙ w₁)ᵀ for `rows` [m, d]. */
  const qkOver = (/** @type {Float32Array} */ a, /** @type {number} */ m) =>
    engine.linearForward(engine.linearForward(a, m, d, d, wQK, null), m, d, m, a, null);
  const A = scaledRows(model.tokEmb.weight, ids, d, w1);
  const qk = qkOver(A, n);
  const ov = engine.linearForward(engine.linearForward(A, n, d, d, wOV, null), n, d, n,
    scaledRows(outHead.weight, ids, d, normWeight(finalNorm)), null);
  const P = model.posEmb?.weight;
  const positions = P ? Math.min(n, P.length / d) : 0;
  const qkPositions = P ? qkOver(scaledRows(P, Int32Array.from({ length: positions }, (_, i) => i), d, w1), positions) : null;
  return { qk, ov, qkPositions };
}
