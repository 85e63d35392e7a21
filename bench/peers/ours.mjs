// causal-attention (this package), imported by name like a user would:
// the single-threaded build, or the pthreads build with n threads.
import { Unavailable } from '../lib/unavailable.mjs';
import { moduleWeights } from './ort-common.mjs';

export const name = 'ours';

export const variants = (shape) => [shape.kind === 'mha' ? 'MultiHeadAttention' : 'attention'];

/**
 * `load` imports the package: by name in Node; the browser bench passes
 * its URL (bench/browser/peers.mjs).
 */
export async function create({ threads }, load = () => import('causal-attention')) {
  const { init } = await load();
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

/** [rows, cols] row-major → [cols, rows]: x·W layout to nn.Linear's [out, in]. */
function transpose(w, rows, cols) {
  const t = new Float32Array(w.length);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) t[c * rows + r] = w[r * cols + c];
  return t;
}

function prepareModule(ca, s, { x }) {
  if (typeof ca.MultiHeadAttention !== 'function') {
    throw new Unavailable('ca.MultiHeadAttention is not in this build of the package yet');
  }
  // The book's MultiHeadAttention(d_in, d_out, context_length, dropout, num_heads),
  // loaded with the onnxruntime graphs' weights (PyTorch layout), so the
  // outputs are compared, not only the times.
  const mha = new ca.MultiHeadAttention(s.dIn, s.dOut, s.length, 0.0, s.heads);
  const w = moduleWeights(s);
  mha.loadStateDict({
    'W_query.weight': transpose(w.wq, s.dIn, s.dOut),
    'W_key.weight': transpose(w.wk, s.dIn, s.dOut),
    'W_value.weight': transpose(w.wv, s.dIn, s.dOut),
    'out_proj.weight': transpose(w.wo, s.dOut, s.dOut),
    'out_proj.bias': w.bo,
  });
  mha.eval();
  const dims = [s.batch, s.length, s.dIn];
  const out = new Float32Array(s.batch * s.length * s.dOut);
  return { run: () => mha.forward(x, dims, { out }) };
}
