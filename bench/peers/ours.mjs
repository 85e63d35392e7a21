// causal-attention (this package), imported by name like a user would:
// the single-threaded build, or the pthreads build with n threads.
import { Unavailable } from '../lib/unavailable.mjs';

export const name = 'ours';

export const variants = (shape) => [shape.kind === 'mha' ? 'MultiHeadAttention' : 'attention'];

export async function create({ threads }) {
  const { init } = await import('causal-attention');
  const ca = await init(threads === 1 ? { build: 'single' } : { build: 'threads', threads });
  return {
    label: `ours (${ca.build})`,
    threads: ca.threads,
    prepare(variant, shape, inputs) {
      return shape.kind === 'mha' ? prepareModule(ca, shape, inputs) : prepareAttention(ca, shape, inputs);
    },
    memoryBytes: () => ca.memoryBytes,
    dispose: () => ca.dispose(),
  };
}

function prepareAttention(ca, s, { q, k, v }) {
  // Written into a caller-supplied output (the API's hot-path form); the
  // copies of q, k, v into the wasm heap and of the output out of it are
  // part of every call.
  const out = new Float32Array(q.length);
  const options = {
    batch: s.batch, heads: s.heads, queryLength: s.length, headDim: s.headDim, causal: true, out,
  };
  return { run: () => ca.attention(q, k, v, options).output };
}

function prepareModule(ca, s, { x }) {
  if (typeof ca.MultiHeadAttention !== 'function') {
    throw new Unavailable('ca.MultiHeadAttention is not in this build of the package yet');
  }
  // The book's MultiHeadAttention(d_in, d_out, context_length, dropout, num_heads).
  const mha = new ca.MultiHeadAttention(s.dIn, s.dOut, s.length, 0.0, s.heads);
  mha.eval?.();
  const dims = [s.batch, s.length, s.dIn];
  return {
    run: () => {
      const y = mha.forward(x, dims);
      return y instanceof Float32Array ? y : y.output;
    },
    release: () => mha.dispose?.(),
  };
}
