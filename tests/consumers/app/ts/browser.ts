// A browser app: bundler resolution, lib ES2022 + DOM, no Node types.
import { init } from 'causal-attention';

const remote = await init({ worker: true });
const layer = await new remote.MultiHeadAttention(3, 4, 6, 0.0, 2);
const { output, weights } = await layer.forward(new Float32Array(18), [6, 3], { returnWeights: true });
document.title = `${remote.build}: ${output[0]} ${weights[0]} ${layer.training}`;
// @ts-expect-error a handle's properties cannot be assigned
layer.training = false;
await remote.dispose();

export {};
