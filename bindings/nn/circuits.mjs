// Circuit arithmetic of attention heads (Elhage et al. 2021, "A Mathematical
// Framework for Transformer Circuits"), on a module with an out_proj
// (MultiHeadAttention, GroupedQueryAttention), in the row-vector convention
// of the package (x [tokens, dIn], y = x · Wᵀ):
//
//   head h's query and key rows q_h, k_h [headDim, dIn] (its rows of W_query
//   and of its KV head's W_key), value rows v_h, and out_proj columns o_h
//   [dOut, headDim];
//   QK circuit  W_QK = q_hᵀ · k_h [dIn, dIn]: the score of query x_i and
//               key x_j is x_i · W_QK · x_jᵀ (before 1/√d, biases and RoPE
//               left out);
//   OV circuit  W_OV = v_hᵀ · o_hᵀ [dIn, dOut]: what the head writes for a
//               key x_j it attends to fully, x_j · W_OV.
//
// Composition of head a (an earlier module) into head b (a later one):
//   Q: ‖W_OV^a · W_QK^b‖_F, K: ‖W_QK^b · (W_OV^a)ᵀ‖_F, V: ‖W_OV^a · W_OV^b‖_F,
// each over the product of the two matrices' norms (0: independent, 1: the
// whole output feeds that input). Biases are left out, and the norms
// between the modules too unless their scales are given: a norm's weight w
// before a module is folded into its W_query, W_key and W_value columns
// (TransformerLens's fold_ln; the norm's centring and normalisation stay out). Computed without forming the dIn × dIn matrices: the cross
// products of the factors (engine GEMMs: each earlier head's o_a against
// every later head's q, k and v rows at once) and headDim × headDim Gram
// matrices, in double: ‖Aᵀ M B‖_F² = tr(Mᵀ (A Aᵀ) M (B Bᵀ)).

import { describe } from '../api/validate.mjs';

/** @import { Engine } from './module.mjs' */

/**
 * @typedef {{ numHeads: number, headDim: number, dIn: number, outputDim: number, groupSize?: number,
 *   W_query: { weight: Float32Array }, W_key: { weight: Float32Array }, W_value: { weight: Float32Array },
 *   outProj?: { weight: Float32Array } }} CircuitModule
 */

/**
 * The module checked: one with out_proj.
 * @param {string} name
 * @param {unknown} module
 * @returns {CircuitModule}
 */
export function checkCircuitModule(name, module) {
  const m = /** @type {CircuitModule} */ (module);
  if (!m || typeof m !== 'object' || !m.outProj || !m.W_query || !(m.W_query.weight instanceof Float32Array)) {
    throw new TypeError(`${name} must be an attention module with out_proj (MultiHeadAttention, ` +
      `GroupedQueryAttention), got ${describe(module)}`);
  }
  return m;
}

/**
 * Head h's factors: q, k, v [headDim, dIn] row-major and o [dOut, headDim].
 * @param {CircuitModule} m
 * @param {number} h
 */
function factors(m, h) {
  const { headDim: hd, dIn, outputDim: dOut } = m;
  const kv = Math.floor(h / (m.groupSize ?? 1));
  const rows = (/** @type {Float32Array} */ w, /** @type {number} */ head) => w.slice(head * hd * dIn, (head + 1) * hd * dIn);
  const width = m.numHeads * hd;
  const o = new Float32Array(dOut * hd);
  const wo = /** @type {{ weight: Float32Array }} */ (m.outProj).weight;
  for (let r = 0; r < dOut; r++) o.set(wo.subarray(r * width + h * hd, r * width + (h + 1) * hd), r * hd);
  return { q: rows(m.W_query.weight, h), k: rows(m.W_key.weight, kv), v: rows(m.W_value.weight, kv), o };
}

/**
 * The module with `scale` [dIn] (a norm's weight before it) folded into
 * the columns of W_query, W_key and W_value; the module itself without one.
 * @param {CircuitModule} m
 * @param {Float32Array | null} scale
 * @returns {CircuitModule}
 */
export function foldScale(m, scale) {
  if (!scale) return m;
  const fold = (/** @type {{ weight: Float32Array }} */ w) => ({
    weight: w.weight.map((x, i) => x * scale[i % m.dIn]),
  });
  return { groupSize: m.groupSize, numHeads: m.numHeads, headDim: m.headDim, dIn: m.dIn, outputDim: m.outputDim,
    outProj: m.outProj, W_query: fold(m.W_query), W_key: fold(m.W_key), W_value: fold(m.W_value) };
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
 * Head h's QK circuit q_hᵀ · k_h [dIn, dIn] (one engine GEMM).
 * @param {Pick<Engine, 'linearForward'>} engine
 * @param {CircuitModule} m
 * @param {number} h
 * @returns {Float32Array}
 */
export function qkCircuit(engine, m, h) {
  const { q, k } = factors(m, h);
  // y = x · wᵀ with x = q_hᵀ [dIn, hd], w = k_hᵀ [dIn, hd].
  return engine.linearForward(transpose(q, m.headDim, m.dIn), m.dIn, m.headDim, m.dIn, transpose(k, m.headDim, m.dIn), null);
}

/**
 * Head h's OV circuit v_hᵀ · o_hᵀ [dIn, dOut] (one engine GEMM).
 * @param {Pick<Engine, 'linearForward'>} engine
 * @param {CircuitModule} m
 * @param {number} h
 * @returns {Float32Array}
 */
export function ovCircuit(engine, m, h) {
  const { v, o } = factors(m, h);
  return engine.linearForward(transpose(v, m.headDim, m.dIn), m.dIn, m.headDim, m.outputDim, o, null);
}

/**
 * a · bᵀ for a [n, d], b [m, d] in double: [n, m].
 * @param {Float32Array | Float64Array} a
 * @param {Float32Array | Float64Array} b
 * @param {number} n
 * @param {number} mRows
 * @param {number} d
 */
function gram(a, b, n, mRows, d) {
  const g = new Float64Array(n * mRows);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < mRows; j++) {
      let s = 0;
      for (let e = 0; e < d; e++) s += a[i * d + e] * b[j * d + e];
      g[i * mRows + j] = s;
    }
  }
  return g;
}

/**
 * tr(Mᵀ A M B) for M [r, c], A [r, r], B [c, c] (Gram matrices): ‖·‖_F² of a factored product.
 * @param {Float64Array} mat
 * @param {Float64Array} a
 * @param {Float64Array} b
 * @param {number} r
 * @param {number} c
 */
function traceProduct(mat, a, b, r, c) {
  // Σ_ij (A M)_ij (M B)_ij.
  let sum = 0;
  for (let i = 0; i < r; i++) {
    for (let j = 0; j < c; j++) {
      let am = 0;
      let mb = 0;
      for (let k = 0; k < r; k++) am += a[i * r + k] * mat[k * c + j];
      for (let k = 0; k < c; k++) mb += mat[i * c + k] * b[k * c + j];
      sum += am * mb;
    }
  }
  return sum;
}

/**
 * Q-, K- and V-composition scores from every head of `earlier` into every
 * head of `later` ([earlier heads, later heads] row-major each).
 * @param {Pick<Engine, 'linearForward'>} engine
 * @param {CircuitModule} earlier
 * @param {CircuitModule} later
 * @returns {{ q: Float32Array, k: Float32Array, v: Float32Array }}
 */
export function compositionScores(engine, earlier, later) {
  if (earlier.outputDim !== later.dIn) {
    throw new RangeError(`the earlier module's output width ${earlier.outputDim} must be the later module's dIn ${later.dIn}`);
  }
  const [Ha, Hb, ha, hb, d] = [earlier.numHeads, later.numHeads, earlier.headDim, later.headDim, later.dIn];
  // Per head: its factors and the Gram matrices G_v = v vᵀ, G_o = oᵀ o, G_q, G_k.
  const A = Array.from({ length: Ha }, (_, h) => {
    const f = factors(earlier, h);
    const oT = transpose(f.o, earlier.outputDim, ha); // o_aᵀ [ha, d]
    const gv = gram(f.v, f.v, ha, ha, earlier.dIn);
    const go = gram(oT, oT, ha, ha, d);
    return { oT, gv, ov: Math.sqrt(traceProduct(identity(ha), gv, go, ha, ha)) };
  });
  const B = Array.from({ length: Hb }, (_, h) => {
    const f = factors(later, h);
    const oT = transpose(f.o, later.outputDim, hb);
    const [gq, gk, gv, go] = [gram(f.q, f.q, hb, hb, d), gram(f.k, f.k, hb, hb, d), gram(f.v, f.v, hb, hb, d),
      gram(oT, oT, hb, hb, later.outputDim)];
    return {
      ...f, gq, gk, go,
      qk: Math.sqrt(traceProduct(identity(hb), gq, gk, hb, hb)), ov: Math.sqrt(traceProduct(identity(hb), gv, go, hb, hb)),
    };
  });
  const out = { q: new Float32Array(Ha * Hb), k: new Float32Array(Ha * Hb), v: new Float32Array(Ha * Hb) };
  const group = later.groupSize ?? 1;
  for (let a = 0; a < Ha; a++) {
    const { oT, gv, ov } = A[a];
    // Every later query, key and value row against o_a: [rows, ha] (row r of W · o_a).
    const [qO, kO, vO] = [later.W_query, later.W_key, later.W_value].map(({ weight }) =>
      Float64Array.from(engine.linearForward(weight, weight.length / d, d, ha, oT, null)));
    for (let b = 0; b < Hb; b++) {
      const { gq, gk, go, qk, ov: ovB } = B[b];
      const kv = Math.floor(b / group);
      const block = (/** @type {Float64Array} */ m, /** @type {number} */ head) => m.slice(head * hb * ha, (head + 1) * hb * ha);
      // K: W_QK^b (W_OV^a)ᵀ = q_bᵀ (k_b o_a) v_a: tr(Mᵀ G_q M G_v), M = k_b o_a [hb, ha].
      const kScore = Math.sqrt(traceProduct(block(kO, kv), gq, gv, hb, ha));
      // Q: W_OV^a W_QK^b = v_aᵀ (q_b o_a)ᵀ k_b: tr(Mᵀ G_v M G_k), M = (q_b o_a)ᵀ [ha, hb].
      const qScore = Math.sqrt(traceProduct(transpose64(block(qO, b), hb, ha), gv, gk, ha, hb));
      // V: W_OV^a W_OV^b = v_aᵀ (v_b o_a)ᵀ o_bᵀ: tr(Mᵀ G_v M G_o), M = (v_b o_a)ᵀ.
      const vScore = Math.sqrt(traceProduct(transpose64(block(vO, kv), hb, ha), gv, go, ha, hb));
      out.q[a * Hb + b] = ratio(qScore, ov * qk);
      out.k[a * Hb + b] = ratio(kScore, ov * qk);
      out.v[a * Hb + b] = ratio(vScore, ov * ovB);
    }
  }
  return out;
}

/** @param {number} num @param {number} den */
const ratio = (num, den) => (den > 0 ? num / den : 0);

/** @param {number} n */
function identity(n) {
  const m = new Float64Array(n * n);
  for (let i = 0; i < n; i++) m[i * n + i] = 1;
  return m;
}

/**
 * @param {Float64Array} a  [rows, cols]
 * @param {number} rows
 * @param {number} cols
 * @returns {Float64Array} [cols, rows]
 */
function transpose64(a, rows, cols) {
  const t = new Float64Array(a.length);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) t[c * rows + r] = a[r * cols + c];
  return t;
}
