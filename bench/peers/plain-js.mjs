// Plain JavaScript: the straightforward loops, one query row at a time
// (scores over the visible keys, max, exp and sum, weighted sum of values),
// in doubles, with one scratch row. No SIMD, no threads, no tricks.
import { sweepCaches } from '../lib/memory.mjs';
import { Unavailable } from '../lib/unavailable.mjs';

export const name = 'plain JS loops';

export function variants(shape) {
  if (shape.kind === 'decode') return ['loops over the cache'];
  return shape.kind === 'attention' ? ['triple loop'] : [];
}

export function causalAttentionJs(q, k, v, B, H, T, D) {
  const out = new Float32Array(B * H * T * D);
  const scores = new Float64Array(T);
  const scale = 1 / Math.sqrt(D);
  for (let bh = 0; bh < B * H; ++bh) {
    const base = bh * T * D;
    for (let i = 0; i < T; ++i) {
      const qi = base + i * D;
      let max = -Infinity;
      for (let j = 0; j <= i; ++j) {
        const kj = base + j * D;
        let dot = 0;
        for (let d = 0; d < D; ++d) dot += q[qi + d] * k[kj + d];
        scores[j] = dot * scale;
        if (scores[j] > max) max = scores[j];
      }
      let sum = 0;
      for (let j = 0; j <= i; ++j) {
        scores[j] = Math.exp(scores[j] - max);
        sum += scores[j];
      }
      for (let d = 0; d < D; ++d) {
        let acc = 0;
        for (let j = 0; j <= i; ++j) acc += scores[j] * v[base + j * D + d];
        out[qi + d] = acc / sum;
      }
    }
  }
  return out;
}

/**
 * One decode step: q [B, H, 1, D] against k, v [B, Hkv, L, D]; query head h
 * reads KV head ⌊h / (H / Hkv)⌋. Scores, max, exp and sum, weighted sum,
 * in doubles, written to `out` (a Float64Array keeps them unrounded).
 * @param {Float32Array | Float64Array} [out]
 */
export function decodeStepJs(q, k, v, B, H, Hkv, L, D, out = new Float32Array(B * H * D)) {
  const scores = new Float64Array(L);
  const acc = new Float64Array(D);
  const scale = 1 / Math.sqrt(D);
  for (let b = 0; b < B; ++b) {
    for (let h = 0; h < H; ++h) {
      const qi = (b * H + h) * D;
      const base = (b * Hkv + Math.floor(h / (H / Hkv))) * L * D;
      let max = -Infinity;
      for (let j = 0; j < L; ++j) {
        let dot = 0;
        for (let d = 0; d < D; ++d) dot += q[qi + d] * k[base + j * D + d];
        scores[j] = dot * scale;
        if (scores[j] > max) max = scores[j];
      }
      let sum = 0;
      acc.fill(0);
      for (let j = 0; j < L; ++j) {
        const p = Math.exp(scores[j] - max);
        sum += p;
        for (let d = 0; d < D; ++d) acc[d] += p * v[base + j * D + d];
      }
      for (let d = 0; d < D; ++d) out[qi + d] = acc[d] / sum;
    }
  }
  return out;
}

export async function create({ threads }) {
  if (threads !== 1) throw new Unavailable('single-threaded by construction');
  return {
    label: 'plain JS loops',
    threads: 1,
    prepare(variant, s, { q, k, v }) {
      if (s.kind === 'decode') {
        return {
          run: () => decodeStepJs(q, k, v, s.batch, s.heads, s.kvHeads, s.cacheLength, s.headDim),
          before: sweepCaches,
        };
      }
      return { run: () => causalAttentionJs(q, k, v, s.batch, s.heads, s.length, s.headDim) };
    },
  };
}
