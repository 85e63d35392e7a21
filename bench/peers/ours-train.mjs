// causal-attention training (this package), imported by name: forward with
// the log-sum-exp and attentionBackward; the book's MultiHeadAttention
// module forward (training mode) and backward. Variants:
//   'forward+backward' : both, the gradients returned (checked against ours
//                        single's and the peers')
//   'forward'          : the forward alone (with returnLogSumExp / in
//                        training mode, as a training step runs it)
//   'backward'         : attentionBackward alone (attention shapes; the
//                        module's backward needs a forward before each call)
import { moduleWithPeerWeights } from './ours.mjs';

export const name = 'ours';

export const variants = (shape) => (shape.kind === 'mha-train'
  ? ['forward+backward', 'forward'] : ['forward+backward', 'forward', 'backward']);

export async function create({ threads }) {
  const { init } = await import('causal-attention');
  const ca = await init(threads === 1 ? { build: 'single' } : { build: 'threads', threads });
  return {
    label: `ours (${ca.build})`,
    threads: ca.threads,
    prepare(variant, shape, inputs) {
      return shape.kind === 'mha-train'
        ? prepareModule(ca, variant, shape, inputs) : prepareAttention(ca, variant, shape, inputs);
    },
    memoryBytes: () => ca.memoryBytes,
    dispose: () => ca.dispose(),
  };
}

/** [gradQ, gradK, gradV] as one array (what every peer returns). */
export function concatGradients({ gradQ, gradK, gradV }) {
  const all = new Float32Array(gradQ.length + gradK.length + gradV.length);
  all.set(gradQ, 0);
  all.set(gradK, gradQ.length);
  all.set(gradV, gradQ.length + gradK.length);
  return all;
}

function prepareAttention(ca, variant, s, { q, k, v, gradOutput }) {
  const options = { batch: s.batch, heads: s.heads, queryLength: s.length, headDim: s.headDim, causal: true };
  const out = new Float32Array(q.length);
  const forward = () => ca.attention(q, k, v, { ...options, returnLogSumExp: true, out });
  const backward = (fw) => ca.attentionBackward(gradOutput, q, k, v, fw.output, fw.logSumExp, options);
  if (variant === 'forward') return { run: () => forward().output };
  if (variant === 'backward') {
    const fw = forward();
    return { run: () => concatGradients(backward(fw)) };
  }
  return { run: () => concatGradients(backward(forward())) };
}

function prepareModule(ca, variant, s, { x, gradOutput }) {
  // The forward table's module and weights, in training mode (dropout 0).
  const mha = moduleWithPeerWeights(ca, s);
  const dims = [s.batch, s.length, s.dIn];
  const out = new Float32Array(s.batch * s.length * s.dOut);
  if (variant === 'forward') return { run: () => mha.forward(x, dims, { out }) };
  return {
    run() {
      mha.forward(x, dims, { out });
      mha.zeroGrad();
      return mha.backward(gradOutput);
    },
  };
}
