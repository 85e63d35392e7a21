// node16 resolution, ES module, lib ES2022 only (no DOM, no @types/node).
import { init, type CausalAttentionRuntime, type RemoteRuntime } from 'causal-attention';

const ca: CausalAttentionRuntime = await init({ build: 'single', timeout: 5000 });
const x = new Float32Array(18);
const layer = new ca.CausalAttention(3, 2, 6, 0.0);
const { weights } = layer.forward(x, [6, 3], { returnWeights: true });
const first: number = weights[0]; // weights is not `| undefined`
const remote: RemoteRuntime = await init({ worker: true });
const viaWorker: Float32Array = await (await new remote.CausalAttention(3, 2, 6, 0.0)).forward(x, [6, 3]);
ca[Symbol.dispose]();
// @ts-expect-error headDim is required
ca.attention(x, x, x, { batch: 1, heads: 1, queryLength: 6 });

export { first, viaWorker };
