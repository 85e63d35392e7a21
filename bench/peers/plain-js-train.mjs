// Plain JavaScript training step for attention: the forward's loops (as
// plain-js.mjs) keeping each row's log-sum-exp, then the backward's, one
// query row at a time in doubles: P recomputed from the scores, D = dO·O,
// dV += P·dO, dS = P∘(dO·V - D), dQ += scale·dS·K, dK += scale·dS·Q.
// No SIMD, no threads. Returns [gradQ, gradK, gradV].
import { Unavailable } from '../lib/unavailable.mjs';
import { causalAttentionJs } from './plain-js.mjs';

export const name = 'plain JS loops';

export const variants = (shape) => (shape.kind === 'attention-train' ? ['loops'] : []);

export function causalAttentionBackwardJs(q, k, v, out, dO, B, H, T, D) {
  const n = B * H * T * D;
  const grads = new Float32Array(3 * n);
  const gq = new Float64Array(T * D), gk = new Float64Array(T * D), gv = new Float64Array(T * D);
  const p = new Float64Array(T);
  const scale = 1 / Math.sqrt(D);
  for (let bh = 0; bh < B * H; ++bh) {
    const base = bh * T * D;
    gq.fill(0); gk.fill(0); gv.fill(0);
    for (let i = 0; i < T; ++i) {
      const qi = base + i * D;
      let max = -Infinity;
      for (let j = 0; j <= i; ++j) {
        let dot = 0;
        for (let d = 0; d < D; ++d) dot += q[qi + d] * k[base + j * D + d];
        p[j] = dot * scale;
        if (p[j] > max) max = p[j];
      }
      let sum = 0;
      for (let j = 0; j <= i; ++j) sum += (p[j] = Math.exp(p[j] - max));
      let dd = 0;
      for (let d = 0; d < D; ++d) dd += dO[qi + d] * out[qi + d];
      for (let j = 0; j <= i; ++j) {
        const pj = p[j] / sum;
        const kj = base + j * D;
        let dp = 0;
        for (let d = 0; d < D; ++d) {
          dp += dO[qi + d] * v[kj + d];
          gv[j * D + d] += pj * dO[qi + d];
        }
        const ds = pj * (dp - dd) * scale;
        for (let d = 0; d < D; ++d) {
          gq[i * D + d] += ds * k[kj + d];
          gk[j * D + d] += ds * q[qi + d];
        }
      }
    }
    grads.set(gq, base);
    grads.set(gk, n + base);
    grads.set(gv, 2 * n + base);
  }
  return grads;
}

export async function create({ threads }) {
  if (threads !== 1) throw new Unavailable('single-threaded by construction');
  return {
    label: 'plain JS loops',
    threads: 1,
    prepare(variant, s, { q, k, v, gradOutput }) {
      const { batch: B, heads: H, length: T, headDim: D } = s;
      return {
        run() {
          const out = causalAttentionJs(q, k, v, B, H, T, D);
          return causalAttentionBackwardJs(q, k, v, out, gradOutput, B, H, T, D);
        },
      };
    },
  };
}
