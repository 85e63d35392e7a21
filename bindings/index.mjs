// causal-attention: the package entry. `init()` loads the wasm engine once
// and returns a runtime whose methods take and return Float32Arrays.
//
// Tensors are row-major: q [B, H, Tq, D], k [B, Hkv, Tk, D], v [B, Hkv, Tk,
// Dv] (Hkv = H unless grouped-query attention); output [B, H, Tq, Dv];
// weights [B, H, Tq, Tk]; logSumExp [B, H, Tq].

import { checkStatus } from './engine/codes.mjs';
import { Heap } from './engine/heap.mjs';
import {
  DEFAULT_TIMEOUT_MS, MAX_THREADS, hardwareThreads, loadModule, terminateWorkers, threadsAvailability,
} from './engine/loader.mjs';
import { KVCache, resolveCacheLayout } from './engine/kv-cache.mjs';
import { crossEntropy } from './nn/loss.mjs';
import { defineModules } from './nn/modules.mjs';
import { AdamW, SGD } from './nn/optim.mjs';
import { MT19937 } from './nn/random.mjs';
import { initRemote } from './remote/remote.mjs';
import {
  checkBoolean, checkInteger, checkKvGroups, checkOneOf, checkOptionNames, checkSeed, checkShape,
  checkTensor, describe, product, resolveAttentionOptions, resolveAttentionOutputs,
} from './engine/validate.mjs';

// The options that describe one attention computation: the forward's and
// the backward's.
const SHAPE_AND_MASK_OPTIONS = [
  'batch', 'heads', 'kvHeads', 'queryLength', 'keyLength', 'headDim', 'valueDim',
  'causal', 'maskStrategy', 'scale', 'dropout', 'training', 'seed',
];
const ATTENTION_OPTIONS = [
  ...SHAPE_AND_MASK_OPTIONS, 'returnWeights', 'returnLogSumExp', 'out', 'weightsOut',
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
    /** The GEMM microkernel under Linear and the layer: 'relaxed-simd' or 'simd128'. */
    this.gemmKernel = mod.gemmKernelName();
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
      layerBackward: (call) => this.#layerBackward(call),
      linearForward: (...args) => this.#linearForward(...args),
      linearBackward: (...args) => this.#linearBackward(...args),
      createCache: (layout) => new KVCache(this.#cacheEngine, layout),
    }));
    /** Optimizers over module parameters, as torch.optim. */
    this.optim = Object.freeze({ SGD, AdamW });
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
   * torch.randint(low, high, shape): an Int32Array of integers uniform in
   * [low, high), the same draws as PyTorch's CPU generator (random() %
   * range + low) for the same seed. randint(0, 10, [4, 8]).
   */
  randint(low, high, shape) {
    this.#checkAlive();
    checkInteger('low', low, -(2 ** 31));
    checkInteger('high', high, low + 1);
    if (high > 2 ** 31) throw new RangeError(`high must be at most 2^31, got ${high}`);
    const dims = checkShape('shape', shape, 1, 8);
    const n = product(...dims);
    if (!(n <= 2 ** 28)) throw new RangeError(`randint: at most 2^28 values, got shape [${dims.join(', ')}]`);
    const range = high - low;
    const out = new Int32Array(n);
    for (let i = 0; i < n; i++) out[i] = (this.#generator.nextUint32() % range) + low;
    return out;
  }

  /**
   * nn.functional.cross_entropy(logits, targets) with mean reduction:
   * logits [N, C] (N = targets.length), targets class indices; returns
   * { loss, gradLogits } (the gradient of the mean loss, [N, C]). Targets
   * equal to ignoreIndex (default -100) count for nothing.
   */
  crossEntropy(logits, targets, options) {
    this.#checkAlive();
    return crossEntropy(logits, targets, options);
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
   * bindings/engine/kv-cache.mjs; dispose() it (or `using`) when done.
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

  /**
   * Gradients of attention with respect to q, k and v, given the gradient
   * of its output and what the forward returned with returnLogSumExp:
   * { gradQ, gradK, gradV } shaped like q, k, v. `options` are the
   * forward's (with its seed when dropout ran).
   */
  attentionBackward(gradOutput, q, k, v, output, logSumExp, options) {
    return this.#runBackward('attentionBackward', gradOutput, q, k, v, output, logSumExp, options);
  }

  /** The same with the scalar reference (double accumulation). Slow. */
  attentionBackwardReference(gradOutput, q, k, v, output, logSumExp, options) {
    return this.#runBackward('attentionBackwardReference', gradOutput, q, k, v, output, logSumExp,
      options);
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
    const [qp, kp, vp, op, wp, lp] = this.#stage(fn, [q, k, v],
      [c.outLength, c.returnWeights ? c.weightsLength : 0, c.returnLogSumExp ? c.rowsLength : 0]);
    return this.#attend(fn, c, qp, kp, vp, op, wp, lp);
  }

  // A KV cache's keys and values stay where they are: only q goes in.
  #attendCache(c, q, keys, values) {
    const [qp, op, wp] = this.#stage('attention', [q],
      [c.outLength, c.returnWeights ? c.weightsLength : 0]);
    return this.#attend('attention', c, qp, keys, values, op, wp, 0);
  }

  #attend(fn, c, qp, kp, vp, op, wp, lp) {
    checkStatus(this.#mod, fn, this.#mod[fn](c.shape, c.options, qp, kp, vp, op, wp, lp));
    const result = { output: this.#copyOut(op, c.outLength, c.out) };
    if (c.returnWeights) result.weights = this.#copyOut(wp, c.weightsLength, c.weightsOut);
    if (c.returnLogSumExp) {
      result.logSumExp = this.#copyOut(lp, c.rowsLength);
      // The backward needs the dropout mask's seed, drawn here if not given.
      if (c.options.training && c.options.dropout > 0) result.seed = joinSeed(c.options);
    }
    return result;
  }

  #runBackward(fn, gradOutput, q, k, v, output, logSumExp, options) {
    this.#checkAlive();
    const c = resolveBackwardCall(gradOutput, q, k, v, output, logSumExp, options);
    const [dop, qp, kp, vp, op, lp, gqp, gkp, gvp] = this.#stage(fn,
      [gradOutput, q, k, v, output, logSumExp], [q.length, k.length, v.length]);
    checkStatus(this.#mod, fn,
      this.#mod[fn](c.shape, c.options, dop, qp, kp, vp, op, lp, gqp, gkp, gvp));
    return {
      gradQ: this.#copyOut(gqp, q.length),
      gradK: this.#copyOut(gkp, k.length),
      gradV: this.#copyOut(gvp, v.length),
    };
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
  // With c.keep (a training forward), also `saved`: copies of what
  // AttentionLayerBackward reads (queries, keys, values, context,
  // logSumExp).
  #layerForward(c) {
    const p = c.params;
    const { batch, tokens, cache } = c.options;
    const dModel = p.numHeads * p.headDim;
    const kvHeads = p.numKVHeads || p.numHeads;
    const outLength = batch * tokens * dModel;
    const kvLength = batch * tokens * kvHeads * p.headDim;
    const wLength = batch * p.numHeads * tokens * (cache.length + tokens);
    const rowsLength = batch * p.numHeads * tokens;
    const heads = c.returnQKV || c.keep;
    const [x, wQuery, bQuery, wKey, bKey, wValue, bValue, wOut, bOut,
      y, weights, scores, queries, keys, values, context, logSumExp] = this.#stage('forward',
      [c.x, p.wQuery, p.bQuery, p.wKey, p.bKey, p.wValue, p.bValue, p.wOut, p.bOut],
      [outLength, c.returnWeights ? wLength : 0, c.returnScores ? wLength : 0,
        ...(heads ? [outLength, kvLength, kvLength] : [0, 0, 0]),
        c.keep ? outLength : 0, c.keep ? rowsLength : 0]);
    const params = {
      dIn: c.dIn, numHeads: p.numHeads, headDim: p.headDim,
      numKVHeads: p.numKVHeads ?? 0, ropeBase: p.ropeBase ?? 0, ropeScaling: p.ropeScaling ?? NO_ROPE_SCALING,
      wQuery, bQuery, wKey, bKey, wValue, bValue, wOut, bOut,
    };
    const outputs = { y, weights, scores, queries, keys, values, context, logSumExp };
    checkStatus(this.#mod, 'forward', this.#mod.layerForward(params, c.options, x, outputs));
    const result = { output: this.#copyOut(y, outLength, c.out) };
    if (c.returnWeights) result.weights = this.#copyOut(weights, wLength);
    if (c.returnScores) result.scores = this.#copyOut(scores, wLength);
    if (c.returnQKV) {
      result.queries = this.#copyOut(queries, outLength);
      result.keys = this.#copyOut(keys, kvLength);
      result.values = this.#copyOut(values, kvLength);
    }
    if (c.keep) {
      result.saved = {
        queries: this.#copyOut(queries, outLength),
        keys: this.#copyOut(keys, kvLength),
        values: this.#copyOut(values, kvLength),
        context: this.#copyOut(context, outLength),
        logSumExp: this.#copyOut(logSumExp, rowsLength),
      };
    }
    return result;
  }

  // One layer backward (src/layer.h): the forward's call plus `saved`,
  // gradY and the current gradients (accumulated into; returned as new
  // arrays).
  #layerBackward(c) {
    const p = c.params;
    const g = c.grads;
    const s = c.saved;
    const { batch, tokens } = c.options;
    const [x, wQuery, bQuery, wKey, bKey, wValue, bValue, wOut, bOut,
      queries, keys, values, context, logSumExp, gradY,
      gwq, gbq, gwk, gbk, gwv, gbv, gwo, gbo, gradX] = this.#stage('backward',
      [c.x, p.wQuery, p.bQuery, p.wKey, p.bKey, p.wValue, p.bValue, p.wOut, p.bOut,
        s.queries, s.keys, s.values, s.context, s.logSumExp, c.gradY,
        g.wQuery, g.bQuery, g.wKey, g.bKey, g.wValue, g.bValue, g.wOut, g.bOut],
      [batch * tokens * c.dIn]);
    const params = {
      dIn: c.dIn, numHeads: p.numHeads, headDim: p.headDim,
      numKVHeads: p.numKVHeads ?? 0, ropeBase: p.ropeBase ?? 0, ropeScaling: p.ropeScaling ?? NO_ROPE_SCALING,
      wQuery, bQuery, wKey, bKey, wValue, bValue, wOut, bOut,
    };
    const saved = { queries, keys, values, context, logSumExp };
    const grads = {
      wQuery: gwq, bQuery: gbq, wKey: gwk, bKey: gbk, wValue: gwv, bValue: gbv, wOut: gwo, bOut: gbo,
    };
    checkStatus(this.#mod, 'backward',
      this.#mod.layerBackward(params, c.options, x, saved, gradY, gradX, grads));
    const ptrs = grads;
    const out = {};
    for (const [key, ptr] of Object.entries(ptrs)) out[key] = g[key] && this.#copyOut(ptr, g[key].length);
    return { gradX: this.#copyOut(gradX, batch * tokens * c.dIn), grads: out };
  }

  #linearForward(x, rows, inF, outF, weight, bias) {
    const [xp, wp, bp, yp] = this.#stage('Linear.forward', [x, weight, bias], [rows * outF]);
    checkStatus(this.#mod, 'Linear.forward', this.#mod.linear(xp, rows, inF, outF, wp, bp, yp));
    return this.#copyOut(yp, rows * outF);
  }

  // weightGrad / biasGrad (or null) are accumulated into; returned as new
  // arrays.
  #linearBackward(x, rows, inF, outF, weight, gradY, weightGrad, biasGrad) {
    const [xp, wp, gyp, gwp, gbp, gxp] = this.#stage('Linear.backward',
      [x, weight, gradY, weightGrad, biasGrad], [rows * inF]);
    checkStatus(this.#mod, 'Linear.backward',
      this.#mod.linearBackward(xp, rows, inF, outF, wp, gyp, gxp, gwp, gbp));
    return {
      gradX: this.#copyOut(gxp, rows * inF),
      weightGrad: this.#copyOut(gwp, weightGrad.length),
      biasGrad: biasGrad && this.#copyOut(gbp, biasGrad.length),
    };
  }
}

/** The dropout seed of resolved core options as one BigInt. */
const joinSeed = (o) => (BigInt(o.seedHi) << 32n) | BigInt(o.seedLo);

/**
 * The shape of one attention computation from its options (`o`, the
 * checked `options`), and q, k, v checked against it. Throws
 * TypeError/RangeError; never touches wasm.
 */
function resolveAttentionShape(o, options, q, k, v) {
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
  return { batch, heads, queryLength, keyLength, headDim, valueDim, kvHeads, kvCapacity: 0 };
}

/**
 * Validates and normalises one attention call. Throws TypeError/RangeError;
 * never touches wasm.
 */
function resolveAttentionCall(q, k, v, options, generator) {
  const o = checkOptionNames('options', options, ATTENTION_OPTIONS);
  const shape = resolveAttentionShape(o, options, q, k, v);
  const c = resolveAttentionOutputs('options', o, shape, generator);
  c.returnLogSumExp = checkBoolean('options.returnLogSumExp', o.returnLogSumExp ?? false);
  c.rowsLength = product(shape.batch, shape.heads, shape.queryLength);
  return c;
}

/** Validates one backward call (the forward's options, its results). */
function resolveBackwardCall(gradOutput, q, k, v, output, logSumExp, options) {
  const o = checkOptionNames('options', options, SHAPE_AND_MASK_OPTIONS);
  const shape = resolveAttentionShape(o, options, q, k, v);
  const { batch, heads, queryLength, valueDim } = shape;
  const outHow = `batch ${batch} × heads ${heads} × queryLength ${queryLength} × valueDim ${valueDim}`;
  const outLength = product(batch, heads, queryLength, valueDim);
  checkTensor('gradOutput', gradOutput, outLength, outHow);
  checkTensor('output', output, outLength, `${outHow}; the forward's output`);
  if (logSumExp === undefined || logSumExp === null) {
    throw new TypeError(
      `logSumExp must be a Float32Array (the forward's, from returnLogSumExp: true), got ${describe(logSumExp)}`);
  }
  checkTensor('logSumExp', logSumExp, product(batch, heads, queryLength),
    `batch ${batch} × heads ${heads} × queryLength ${queryLength}`);
  // The dropout mask is regenerated from the forward's seed: never drawn here.
  const dropoutRan = o.training === true && typeof o.dropout === 'number' && o.dropout > 0;
  if (dropoutRan && o.seed === undefined) {
    throw new TypeError(
      "options.seed is required when dropout ran (training with dropout > 0): pass the forward's seed (its result's seed)");
  }
  return { shape, options: resolveAttentionOptions('options', o, null) };
}

const runtimes = new Map();

/** RopeScaling (src/rope.h) when a layer has none: factor 0. */
const NO_ROPE_SCALING = Object.freeze({
  factor: 0, lowFreqFactor: 1, highFreqFactor: 4, originalContextLength: 8192,
});

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
 *  - gemmKernel: 'auto' (default) runs the relaxed-SIMD GEMM kernel where
 *    the engine has relaxed SIMD (Chromium), else SIMD128; 'simd128' always
 *    SIMD128, for the same bits in every engine.
 * Calls with the same resolved options share one runtime.
 */
export function init(options = {}) {
  try {
    checkOptionNames('init options', options, ['build', 'threads', 'worker', 'timeout', 'gemmKernel']);
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
    const gemmKernel = options.gemmKernel ?? 'auto';
    checkOneOf('init options.gemmKernel', gemmKernel, ['auto', 'simd128']);
    if (worker) return initRemote({ build, threads, timeout, gemmKernel });
    return initChecked(build, threads, timeout, gemmKernel);
  } catch (error) {
    return Promise.reject(error);
  }
}

async function initChecked(build, threads, timeout, gemmKernel) {
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
  const key = `${kind}:${n}:${gemmKernel}`;
  if (!runtimes.has(key)) {
    const forget = () => runtimes.delete(key);
    const promise = loadModule(kind, n, { timeout }).then((mod) => {
      if (gemmKernel === 'simd128') mod.allowRelaxedGemmKernel(false);
      return new Runtime(mod, kind, forget);
    });
    runtimes.set(key, promise);
    promise.catch(forget);
  }
  const runtime = await runtimes.get(key);
  return runtime;
}
