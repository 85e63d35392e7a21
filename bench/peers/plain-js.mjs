// Plain JavaScript: the straightforward loops, one query row at a time
// (scores over the visible keys, max, exp and sum, weighted sum of values),
// in doubles, with one scratch row. No SIMD, no threads, no tricks.
import { Unavailable } from '../lib/unavailable.mjs';

export const name = 'plain JS loops';

export const variants = (shape) => (shape.kind === 'attention' ? ['triple loop'] : []);

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

export async function create({ threads }) {
  if (threads !== 1) throw new Unavailable('single-threaded by construction');
  return {
    label: 'plain JS loops',
    threads: 1,
    prepare(variant, s, { q, k, v }) {
      return { run: () => causalAttentionJs(q, k, v, s.batch, s.heads, s.length, s.headDim) };
    },
  };
}
