// The ONNX Attention operator's reference semantics (onnx/onnx
// onnx/reference/ops/op_attention.py, opsets 23-25) ported to plain JS in
// double precision, computed the way the spec states it: an additive bias
// [.., Tq, Tk] built from the mask (right-padded to the total key length),
// the causal and window frontiers (offset by past_key's length, or per batch
// item by nonpad_kv_seqlen[b] − Tq), the padding of nonpad_kv_seqlen; then
// Q·Kᵀ·scale, softcap, + bias, softmax, a row whose bias is all −∞ zeroed.
// Written from the spec, independently of js-reference.mjs and the C++.

/**
 * @typedef {{ data: ArrayLike<number>, shape: number[] }} Tensor
 * @typedef {object} OnnxAttentionInputs
 * @property {Tensor} Q [B, Hq, Sq, D] or 3-D [B, Sq, Hq·D]
 * @property {Tensor} K
 * @property {Tensor} V
 * @property {Tensor & { bool?: boolean }} [attn_mask]
 * @property {Tensor} [past_key] [B, Hkv, P, D]
 * @property {Tensor} [past_value]
 * @property {ArrayLike<number>} [nonpad_kv_seqlen] [B]
 */

/** A 3-D [B, S, H·D] tensor as [B, H, S, D] data. */
function toHeads(t, heads) {
  const [B, S, HD] = t.shape;
  const D = HD / heads;
  const out = new Float64Array(t.data.length);
  for (let b = 0; b < B; b++) {
    for (let s = 0; s < S; s++) {
      for (let h = 0; h < heads; h++) {
        for (let d = 0; d < D; d++) out[((b * heads + h) * S + s) * D + d] = t.data[((b * S + s) * heads + h) * D + d];
      }
    }
  }
  return { data: out, shape: [B, heads, S, D] };
}

/** Concatenates [B, H, P, D] and [B, H, S, D] along the sequence. */
function concatSeq(a, b) {
  const [B, H, P, D] = a.shape;
  const S = b.shape[2];
  const out = new Float64Array(B * H * (P + S) * D);
  for (let bh = 0; bh < B * H; bh++) {
    for (let t = 0; t < P; t++) for (let d = 0; d < D; d++) out[(bh * (P + S) + t) * D + d] = a.data[(bh * P + t) * D + d];
    for (let t = 0; t < S; t++) for (let d = 0; d < D; d++) out[(bh * (P + S) + P + t) * D + d] = b.data[(bh * S + t) * D + d];
  }
  return { data: out, shape: [B, H, P + S, D] };
}

/**
 * Runs the reference: { Y, present_key, present_value, qk_matmul_output }
 * (Float64Arrays with their shapes; qk_matmul_output [B, Hq, Sq, T] by
 * qk_matmul_output_mode: 0 the scaled Q·Kᵀ (softcapped when softcap is set,
 * as the reference reassigns it), 1 after softcap, 2 with the bias, 3 the
 * guarded softmax).
 * @param {OnnxAttentionInputs} x
 * @param {Record<string, number>} attrs the node's attributes
 */
export function onnxAttention(x, attrs) {
  const rank3 = x.Q.shape.length === 3;
  let { Q, K, V } = x;
  if (rank3) {
    Q = toHeads(Q, attrs.q_num_heads);
    K = toHeads(K, attrs.kv_num_heads);
    V = toHeads(V, attrs.kv_num_heads);
  }
  const [B, Hq, Sq, D] = Q.shape;
  const scale = attrs.scale ?? 1 / Math.sqrt(D);
  const root = Math.sqrt(scale); // the spec scales Q and K by √scale each
  const past = x.past_key ? x.past_key.shape[2] : 0;
  if (x.past_key) {
    K = concatSeq(x.past_key, K);
    V = concatSeq(/** @type {Tensor} */ (x.past_value), V);
  }
  const [, Hkv, T] = K.shape;
  const Dv = V.shape[3];
  const nonpad = x.nonpad_kv_seqlen;
  const causal = !!attrs.is_causal;
  const left = attrs.left_window_size ?? -1, right = attrs.right_window_size ?? -1;
  const softcap = attrs.softcap ?? 0;
  const mode = attrs.qk_matmul_output_mode ?? 0;
  // The frontier's offset for batch item b: past_key's length (internal
  // cache), nonpad_kv_seqlen[b] − Sq (external cache), else 0.
  const offset = (b) => (x.past_key ? past : nonpad ? nonpad[b] - Sq : 0);
  const m = x.attn_mask;
  const mdims = m ? [...Array(4 - m.shape.length).fill(1), ...m.shape] : [];
  // The mask's value at (b, h, i, j): right-aligned broadcast; a key past the
  // mask's last axis is padding (False, or −∞).
  const maskBias = (b, h, i, j) => {
    if (!m) return 0;
    if (j >= mdims[3]) return -Infinity;
    const idx = [b, h, i, j].map((n, a) => (mdims[a] === 1 ? 0 : n));
    const v = m.data[((idx[0] * mdims[1] + idx[1]) * mdims[2] + idx[2]) * mdims[3] + idx[3]];
    if (m.bool) return v ? 0 : -Infinity;
    return v;
  };
  const bias = (b, h, i, j) => {
    let s = maskBias(b, h, i, j);
    if (causal && !(j <= i + offset(b))) s += -Infinity;
    if (left >= 0 || right >= 0) {
      const diff = i + offset(b) - j;
      if ((left >= 0 && diff > left) || (right >= 0 && -diff > right)) s += -Infinity;
    }
    if (nonpad && !(j < nonpad[b])) s += -Infinity;
    return s;
  };
  const Y = new Float64Array(B * Hq * Sq * Dv);
  const qk = new Float64Array(B * Hq * Sq * T);
  for (let b = 0; b < B; b++) {
    for (let h = 0; h < Hq; h++) {
      // Interleaved repeat of the KV heads: query head h reads h / (Hq / Hkv).
      const kh = Hkv === Hq ? h : Math.floor(h / (Hq / Hkv));
      for (let i = 0; i < Sq; i++) {
        const row = ((b * Hq + h) * Sq + i);
        const raw = new Float64Array(T), capped = new Float64Array(T), biased = new Float64Array(T);
        let maxBias = -Infinity;
        for (let j = 0; j < T; j++) {
          let dot = 0;
          for (let d = 0; d < D; d++) {
            dot += (Q.data[row * D + d] * root) * (K.data[((b * Hkv + kh) * T + j) * D + d] * root);
          }
          raw[j] = dot;
          capped[j] = softcap > 0 ? softcap * Math.tanh(dot / softcap) : dot;
          const bj = bias(b, h, i, j);
          maxBias = Math.max(maxBias, bj);
          biased[j] = capped[j] + bj;
        }
        // The softmax; a row of −∞ (or a row whose bias is all −∞) is zero.
        let mx = -Infinity;
        for (let j = 0; j < T; j++) mx = Math.max(mx, biased[j]);
        const p = new Float64Array(T);
        if (maxBias !== -Infinity && mx !== -Infinity) {
          let sum = 0;
          for (let j = 0; j < T; j++) sum += (p[j] = Math.exp(biased[j] - mx));
          for (let j = 0; j < T; j++) p[j] /= sum;
        }
        const exposed = mode === 3 ? p : mode === 2 ? biased : softcap > 0 ? capped : raw;
        qk.set(exposed, row * T);
        for (let c = 0; c < Dv; c++) {
          let acc = 0;
          for (let j = 0; j < T; j++) if (p[j] !== 0) acc += p[j] * V.data[((b * Hkv + kh) * T + j) * Dv + c];
          Y[row * Dv + c] = acc;
        }
      }
    }
  }
  let out = { data: Y, shape: [B, Hq, Sq, Dv] };
  if (rank3) {
    const t = new Float64Array(Y.length);
    for (let b = 0; b < B; b++) {
      for (let h = 0; h < Hq; h++) {
        for (let i = 0; i < Sq; i++) {
          for (let c = 0; c < Dv; c++) t[((b * Sq + i) * Hq + h) * Dv + c] = Y[((b * Hq + h) * Sq + i) * Dv + c];
        }
      }
    }
    out = { data: t, shape: [B, Sq, Hq * Dv] };
  }
  return { Y: out, present_key: K, present_value: V, qk_matmul_output: { data: qk, shape: [B, Hq, Sq, T] } };
}
