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
const gemm: 'relaxed-simd' | 'simd128' = ca.gemmKernel;
void init({ build: 'single', gemmKernel: 'simd128' });
// @ts-expect-error gemmKernel is 'auto' or 'simd128'
void init({ gemmKernel: 'relaxed-simd' });
ca.manualSeed(123);
const x: Float32Array = ca.rand([2, 6, 3]);
const layer = new ca.CausalAttention(3, 2, 6, 0.0);
const y: Float32Array = layer.eval().forward(x, [2, 6, 3]);
const full = new ca.MultiHeadAttention(3, 2, 6, 0.0, 2).forward(x, [2, 6, 3], { returnWeights: true });
const w: Float32Array = full.weights; // not optional with returnWeights: true
const scores: Float32Array = layer.forward(x, [2, 6, 3], { returnScores: true }).scores;
const either: Float32Array | { output: Float32Array } = layer.forward(x, [2, 6, 3], { returnWeights: Math.random() > 0.5 });
// @ts-expect-error without returnWeights the result is the output array itself
layer.forward(x, [2, 6, 3]).weights;
const wq: Float32Array = layer.W_query.weight;
const heads: number = new ca.MultiHeadAttentionWrapper(3, 2, 6, 0.0, 2).heads.length;
layer.loadStateDict({ 'W_query.weight': [[1, 2, 3], [4, 5, 6]] });
// @ts-expect-error forward needs the shape
layer.forward(x);
// @ts-expect-error the wrapper has no outProj
new ca.MultiHeadAttentionWrapper(3, 2, 6, 0.0, 2).outProj;
// Training.
const fw = ca.attention(q, q, q, { ...options, returnLogSumExp: true });
const lse: Float32Array | undefined = fw.logSumExp;
const drawn: bigint | undefined = fw.seed;
const { gradQ } = ca.attentionBackward(q, q, q, q, fw.output, fw.logSumExp!, { ...options, kvHeads: 2 });
const embedding = new ca.Embedding(10, 4);
const ids: Int32Array = ca.randint(0, 10, [2, 6]);
const e: Float32Array = embedding.forward(ids, [2, 6]);
const gx: Float32Array = layer.train().backward(layer.forward(x, [2, 6, 3]));
const g: Float32Array | null = layer.gradients()['W_query.weight'];
const optimizer = new ca.optim.AdamW([embedding, layer], { lr: 1e-2, betas: [0.9, 0.95] });
optimizer.zeroGrad();
optimizer.step();
const { loss } = ca.crossEntropy(e, [1, 2, 3, 4, 5, 6, 7, 8], { ignoreIndex: 0 });
new ca.optim.SGD(layer.parameters(), { lr: 0.1, momentum: 0.9 }).step();
const noGrad: null = embedding.backward(e);
// @ts-expect-error attentionBackward needs the log-sum-exp
ca.attentionBackward(q, q, q, q, fw.output);
// @ts-expect-error betas is a pair
new ca.optim.AdamW(layer, { betas: 0.9 });
// Generation: GQA, a resident KV cache, a module's cache.
const gqa = ca.attention(q, q.subarray(0, 2 * 2 * 6 * 8), q.subarray(0, 2 * 2 * 6 * 8), { ...options, kvHeads: 2 });
const cache = ca.createKVCache({ batch: 2, kvHeads: 2, headDim: 8, capacity: 64 });
cache.append(q.subarray(0, 2 * 2 * 8), q.subarray(0, 2 * 2 * 8)).truncate(cache.length).reset();
const step = cache.attention(q.subarray(0, 2 * 4 * 8), { heads: 4, queryLength: 1, returnWeights: true });
const stepWeights: Float32Array = step.weights;
// @ts-expect-error the cache fixes the head size
cache.attention(q, { heads: 4, queryLength: 1, headDim: 8 });
// Sequences of their own lengths: some appended to, forked, cut.
cache.append(q.subarray(0, 2 * 8), q.subarray(0, 2 * 8), { sequences: [1] }).copySequence(1, 0, { length: 1 })
  .truncate(0, { sequences: Int32Array.of(0) });
const lengths: Int32Array = cache.lengths;
const windowed = ca.createKVCache({ batch: 1, kvHeads: 2, headDim: 8, capacity: 16, window: 8 });
const W: number | null = windowed.window;
// @ts-expect-error sequences are indices, not one index
cache.append(q, q, { sequences: 1 });
cache[Symbol.dispose]();
const small = ca.createKVCache({ batch: 1, kvHeads: 2, headDim: 8, capacity: 64, dtype: 'int8' });
const smallBytes: number = small.bytes;
const smallDtype: 'float32' | 'bfloat16' | 'int8' = small.dtype;
// @ts-expect-error float16 is not a cache dtype
ca.createKVCache({ batch: 1, kvHeads: 2, headDim: 8, capacity: 64, dtype: 'float16' });
const llama = new ca.GroupedQueryAttention(8, 8, 4, 2, { contextLength: 64, ropeBase: 500000 });
const cached: Float32Array = llama.forward(new Float32Array(8), [1, 8], { useCache: true, cacheDtype: 'bfloat16' });
const held: number = llama.resetCache().cacheLength + llama.numKVGroups;
llama.dispose();
const llama32 = new ca.GroupedQueryAttention(16, 16, 2, 1, {
  ropeBase: 500000, freqConfig: { factor: 32, lowFreqFactor: 1, highFreqFactor: 4, originalContextLength: 8192 },
});
const factor: number | undefined = llama32.freqConfig?.factor;
// @ts-expect-error freqConfig needs all four fields
void new ca.GroupedQueryAttention(16, 16, 2, 1, { freqConfig: { factor: 32 } });
const gqaGrad: Float32Array = llama.train().backward(llama.forward(new Float32Array(16), [2, 8]));
ca.dispose();

// @ts-expect-error q must be a Float32Array
ca.attention(new Float64Array(4), q, q, options);
// @ts-expect-error causal takes no other strings
ca.attention(q, q, q, { ...options, causal: 'top-right' });
// @ts-expect-error headDim is required
ca.attention(q, q, q, { batch: 1, heads: 1, queryLength: 1 });
// @ts-expect-error unknown build
void init({ build: 'gpu' });

// Worker mode: the same API, promises.
const remote = await init({ worker: true, timeout: 10000 });
const remoteBuild: 'single' | 'threads' = remote.build; // a snapshot, synchronous
const remoteLayer = await new remote.CausalAttention(3, 2, 6, 0.0);
const remoteOut: Float32Array = await remoteLayer.forward(x, [2, 6, 3]);
const remoteWeights: Float32Array = (await remoteLayer.forward(x, [2, 6, 3], { returnWeights: true })).weights;
const sameLayer: typeof remoteLayer = await remoteLayer.eval();
const training: boolean = remoteLayer.training;
const weight: Float32Array = await remoteLayer.W_query.weight;
const projected: Float32Array = await remoteLayer.W_query.forward(x, [2, 6, 3]);
const remoteResult = await remote.attention(q, q, q, { ...options, returnWeights: true });
const remoteSum: number = remoteResult.output[0] + remoteResult.weights[0];
await remote.manualSeed(1);
// @ts-expect-error a handle's properties cannot be assigned
remoteLayer.dropout = 0.5;
// @ts-expect-error calls return promises
const notSync: Float32Array = remoteLayer.forward(x, [2, 6, 3]);
// Training in worker mode: the same calls, awaited.
const remoteFw = await remote.attention(q, q, q, { ...options, returnLogSumExp: true });
const remoteGrads = await remote.attentionBackward(q, q, q, q, remoteFw.output, remoteFw.logSumExp!, options);
const remoteGradQ: Float32Array = remoteGrads.gradQ;

await remote.dispose();

// The visibility options: padding, windows, masks, softcap, sinks, layout; gradSinks; the modules'.
const modern = ca.attention(q, q, q, {
  ...options, layout: 'bshd', queryOffset: -1, keyLengths: [6, 4], window: { left: 2 }, mask: new Uint8Array(36),
  maskShape: [6, 6], softcap: 50, sinks: new Float32Array(4), returnLogSumExp: true,
});
const sinkGrads = ca.attentionBackward(q, q, q, q, modern.output, modern.logSumExp!, { ...options, sinks: new Float32Array(4) });
const gradSinks: Float32Array | undefined = sinkGrads.gradSinks;
// @ts-expect-error layout is 'bhsd' or 'bshd'
ca.attention(q, q, q, { ...options, layout: 'bsd' });
// @ts-expect-error a KV cache fixes its key lengths
cache.attention(q.subarray(0, 32), { heads: 4, queryLength: 1, keyLengths: [1, 1] });
const oss = new ca.GroupedQueryAttention(8, 8, 2, 1, { slidingWindow: 128, softcap: 50, sinks: true });
const ossSinks: Float32Array | null = oss.sinks;
const paddedOut = oss.forward(x, [2, 6, 8], { keyLengths: [6, 3], mask: new Float32Array(6), maskShape: [6] });
const ablated: Float32Array = oss.forward(x, [2, 6, 8], { headMask: new Float32Array([0, 1]) });
// @ts-expect-error a head mask is a Float32Array
oss.forward(x, [2, 6, 8], { headMask: [0, 1] });

// The book's models, pretrained weights, hooks and circuits.
const gpt = new ca.GPTModel({ vocab_size: 50, context_length: 8, emb_dim: 16, n_heads: 2, n_layers: 2 });
const gptLogits: Float32Array = gpt.forward([1, 2, 3], [1, 3]);
const gptWeights: Float32Array[] = gpt.forward([1, 2, 3], [1, 3], { returnWeights: true }).weights;
const gptHeads: Float32Array[] | undefined = gpt.forward([1, 2], [1, 2], { returnHeadOutputs: true }).headOutputs;
const generated: Int32Array = gpt.generate([1, 2], { maxNewTokens: 3, temperature: 0.8, topK: 5, seed: 1 });
const generatedRows: Int32Array[] = gpt.generate([[1, 2], [3, 4]], { maxNewTokens: 2 });
const attributionGrads: Float32Array[] = gpt.backward(gptLogits, { returnAttentionOutputGrads: true }).attentionOutputGrads;
const llama3 = new ca.Llama3Model({
  vocab_size: 50, context_length: 64, emb_dim: 16, n_heads: 4, n_layers: 1, hidden_dim: 32, n_kv_groups: 2,
  rope_base: 500000, rope_freq: { factor: 32, low_freq_factor: 1, high_freq_factor: 4, original_context_length: 8 },
});
const llamaParams: number = llama3.numParameters();
const pretrained = ca.loadPretrained({ config: '{}', safetensors: new Uint8Array(8) });
const tensors = ca.readSafetensors(new Uint8Array(8)).tensors;
const composition: Float32Array = ca.compositionScores(gpt.trfBlocks[0].att, gpt.trfBlocks[1].att).k;
const qkCircuit: Float32Array = gpt.trfBlocks[0].att.qkCircuit(0);
const folded: Float32Array = ca.compositionScores(gpt.trfBlocks[0].att, gpt.trfBlocks[1].att,
  { earlierScale: new Float32Array(16), laterScale: new Float32Array(16) }).v;
const lens = ca.logitLens(gpt, [1, 2, 3], { targets: [2, 3, -100] });
const lensTokens: Int32Array = lens.tokens;
const dla: Float32Array | null = lens.directLogit;
const circuits = ca.headCircuits(llama3, 0, 1, [1, 2]);
const ovTokens: Float32Array = circuits.ov;
const qkPositions: Float32Array | null = circuits.qkPositions;
// @ts-expect-error the options name targets
void ca.logitLens(gpt, [1], { target: [1] });
// @ts-expect-error the book's config keys are snake_case
void new ca.GPTModel({ vocabSize: 50, context_length: 8, emb_dim: 16, n_heads: 2, n_layers: 2 });
// Weights stored as int8 / bfloat16 for inference.
const int8Model: typeof gpt = gpt.quantize('int8');
const storedDtype: 'float32' | 'bfloat16' | 'int8' = new ca.Linear(4, 2, true, { weightsDtype: 'bfloat16' }).weightsDtype;
const storedBytes: number = int8Model.outHead.weightsBytes;
void ca.loadPretrained({ config: '{}', safetensors: new Uint8Array(8), weightsDtype: 'int8' });
int8Model.dispose();
// @ts-expect-error weightsDtype is 'float32', 'bfloat16' or 'int8'
gpt.quantize('int4');

export {
  int8Model, storedDtype, storedBytes,
  gptLogits, gptWeights, gptHeads, generated, generatedRows, attributionGrads, llamaParams, pretrained, tensors, composition, qkCircuit, folded, lensTokens, dla, ovTokens, qkPositions,
  sum, maybe, label, gemm, y, w, wq, heads, scores, either, remoteBuild, remoteOut, remoteWeights, sameLayer, training,
  weight, projected, remoteSum, notSync, gqa, stepWeights, cached, held, factor, lse, drawn, gradQ, gx, g, loss, noGrad, remoteGradQ, gqaGrad,
  gradSinks, ossSinks, paddedOut, ablated,
};
