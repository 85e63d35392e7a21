// What onnxruntime-web and onnxruntime-node share: the models (built in
// bench/lib/onnx.mjs, same bytes for both) and the run loop.
import {
  ATTENTION_MODELS, MODULE_VARIANTS, mhaModuleModel, randomModuleWeights,
} from '../lib/onnx.mjs';
import { makeUniform } from '../lib/shapes.mjs';

export const ortVariants = (shape) => (shape.kind === 'mha' ? MODULE_VARIANTS : Object.keys(ATTENTION_MODELS));

/** Module weights: fixed seed, same for every run of the bench. */
export const moduleWeights = (shape) => randomModuleWeights(shape, makeUniform(777));

export function modelBytes(variant, shape) {
  if (shape.kind === 'mha') return mhaModuleModel(shape, moduleWeights(shape), variant);
  return ATTENTION_MODELS[variant](shape);
}

/**
 * A session's run: wraps the inputs as tensors (no copy in JS; the backend
 * copies them in on run) and returns the output's data, a JS-owned
 * Float32Array (both backends copy it out of their own memory).
 */
export async function prepareSession(ort, variant, shape, inputs, sessionOptions) {
  const session = await ort.InferenceSession.create(modelBytes(variant, shape), sessionOptions);
  const dims = shape.kind === 'mha'
    ? { x: [shape.batch, shape.length, shape.dIn] }
    : Object.fromEntries(['q', 'k', 'v'].map((n) => [n, [shape.batch, shape.heads, shape.length, shape.headDim]]));
  return {
    async run() {
      const feeds = {};
      for (const [n, d] of Object.entries(dims)) feeds[n] = new ort.Tensor('float32', inputs[n], d);
      const result = await session.run(feeds);
      return result.out.data;
    },
    release: () => session.release(),
  };
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
