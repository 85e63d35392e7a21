// Type-checked with `tsc --noEmit -p tests/types` against the built package
// types (dist/index.d.ts through package.json "exports").
import { init, type AttentionOptions, type CausalAttentionRuntime } from 'causal-attention';

const ca: CausalAttentionRuntime = await init({ build: 'auto', threads: 2 });
const q = new Float32Array(2 * 4 * 6 * 8);
const options: AttentionOptions = {
  batch: 2, heads: 4, queryLength: 6, keyLength: 6, headDim: 8,
  causal: 'bottom-right', maskStrategy: 'renormalize', dropout: 0.1, training: true, seed: 7n,
};
const { output, weights } = ca.attention(q, q, q, { ...options, returnWeights: true });
const sum: number = output[0] + weights[0]; // weights is not optional here
const plain = ca.attention(q, q, q, options);
const maybe: Float32Array | undefined = plain.weights;
const label: 'single' | 'threads' = ca.build;
ca.manualSeed(123).dispose();

// @ts-expect-error q must be a Float32Array
ca.attention(new Float64Array(4), q, q, options);
// @ts-expect-error causal takes no other strings
ca.attention(q, q, q, { ...options, causal: 'top-right' });
// @ts-expect-error headDim is required
ca.attention(q, q, q, { batch: 1, heads: 1, queryLength: 1 });
// @ts-expect-error unknown build
void init({ build: 'gpu' });

export { sum, maybe, label };
