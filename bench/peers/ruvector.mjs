// ruvector-attention-wasm. Its attention functions take ONE query vector and
// JS arrays of key and value vectors (scaled_dot_attention(query, keys,
// values, scale); the classes' compute() has the same form) and have no mask
// or causal option. Causal attention is expressible by calling it per query
// with only the visible keys, keys[0..i]: that is what this peer does
// (B·H·T calls). Its .wasm has no SIMD instructions (checked with wasm-dis)
// and no threads.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Unavailable } from '../lib/unavailable.mjs';

export const name = 'ruvector-attention-wasm';

export const variants = (shape) => (shape.kind === 'attention' ? ['scaled_dot_attention per query'] : []);

export async function create({ threads }) {
  if (threads !== 1) throw new Unavailable('no threaded build or thread option');
  const rv = await import('ruvector-attention-wasm');
  const require = createRequire(import.meta.url);
  rv.initSync({ module: readFileSync(require.resolve('ruvector-attention-wasm/ruvector_attention_wasm_bg.wasm')) });
  return {
    label: 'ruvector-attention-wasm',
    threads: 1,
    prepare(variant, s, { q, k, v }) {
      const { batch: B, heads: H, length: T, headDim: D } = s;
      const scale = 1 / Math.sqrt(D);
      return {
        run() {
          const out = new Float32Array(B * H * T * D);
          for (let bh = 0; bh < B * H; ++bh) {
            const base = bh * T * D;
            const rows = (a) => Array.from({ length: T }, (_, j) => a.subarray(base + j * D, base + (j + 1) * D));
            const keys = rows(k);
            const values = rows(v);
            for (let i = 0; i < T; ++i) {
              const at = base + i * D;
              const o = rv.scaled_dot_attention(q.subarray(at, at + D), keys.slice(0, i + 1),
                values.slice(0, i + 1), scale);
              out.set(o, at);
            }
          }
          return out;
        },
      };
    },
  };
}
