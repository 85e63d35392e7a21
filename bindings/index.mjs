// causal-attention: the package entry. `init()` loads the wasm engine once
// and returns a runtime whose methods take and return Float32Arrays.
//
// Tensors are row-major: q [B, H, Tq, D], k [B, H, Tk, D], v [B, H, Tk, Dv];
// output [B, H, Tq, Dv]; weights [B, H, Tq, Tk].

import { Heap } from './heap.mjs';
import {
  DEFAULT_TIMEOUT_MS, MAX_THREADS, hardwareThreads, loadModule, terminateWorkers, threadsAvailability,
} from './loader.mjs';
import { checkShape, defineModules } from './modules.mjs';
import { MT19937 } from './random.mjs';
import { initRemote } from './remote.mjs';
import {
  checkBoolean, checkFinite, checkInteger, checkOneOf, checkOptionNames,
  checkProbability, checkSeed, checkTensor, describe, product,
} from './validate.mjs';

const ATTENTION_OPTIONS = [
  'batch', 'heads', 'queryLength', 'keyLength', 'headDim', 'valueDim',
  'causal', 'maskStrategy', 'scale', 'dropout', 'training', 'seed',
  'returnWeights', 'out', 'weightsOut',
];
const CAUSAL_CODES = new Map([[false, 0], [true, 1], ['top-left', 1], ['bottom-right', 2]]);
const STRATEGY_CODES = new Map([['neg-inf', 0], ['renormalize', 1]]);

// Status codes of src/causal_attention.h.
const STATUS_OUT_OF_MEMORY = 5;

class Runtime {
  #mod;
  #heap;
  #generator = new MT19937();
  #disposed = false;
  #onDispose;

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
    // The book's modules, bound to this runtime (its generator and heap).
    Object.assign(this, defineModules({
      generator: this.#generator,
      checkAlive: () => this.#checkAlive(),
      layerForward: (call) => this.#layerForward(call),
      linearForward: (...args) => this.#linearForward(...args),
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

  /** Scaled dot-product attention with the SIMD kernels. */
  attention(q, k, v, options) {
    return this.#run('attention', q, k, v, options);
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
    const status = this.#mod[fn](
      qp, kp, vp, op, wp,
      c.batch, c.heads, c.queryLength, c.keyLength, c.headDim, c.valueDim,
      c.causal, c.strategy, c.scale, c.dropout, c.training, c.seedLo, c.seedHi);
    if (status !== 0) throw this.#statusError(fn, status);
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

  #layerForward(c) {
    const p = c.params;
    const dModel = p.numHeads * p.headDim;
    const outLength = c.batch * c.tokens * dModel;
    const wLength = c.batch * p.numHeads * c.tokens * c.tokens;
    const [xp, wq, bq, wk, bk, wv, bv, wo, bo, yp, wp, sp] = this.#stage('forward',
      [c.x, p.wq, p.bq, p.wk, p.bk, p.wv, p.bv, p.wo, p.bo],
      [outLength, c.returnWeights ? wLength : 0, c.returnScores ? wLength : 0]);
    const status = this.#mod.layerForward(xp, yp, wp, sp, wq, bq, wk, bk, wv, bv, wo, bo,
      c.batch, c.tokens, c.dIn, p.numHeads, p.headDim,
      CAUSAL_CODES.get(c.causal), STRATEGY_CODES.get(c.maskStrategy),
      c.dropout, c.training, c.seed[0], c.seed[1]);
    if (status !== 0) throw this.#statusError('forward', status);
    const result = { output: this.#copyOut(yp, outLength, c.out) };
    if (c.returnWeights) result.weights = this.#copyOut(wp, wLength);
    if (c.returnScores) result.scores = this.#copyOut(sp, wLength);
    return result;
  }

  #linearForward(x, rows, inF, outF, weight, bias) {
    const [xp, wp, bp, yp] = this.#stage('Linear.forward', [x, weight, bias], [rows * outF]);
    const status = this.#mod.linear(xp, yp, wp, bp, rows, inF, outF);
    if (status !== 0) throw this.#statusError('Linear.forward', status);
    return this.#copyOut(yp, rows * outF);
  }

  #statusError(fn, status) {
    const message = `${fn}: ${this.#mod.statusMessage(status)} (status ${status})`;
    return status === STATUS_OUT_OF_MEMORY || status <= 3
      ? new RangeError(message)
      : new Error(message);
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
  const queryLength = checkInteger('options.queryLength', o.queryLength);
  const keyLength = checkInteger('options.keyLength', o.keyLength ?? queryLength);
  const headDim = checkInteger('options.headDim', o.headDim);
  const valueDim = checkInteger('options.valueDim', o.valueDim ?? headDim);
  if (keyLength > 0xffffffff) {
    throw new RangeError(`options.keyLength must be at most 2^32 - 1, got ${keyLength}`);
  }

  const qLength = product(batch, heads, queryLength, headDim);
  const kLength = product(batch, heads, keyLength, headDim);
  const vLength = product(batch, heads, keyLength, valueDim);
  const outLength = product(batch, heads, queryLength, valueDim);
  const weightsLength = product(batch, heads, queryLength, keyLength);
  checkTensor('q', q, qLength,
    `batch ${batch} × heads ${heads} × queryLength ${queryLength} × headDim ${headDim}`);
  checkTensor('k', k, kLength,
    `batch ${batch} × heads ${heads} × keyLength ${keyLength} × headDim ${headDim}`);
  checkTensor('v', v, vLength,
    `batch ${batch} × heads ${heads} × keyLength ${keyLength} × valueDim ${valueDim}`);

  const causalValue = o.causal ?? true;
  checkOneOf('options.causal', causalValue, [...CAUSAL_CODES.keys()]);
  const strategyValue = o.maskStrategy ?? 'neg-inf';
  checkOneOf('options.maskStrategy', strategyValue, [...STRATEGY_CODES.keys()]);
  const scale = o.scale === undefined
    ? Math.fround(1 / Math.sqrt(headDim))
    : checkFinite('options.scale', o.scale);
  if (!Number.isFinite(Math.fround(scale))) {
    throw new RangeError(`options.scale must fit a float32, got ${describe(scale)}`);
  }
  const dropout = checkProbability('options.dropout', o.dropout ?? 0);
  const training = checkBoolean('options.training', o.training ?? false);
  const returnWeights = checkBoolean('options.returnWeights', o.returnWeights ?? false);
  const dropoutRuns = training && dropout > 0;
  let seedLo = 0;
  let seedHi = 0;
  if (o.seed !== undefined) {
    [seedLo, seedHi] = checkSeed('options.seed', o.seed);
  } else if (dropoutRuns) {
    [seedLo, seedHi] = checkSeed('seed', generator.nextUint64());
  }
  const out = o.out === undefined ? undefined
    : checkTensor('options.out', o.out, outLength,
      `batch ${batch} × heads ${heads} × queryLength ${queryLength} × valueDim ${valueDim}`);
  let weightsOut;
  if (o.weightsOut !== undefined) {
    if (!returnWeights) {
      throw new TypeError('options.weightsOut is only used with returnWeights: true');
    }
    weightsOut = checkTensor('options.weightsOut', o.weightsOut, weightsLength,
      `batch ${batch} × heads ${heads} × queryLength ${queryLength} × keyLength ${keyLength}`);
  }
  return {
    batch, heads, queryLength, keyLength, headDim, valueDim,
    qLength, kLength, vLength, outLength, weightsLength,
    causal: CAUSAL_CODES.get(causalValue),
    strategy: STRATEGY_CODES.get(strategyValue),
    scale, dropout, training, seedLo, seedHi, returnWeights, out, weightsOut,
  };
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
