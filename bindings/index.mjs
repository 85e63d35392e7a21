// causal-attention: the package entry. `init()` loads the wasm engine once
// and returns a runtime whose methods take and return Float32Arrays.
//
// Tensors are row-major: q [B, H, Tq, D], k [B, Hkv, Tk, D], v [B, Hkv, Tk,
// Dv] (Hkv = H unless grouped-query attention); output [B, H, Tq, Dv];
// weights [B, H, Tq, Tk].

import { checkStatus } from './codes.mjs';
import { Heap } from './heap.mjs';
import {
  DEFAULT_TIMEOUT_MS, MAX_THREADS, hardwareThreads, loadModule, terminateWorkers, threadsAvailability,
} from './loader.mjs';
import { KVCache, resolveCacheLayout } from './kv-cache.mjs';
import { defineModules } from './modules.mjs';
import { MT19937 } from './random.mjs';
import { initRemote } from './remote.mjs';
import {
  checkBoolean, checkInteger, checkKvGroups, checkOneOf, checkOptionNames, checkSeed, checkShape,
  checkTensor, describe, product, resolveAttentionOutputs,
} from './validate.mjs';

const ATTENTION_OPTIONS = [
  'batch', 'heads', 'kvHeads', 'queryLength', 'keyLength', 'headDim', 'valueDim',
  'causal', 'maskStrategy', 'scale', 'dropout', 'training', 'seed',
  'returnWeights', 'out', 'weightsOut',
];

class Runtime {
  #mod;
  #heap;
  #generator = new MT19937();
  #disposed = false;
  #onDispose;
  #cacheEngine;

  constructor(mod, build, onDispose) {
    this.#mod = mod;
    this.#onDispose = onDispose;
    this.#heap = new Heap(mod);
    /** 'single' or 'threads': which wasm build runs. */
    this.build = build;
    /** Threads used per call (the calling thread included). */
    this.threads = mod.numThreads();
    /** Highway's SIMD target, 'WASM' for SIMD128. */
    this.target = mod.targetName();
    // What a KV cache needs of this runtime: the heap for its block, the
    // kernel call on its keys and values in place.
    this.#cacheEngine = Object.freeze({
      heap: this.#heap,
      generator: this.#generator,
      checkAlive: () => this.#checkAlive(),
      attention: (call, q, keys, values) => this.#attendCache(call, q, keys, values),
    });
    // The book's modules, bound to this runtime (its generator and heap).
    Object.assign(this, defineModules({
      generator: this.#generator,
      checkAlive: () => this.#checkAlive(),
      layerForward: (call) => this.#layerForward(call),
      linearForward: (...args) => this.#linearForward(...args),
      createCache: (layout) => new KVCache(this.#cacheEngine, layout),
    }));
    Object.freeze(this);
  }

  /** Current size of this module's wasm memory, in bytes. */
  get memoryBytes() {
    this.#checkAlive();
    return this.#heap.memoryBytes();
  }

  /**
   * Seeds the generator used for default dropout seeds and module
   * initialisation, like torch.manual_seed.
   */
  manualSeed(seed) {
    this.#checkAlive();
    checkSeed('seed', seed);
    this.#generator.seed(seed);
    return this;
  }

  /**
   * torch.rand: a Float32Array of uniform [0, 1) draws from the runtime's
   * generator, bit-identical to PyTorch's CPU generator for the same seed.
   * rand([6, 3]) or rand(6, 3).
   */
  rand(...dims) {
    this.#checkAlive();
    const shape = checkShape('shape', Array.isArray(dims[0]) ? dims[0] : dims, 1, 8);
    const n = product(...shape);
    if (!(n <= 2 ** 28)) throw new RangeError(`rand: at most 2^28 values, got shape [${shape.join(', ')}]`);
    const out = new Float32Array(n);
    for (let i = 0; i < n; i++) out[i] = this.#generator.nextFloat(0, 1);
    return out;
  }

  /** The default attention scale 1/√headDim, as a float32 (the engine's). */
  defaultScale(headDim) {
    this.#checkAlive();
    checkInteger('headDim', headDim);
    return this.#mod.defaultScale(headDim);
  }

  /** Scaled dot-product attention with the SIMD kernels. */
  attention(q, k, v, options) {
    return this.#run('attention', q, k, v, options);
  }

  /**
   * A key/value cache resident in wasm memory for generation: options
   * { batch, kvHeads, headDim, valueDim = headDim, capacity }. See
   * bindings/kv-cache.mjs; dispose() it (or `using`) when done.
   */
  createKVCache(options) {
    this.#checkAlive();
    return new KVCache(this.#cacheEngine, resolveCacheLayout(options));
  }

  /**
   * The same computation with the scalar reference (double accumulation):
   * the oracle the kernels are tested against. Slow; for checking.
   */
  attentionReference(q, k, v, options) {
    return this.#run('attentionReference', q, k, v, options);
  }

  /** Frees the scratch memory and stops the worker threads. Idempotent. */
  dispose() {
    if (this.#disposed) return;
    this.#disposed = true;
    this.#heap.release();
    terminateWorkers(this.#mod);
    this.#onDispose();
  }

  [Symbol.dispose]() {
    this.dispose();
  }

  #checkAlive() {
    if (this.#disposed) {
      throw new TypeError('this causal-attention runtime has been disposed; call init() for a new one');
    }
  }

  #run(fn, q, k, v, options) {
    this.#checkAlive();
    const c = resolveAttentionCall(q, k, v, options, this.#generator);
    const [qp, kp, vp, op, wp] = this.#stage(fn, [q, k, v],
      [c.outLength, c.returnWeights ? c.weightsLength : 0]);
    return this.#attend(fn, c, qp, kp, vp, op, wp);
  }

  // A KV cache's keys and values stay where they are: only q goes in.
  #attendCache(c, q, keys, values) {
    const [qp, op, wp] = this.#stage('attention', [q],
      [c.outLength, c.returnWeights ? c.weightsLength : 0]);
    return this.#attend('attention', c, qp, keys, values, op, wp);
  }

  #attend(fn, c, qp, kp, vp, op, wp) {
    checkStatus(this.#mod, fn, this.#mod[fn](c.shape, c.options, qp, kp, vp, op, wp));
    const output = this.#copyOut(op, c.outLength, c.out);
    if (!c.returnWeights) return { output };
    return { output, weights: this.#copyOut(wp, c.weightsLength, c.weightsOut) };
  }

  // Copies arrays into the arena in order; null entries give pointer 0.
  // Views are re-read after the allocation, which may grow memory.
  #stage(what, inputs, outputCounts) {
    const heap = this.#heap;
    const counts = [...inputs.map((a) => a?.length ?? 0), ...outputCounts];
    const ptrs = heap.reserve(what, counts);
    const f32 = heap.f32();
    inputs.forEach((a, i) => { if (a) f32.set(a, ptrs[i] >>> 2); });
    return ptrs;
  }

  // Views are re-read: the wasm call may have grown memory for its workspace.
  #copyOut(ptr, length, target) {
    const out = target ?? new Float32Array(length);
    out.set(this.#heap.f32().subarray(ptr >>> 2, (ptr >>> 2) + length));
    return out;
  }

  // One layer forward (src/layer.h) for a module: `c` holds the module's
  // parameters, the input, the core's LayerOptions and what to return.
  // With a KV cache (c.options.cache, src/layer.h's KVCacheView) the layer
  // writes this call's keys and values into it and attends over all of it.
  #layerForward(c) {
    const p = c.params;
    const { batch, tokens, cache } = c.options;
    const dModel = p.numHeads * p.headDim;
    const kvHeads = p.numKVHeads || p.numHeads;
    const outLength = batch * tokens * dModel;
    const kvLength = batch * tokens * kvHeads * p.headDim;
    const wLength = batch * p.numHeads * tokens * (cache.length + tokens);
    const [x, wQuery, bQuery, wKey, bKey, wValue, bValue, wOut, bOut,
      y, weights, scores, queries, keys, values] = this.#stage('forward',
      [c.x, p.wq, p.bq, p.wk, p.bk, p.wv, p.bv, p.wo, p.bo],
      [outLength, c.returnWeights ? wLength : 0, c.returnScores ? wLength : 0,
        ...(c.returnQKV ? [outLength, kvLength, kvLength] : [0, 0, 0])]);
    const params = {
      dIn: c.dIn, numHeads: p.numHeads, headDim: p.headDim,
      numKVHeads: p.numKVHeads ?? 0, ropeBase: p.ropeBase ?? 0,
      wQuery, bQuery, wKey, bKey, wValue, bValue, wOut, bOut,
    };
    const outputs = { y, weights, scores, queries, keys, values };
    checkStatus(this.#mod, 'forward', this.#mod.layerForward(params, c.options, x, outputs));
    const result = { output: this.#copyOut(y, outLength, c.out) };
    if (c.returnWeights) result.weights = this.#copyOut(weights, wLength);
    if (c.returnScores) result.scores = this.#copyOut(scores, wLength);
    if (c.returnQKV) {
      result.queries = this.#copyOut(queries, outLength);
      result.keys = this.#copyOut(keys, kvLength);
      result.values = this.#copyOut(values, kvLength);
    }
    return result;
  }

  #linearForward(x, rows, inF, outF, weight, bias) {
    const [xp, wp, bp, yp] = this.#stage('Linear.forward', [x, weight, bias], [rows * outF]);
    checkStatus(this.#mod, 'Linear.forward', this.#mod.linear(xp, rows, inF, outF, wp, bp, yp));
    return this.#copyOut(yp, rows * outF);
  }
}

/**
 * Validates and normalises one attention call. Throws TypeError/RangeError;
 * never touches wasm.
 */
function resolveAttentionCall(q, k, v, options, generator) {
  const o = checkOptionNames('options', options, ATTENTION_OPTIONS);
  if (options === undefined) {
    throw new TypeError('options must be an object with at least batch, heads, queryLength and headDim, got undefined');
  }
  const batch = checkInteger('options.batch', o.batch);
  const heads = checkInteger('options.heads', o.heads);
  const kvHeads = checkInteger('options.kvHeads', o.kvHeads ?? heads);
  const queryLength = checkInteger('options.queryLength', o.queryLength);
  const keyLength = checkInteger('options.keyLength', o.keyLength ?? queryLength);
  const headDim = checkInteger('options.headDim', o.headDim);
  const valueDim = checkInteger('options.valueDim', o.valueDim ?? headDim);
  if (keyLength > 0xffffffff) {
    throw new RangeError(`options.keyLength must be at most 2^32 - 1, got ${keyLength}`);
  }
  checkKvGroups('options.heads must be a multiple of options.kvHeads', heads, kvHeads);

  // k and v have kvHeads heads; say so when they differ from heads.
  const kvName = o.kvHeads === undefined ? `heads ${heads}` : `kvHeads ${kvHeads}`;
  checkTensor('q', q, product(batch, heads, queryLength, headDim),
    `batch ${batch} × heads ${heads} × queryLength ${queryLength} × headDim ${headDim}`);
  checkTensor('k', k, product(batch, kvHeads, keyLength, headDim),
    `batch ${batch} × ${kvName} × keyLength ${keyLength} × headDim ${headDim}`);
  checkTensor('v', v, product(batch, kvHeads, keyLength, valueDim),
    `batch ${batch} × ${kvName} × keyLength ${keyLength} × valueDim ${valueDim}`);

  const shape = {
    batch, heads, queryLength, keyLength, headDim, valueDim, kvHeads, kvCapacity: 0,
  };
  return resolveAttentionOutputs('options', o, shape, generator);
}

const runtimes = new Map();

/**
 * Loads the engine. Options:
 *  - build: 'auto' (default) picks the pthreads build where it can run (Node;
 *    browsers when crossOriginIsolated) and more than one thread is wanted,
 *    else the single-threaded build; 'single' or 'threads' force one
 *    ('threads' rejects where it cannot run).
 *  - threads: 'auto' (default: the machine's cores, at most 16) or an
 *    integer from 1 to 16.
 *  - worker: true runs the engine in a dedicated worker and resolves to a
 *    proxy of the same API whose calls return promises (remote.mjs).
 *  - timeout: milliseconds until a load that has not finished rejects
 *    (default 30 000; Infinity waits forever).
 * Calls with the same resolved options share one runtime.
 */
export function init(options = {}) {
  try {
    checkOptionNames('init options', options, ['build', 'threads', 'worker', 'timeout']);
    const build = options.build ?? 'auto';
    checkOneOf('init options.build', build, ['auto', 'single', 'threads']);
    const threads = options.threads ?? 'auto';
    if (threads !== 'auto') {
      checkInteger('init options.threads', threads, 1);
      if (threads > MAX_THREADS) {
        throw new RangeError(`init options.threads must be at most ${MAX_THREADS}, got ${threads}`);
      }
    }
    const worker = checkBoolean('init options.worker', options.worker ?? false);
    const timeout = options.timeout ?? DEFAULT_TIMEOUT_MS;
    if (typeof timeout !== 'number' || !(timeout > 0)) {
      const Err = typeof timeout === 'number' ? RangeError : TypeError;
      throw new Err(`init options.timeout must be a number of milliseconds > 0 (or Infinity), got ${describe(timeout)}`);
    }
    if (worker) return initRemote({ build, threads, timeout });
    return initChecked(build, threads, timeout);
  } catch (error) {
    return Promise.reject(error);
  }
}

async function initChecked(build, threads, timeout) {
  const availability = threadsAvailability();
  let n = threads === 'auto' ? Math.min(await hardwareThreads(), MAX_THREADS) : threads;
  let kind = build;
  if (build === 'threads' && !availability.ok) {
    throw new Error(`the threaded build cannot run here: ${availability.why}`);
  }
  if (build === 'single') {
    n = 1;
  } else if (build === 'auto') {
    kind = availability.ok && n > 1 ? 'threads' : 'single';
    if (kind === 'single') n = 1;
  }
  const key = `${kind}:${n}`;
  if (!runtimes.has(key)) {
    const forget = () => runtimes.delete(key);
    const promise = loadModule(kind, n, { timeout }).then((mod) => new Runtime(mod, kind, forget));
    runtimes.set(key, promise);
    promise.catch(forget);
  }
  const runtime = await runtimes.get(key);
  return runtime;
}
