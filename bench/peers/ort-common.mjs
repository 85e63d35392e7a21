// What onnxruntime-web and onnxruntime-node share: the models (built in
// bench/lib/onnx.mjs, same bytes for both) and the run loop.
import {
  ATTENTION_MODELS, DECODE_MODELS, MODULE_VARIANTS, mhaModuleModel, randomModuleWeights,
} from '../lib/onnx.mjs';
import { sweepCaches } from '../lib/sweep.mjs';
import { decodeParts, makeUniform, takeRows } from '../lib/shapes.mjs';

/**
 * The many-sequence rows (bench/lib/shapes.mjs DECODE_SEQUENCE_SHAPES) by variant:
 * the graph's variant, and the shape and inputs it is fed. A ragged batch:
 * one graph with seqlens_k per sequence (without the present K/V output, to
 * keep the bench's time). A window: local_window_size over the whole past,
 * or the caller keeping only the window (the past's last W − 1 tokens and
 * no local_window_size: what a window cache holds).
 */
const SEQUENCE_VARIANTS = {
  ragged: {
    GroupQueryAttention: (shape, inputs) => ({ shape, inputs }),
  },
  window: {
    'local_window_size over the whole past': (shape, inputs) => ({ shape, inputs }),
    'the last W − 1 tokens as past': (shape, inputs) => {
      const { batch, kvHeads, headDim, cacheLength: L, window: W } = shape;
      const rows = (a) => takeRows(a, batch * kvHeads, L, headDim, L - W, L);
      return { shape: { ...shape, cacheLength: W, window: undefined }, inputs: { ...inputs, k: rows(inputs.k), v: rows(inputs.v) } };
    },
  },
};

export function ortVariants(shape) {
  if (shape.kind === 'decode') return Object.keys(SEQUENCE_VARIANTS[shape.row] ?? DECODE_MODELS);
  return shape.kind === 'mha' ? MODULE_VARIANTS : Object.keys(ATTENTION_MODELS);
}

/** Module weights: fixed seed, same for every run of the bench. */
export const moduleWeights = (shape) => randomModuleWeights(shape, makeUniform(777));

export function modelBytes(variant, shape) {
  if (shape.kind === 'decode') return DECODE_MODELS[variant](shape);
  if (shape.kind === 'mha') return mhaModuleModel(shape, moduleWeights(shape), variant);
  return ATTENTION_MODELS[variant](shape);
}

/**
 * A session's run: wraps the inputs as tensors (no copy in JS; the backend
 * copies them in on run) and returns the output's data, a JS-owned
 * Float32Array (both backends copy it out of their own memory).
 */
export async function prepareSession(ort, variant, shape, inputs, sessionOptions) {
  const sequences = SEQUENCE_VARIANTS[shape.row]?.[variant];
  if (sequences) {
    ({ shape, inputs } = sequences(shape, inputs));
    variant = 'GroupQueryAttention';
  }
  const session = await ort.InferenceSession.create(modelBytes(variant, shape), sessionOptions);
  const feedsOf = graphInputs(shape, inputs);
  return {
    async run() {
      const feeds = {};
      for (const [n, [data, d]] of Object.entries(feedsOf)) feeds[n] = new ort.Tensor('float32', data, d);
      const result = await session.run(feeds);
      return result.out.data;
    },
    release: () => session.release(),
    // A decode step starts with cold caches, as ours does (bench/lib/decode.mjs).
    before: shape.kind === 'decode' ? sweepCaches : undefined,
  };
}

/** The graph's inputs by name: [data, dims]. */
function graphInputs(shape, inputs) {
  if (shape.kind === 'mha') return { x: [inputs.x, [shape.batch, shape.length, shape.dIn]] };
  if (shape.kind === 'decode') {
    // [B, H, 1, D] and [B, Hkv, 1, D] are [B, 1, H·D] and [B, 1, Hkv·D] in memory.
    const { batch, heads, kvHeads, headDim, cacheLength } = shape;
    const { past, last } = decodeParts(shape, inputs);
    const pastDims = [batch, kvHeads, cacheLength - 1, headDim];
    return {
      query: [inputs.q, [batch, 1, heads * headDim]],
      key: [last.k, [batch, 1, kvHeads * headDim]],
      value: [last.v, [batch, 1, kvHeads * headDim]],
      past_key: [past.k, pastDims],
      past_value: [past.v, pastDims],
    };
  }
  const dims = [shape.batch, shape.heads, shape.length, shape.headDim];
  return Object.fromEntries(['q', 'k', 'v'].map((n) => [n, [inputs[n], dims]]));
}

/**
 * Initialises the backend (compiles and instantiates onnxruntime's wasm, or
 * loads the native library) with a toy session, so that a case's memory and
 * time windows hold the session and runs only.
 */
export async function initBackend(ort, sessionOptions) {
  const shape = { kind: 'attention', batch: 1, heads: 1, length: 2, headDim: 2 };
  const s = await prepareSession(ort, 'MatMul graph', shape, {
    q: new Float32Array(4), k: new Float32Array(4), v: new Float32Array(4),
  }, sessionOptions);
  await s.run();
  await s.release();
}

/**
 * onnxruntime-web's wasm backend with `threads` threads, its .wasm and glue
 * at `wasmPaths` (a URL ending in /): Node and the browser bench.
 */
export async function createOrtWeb(ort, threads, wasmPaths) {
  ort.env.wasm.numThreads = threads;
  ort.env.wasm.simd = true;
  ort.env.wasm.proxy = false;
  ort.env.wasm.wasmPaths = wasmPaths;
  ort.env.logLevel = 'error';
  const sessionOptions = { executionProviders: ['wasm'], graphOptimizationLevel: 'all' };
  await initBackend(ort, sessionOptions);
  return {
    label: 'onnxruntime-web',
    threads,
    prepare: (variant, shape, inputs) => prepareSession(ort, variant, shape, inputs, sessionOptions),
  };
}
