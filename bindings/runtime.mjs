// What init() resolves to (index.d.ts's CausalAttentionRuntime, where its
// API is described): argument checking, then a call into the engine layer
// (engine.mjs), which alone talks to the wasm module. The modules
// (nn/modules.mjs) and the KV caches reach the engine layer directly.

import { KVCache, resolveCacheLayout } from './api/kv-cache.mjs';
import {
  checkBoolean, checkInteger, checkKvGroups, checkOptionNames, checkSeed, checkShape, checkTensor, describe,
} from './api/validate.mjs';
import { product } from './engine/heap.mjs';
import {
  renormalizes, resolveAttentionOptions, resolveAttentionOutputs, resolveReturnScores, resolveVisibility,
  VISIBILITY_OPTIONS,
} from './api/attention-options.mjs';
import { crossEntropy } from './nn/loss.mjs';
import { mapCheckpoint } from './models/hf-checkpoint.mjs';
import { readSafetensors } from './models/safetensors.mjs';
import { checkCircuitModule, compositionScores, foldScale } from './nn/circuits.mjs';
import { checkLensModel, headCircuits, logitLens } from './nn/model-lens.mjs';
import { checkWeightsDtype } from './nn/weights-dtype.mjs';
import { defineModules } from './nn/modules.mjs';
import { SGD, bindAdamW } from './nn/optim.mjs';
import { MT19937 } from './api/random.mjs';

/** @typedef {import('./engine/engine.mjs').Engine} Engine */
/** @typedef {import('./engine/engine.d.ts').AttentionCall} AttentionCall */
/** @typedef {import('./engine/embind.mjs').ShapeFields} ShapeFields */
/** @typedef {import('./engine/embind.mjs').AttentionOptions} CoreAttentionOptions */
/** @typedef {import('./index.js').AttentionOptions} AttentionOptions */
/** @typedef {import('./index.js').AttentionComputation} AttentionComputation */
/** @typedef {import('./index.js').AttentionResult} AttentionResult */
/** @typedef {import('./index.js').AttentionGradients} AttentionGradients */
/** @typedef {import('./index.js').KVCacheOptions} KVCacheOptions */
/** @typedef {import('./index.js').CrossEntropyOptions} CrossEntropyOptions */
/** @typedef {import('./index.js').CrossEntropyResult} CrossEntropyResult */

// The options that describe one attention computation: the forward's and
// the backward's.
const SHAPE_AND_MASK_OPTIONS = [
  'batch', 'heads', 'kvHeads', 'queryLength', 'keyLength', 'headDim', 'valueDim',
  'causal', 'maskStrategy', 'scale', 'dropout', 'training', 'seed', ...VISIBILITY_OPTIONS,
];
const ATTENTION_OPTIONS = [
  ...SHAPE_AND_MASK_OPTIONS, 'returnWeights', 'returnLogSumExp', 'returnScores', 'out', 'weightsOut', 'precision',
];

export class Runtime {
  /** @type {Engine} */
  #engine;
  #generator = new MT19937();
  /** Set while loadPretrained builds a model (modules then skip their initial draws). */
  #skipInit = { on: false };
  /** @type {() => void} */
  #onDispose;
  #disposed = false;
  // The KV caches this runtime made (createKVCache, the modules' useCache),
  // freed by its dispose(): the engine may outlive it. Weak, so that an
  // undisposed cache can still be collected (its own registry frees it).
  /** @type {Set<WeakRef<KVCache>>} */
  #caches = new Set();
  #forgetCache = new FinalizationRegistry((/** @type {WeakRef<KVCache>} */ ref) => this.#caches.delete(ref));

  /**
   * Each init() makes one: its own generator and its own lifetime over an
   * engine that runtimes of the same options share (index.mjs counts them).
   * @param {Engine} engine
   * @param {'single' | 'threads'} build
   * @param {() => void} onDispose gives this runtime's hold on the engine back to init()
   */
  constructor(engine, build, onDispose) {
    this.#engine = engine;
    this.#onDispose = onDispose;
    const checkAlive = () => this.#checkAlive();
    /** @readonly */
    this.build = build;
    /** @readonly */
    this.threads = engine.threads;
    /** @readonly */
    this.target = engine.target;
    /** @readonly */
    this.gemmKernel = engine.gemmKernel;
    // The book's modules, bound to this runtime's generator and engine
    // (nn/modules.mjs's header lists what they need), one member each.
    const skipping = this.#skipInit;
    const modules = defineModules({
      generator: this.#generator,
      checkAlive,
      alive: () => !this.#disposed && !engine.disposed,
      get skipInit() {
        return skipping.on;
      },
      layerForward: engine.layerForward.bind(engine),
      layerBackward: engine.layerBackward.bind(engine),
      linearForward: engine.linearForward.bind(engine),
      linearBackward: engine.linearBackward.bind(engine),
      storeWeights: engine.storeWeights.bind(engine),
      storedValues: engine.storedValues.bind(engine),
      freeWeights: engine.freeBlock.bind(engine),
      normForward: engine.normForward.bind(engine),
      normBackward: engine.normBackward.bind(engine),
      activation: engine.activation.bind(engine),
      activationBackward: engine.activationBackward.bind(engine),
      createCache: (/** @type {import('./engine/engine.d.ts').CacheLayout} */ layout) =>
        this.#track(new KVCache(engine, this.#generator, layout, checkAlive)),
    });
    /** @readonly */
    this.Module = modules.Module;
    /** @readonly */
    this.ModuleList = modules.ModuleList;
    /** @readonly */
    this.Sequential = modules.Sequential;
    /** @readonly */
    this.Linear = modules.Linear;
    /** @readonly */
    this.Embedding = modules.Embedding;
    /** @readonly */
    this.SelfAttention = modules.SelfAttention;
    /** @readonly */
    this.CausalAttention = modules.CausalAttention;
    /** @readonly */
    this.MultiHeadAttentionWrapper = modules.MultiHeadAttentionWrapper;
    /** @readonly */
    this.MultiHeadAttention = modules.MultiHeadAttention;
    /** @readonly */
    this.GroupedQueryAttention = modules.GroupedQueryAttention;
    /** @readonly */
    this.LayerNorm = modules.LayerNorm;
    /** @readonly */
    this.RMSNorm = modules.RMSNorm;
    /** @readonly */
    this.GELU = modules.GELU;
    /** @readonly */
    this.SiLU = modules.SiLU;
    /** @readonly */
    this.Dropout = modules.Dropout;
    /** @readonly */
    this.FeedForward = modules.FeedForward;
    /** @readonly */
    this.TransformerBlock = modules.TransformerBlock;
    /** @readonly */
    this.GPTModel = modules.GPTModel;
    /** @readonly */
    this.GatedFeedForward = modules.GatedFeedForward;
    /** @readonly */
    this.Llama3TransformerBlock = modules.Llama3TransformerBlock;
    /** @readonly */
    this.Llama3Model = modules.Llama3Model;
    /** @readonly */
    this.optim = Object.freeze({
      SGD,
      AdamW: bindAdamW((...args) => {
        checkAlive();
        engine.adamWUpdate(...args);
      }),
    });
    Object.freeze(this);
  }

  /**
   * Q-, K- and V-composition scores (Elhage et al. 2021) from every head of
   * `earlier` into every head of `later` (attention modules with out_proj),
   * each [earlier heads, later heads] row-major (nn/circuits.mjs).
   * @param {unknown} earlier
   * @param {unknown} later
   * @param {unknown} [options]  { earlierScale?, laterScale? }: the norms' weights before each, folded in
   * @returns {{ q: Float32Array, k: Float32Array, v: Float32Array }}
   */
  compositionScores(earlier, later, options) {
    this.#checkAlive();
    const a = checkCircuitModule('earlier', earlier);
    const b = checkCircuitModule('later', later);
    const o = /** @type {{ earlierScale?: unknown, laterScale?: unknown }} */ (checkOptionNames('options',
      /** @type {object | undefined} */ (options), ['earlierScale', 'laterScale']));
    const scale = (/** @type {string} */ name, /** @type {unknown} */ s, /** @type {number} */ dIn) =>
      (s === undefined ? null : checkTensor(`options.${name}`, s, dIn, `the module's dIn ${dIn}`));
    return compositionScores(this.#engine, foldScale(a, scale('earlierScale', o.earlierScale, a.dIn)),
      foldScale(b, scale('laterScale', o.laterScale, b.dIn)));
  }

  /**
   * A language model's logit lens on one sequence and, with
   * options.targets, each head's direct logit attribution (nn/model-lens.mjs).
   * @param {unknown} model
   * @param {unknown} idx
   * @param {unknown} [options]
   */
  logitLens(model, idx, options) {
    this.#checkAlive();
    return logitLens(checkLensModel(model), idx, options);
  }

  /**
   * A head's QK and OV circuits over chosen tokens, norms' scales folded (nn/model-lens.mjs).
   * @param {unknown} model
   * @param {unknown} layer
   * @param {unknown} head
   * @param {unknown} tokens
   */
  headCircuits(model, layer, head, tokens) {
    this.#checkAlive();
    return headCircuits(this.#engine, checkLensModel(model), layer, head, tokens);
  }

  /**
   * Reads a .safetensors file (models/safetensors.mjs): tensors by name,
   * F32 / F16 / BF16 decoded to float32.
   * @param {ArrayBuffer | Uint8Array} bytes
   */
  readSafetensors(bytes) {
    return readSafetensors(bytes);
  }

  /**
   * A pretrained model from Hugging Face files: config.json (object or
   * text) and one or more .safetensors shards (bytes, or readSafetensors'
   * results). model_type 'gpt2' → a GPTModel, 'llama' → a Llama3Model, the
   * weights mapped as the book's loaders do; returned in eval mode, its
   * Linears' weights stored as options.weightsDtype (model.quantize()).
   * Every problem is found before anything is loaded.
   * @param {{ config: object | string, safetensors: ArrayBuffer | Uint8Array | ReturnType<typeof readSafetensors>
   *   | ReadonlyArray<ArrayBuffer | Uint8Array | ReturnType<typeof readSafetensors>>,
   *   weightsDtype?: 'float32' | 'bfloat16' | 'int8' }} options
   */
  loadPretrained(options) {
    this.#checkAlive();
    const o = checkOptionNames('options', options, ['config', 'safetensors', 'weightsDtype']);
    const weightsDtype = checkWeightsDtype('options.weightsDtype', o.weightsDtype ?? 'float32');
    const s = o.safetensors;
    if (s === undefined || (Array.isArray(s) && s.length === 0)) {
      throw new TypeError('options.safetensors must be the .safetensors file\'s bytes (or an array of shards), got ' +
        `${s === undefined ? 'undefined' : 'an empty array'}`);
    }
    const shards = /** @type {any[]} */ (Array.isArray(s) ? s : [s]).map((shard) =>
      shard && typeof shard === 'object' && 'tensors' in shard ? shard : readSafetensors(shard));
    const { family, cfg, stateDict } = mapCheckpoint(/** @type {any} */ (o.config), shards);
    const values = Object.fromEntries(Object.entries(stateDict).map(([name, t]) => [name, t.data]));
    // Built without drawing initial values (every one is loaded next).
    this.#skipInit.on = true;
    try {
      if (family === 'gpt2') return new this.GPTModel(cfg).loadStateDict(values).eval().quantize(weightsDtype);
      const { tie_word_embeddings: _, ...llama } = /** @type {any} */ (cfg);
      return new this.Llama3Model(llama).loadStateDict(values).eval().quantize(weightsDtype);
    } finally {
      this.#skipInit.on = false;
    }
  }

  /** @returns {number} */
  get memoryBytes() {
    this.#checkAlive();
    return this.#engine.memoryBytes();
  }

  /**
   * @param {number | bigint} seed
   * @returns {this}
   */
  manualSeed(seed) {
    this.#checkAlive();
    checkSeed('seed', seed);
    this.#generator.seed(seed);
    return this;
  }

  /**
   * @param {number} low
   * @param {number} high
   * @param {number[]} shape
   * @returns {Int32Array}
   */
  randint(low, high, shape) {
    this.#checkAlive();
    checkInteger('low', low, -(2 ** 31));
    checkInteger('high', high, low + 1);
    if (high > 2 ** 31) throw new RangeError(`high must be at most 2^31, got ${high}`);
    const dims = checkShape('shape', shape, 1, 8);
    const n = product(...dims);
    if (!(n <= 2 ** 28)) throw new RangeError(`randint: at most 2^28 values, got shape [${dims.join(', ')}]`);
    // PyTorch's CPU generator: random() % range + low.
    const range = high - low;
    const out = new Int32Array(n);
    for (let i = 0; i < n; i++) out[i] = (this.#generator.nextUint32() % range) + low;
    return out;
  }

  /**
   * @param {Float32Array} logits
   * @param {Int32Array | Uint32Array | number[]} targets
   * @param {CrossEntropyOptions} [options]
   * @returns {CrossEntropyResult}
   */
  crossEntropy(logits, targets, options) {
    this.#checkAlive();
    return crossEntropy(logits, targets, options);
  }

  /**
   * @param {...(number | number[])} dims
   * @returns {Float32Array}
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

  /**
   * @param {number} headDim
   * @returns {number}
   */
  defaultScale(headDim) {
    this.#checkAlive();
    checkInteger('headDim', headDim);
    return this.#engine.defaultScale(headDim);
  }

  /**
   * @overload
   * @param {Float32Array} q
   * @param {Float32Array} k
   * @param {Float32Array} v
   * @param {AttentionOptions & { returnWeights: true }} options
   * @returns {import('./index.js').AttentionResultWithWeights}
   */
  /**
   * @overload
   * @param {Float32Array} q
   * @param {Float32Array} k
   * @param {Float32Array} v
   * @param {AttentionOptions} options
   * @returns {AttentionResult}
   */
  /**
   * @param {Float32Array} q
   * @param {Float32Array} k
   * @param {Float32Array} v
   * @param {AttentionOptions} options
   * @returns {AttentionResult}
   */
  attention(q, k, v, options) {
    return this.#attention('attention', q, k, v, options);
  }

  /**
   * @param {KVCacheOptions} options
   * @returns {KVCache}
   */
  createKVCache(options) {
    this.#checkAlive();
    return this.#track(new KVCache(this.#engine, this.#generator, resolveCacheLayout(options),
      () => this.#checkAlive()));
  }

  /**
   * @overload
   * @param {Float32Array} q
   * @param {Float32Array} k
   * @param {Float32Array} v
   * @param {AttentionOptions & { returnWeights: true }} options
   * @returns {import('./index.js').AttentionResultWithWeights}
   */
  /**
   * @overload
   * @param {Float32Array} q
   * @param {Float32Array} k
   * @param {Float32Array} v
   * @param {AttentionOptions} options
   * @returns {AttentionResult}
   */
  /**
   * @param {Float32Array} q
   * @param {Float32Array} k
   * @param {Float32Array} v
   * @param {AttentionOptions} options
   * @returns {AttentionResult}
   */
  attentionReference(q, k, v, options) {
    return this.#attention('attentionReference', q, k, v, options);
  }

  /**
   * @param {Float32Array} gradOutput
   * @param {Float32Array} q
   * @param {Float32Array} k
   * @param {Float32Array} v
   * @param {Float32Array} output
   * @param {Float32Array} logSumExp
   * @param {AttentionComputation} options
   * @returns {AttentionGradients}
   */
  attentionBackward(gradOutput, q, k, v, output, logSumExp, options) {
    return this.#backward('attentionBackward', gradOutput, q, k, v, output, logSumExp, options);
  }

  /**
   * @param {Float32Array} gradOutput
   * @param {Float32Array} q
   * @param {Float32Array} k
   * @param {Float32Array} v
   * @param {Float32Array} output
   * @param {Float32Array} logSumExp
   * @param {AttentionComputation} options
   * @returns {AttentionGradients}
   */
  attentionBackwardReference(gradOutput, q, k, v, output, logSumExp, options) {
    return this.#backward('attentionBackwardReference', gradOutput, q, k, v, output, logSumExp, options);
  }

  /**
   * Ends this runtime: its KV caches are freed and every later use of it, its
   * modules and its caches throws. The engine underneath is disposed with
   * the last runtime that shares it.
   */
  dispose() {
    if (this.#disposed) return;
    this.#disposed = true;
    for (const ref of this.#caches) ref.deref()?.dispose();
    this.#caches.clear();
    this.#onDispose();
  }

  [Symbol.dispose]() {
    this.dispose();
  }

  /** Throws once this runtime (or, for good measure, its engine) has been disposed. */
  #checkAlive() {
    if (this.#disposed) {
      throw new TypeError('this causal-attention runtime has been disposed; call init() for a new one');
    }
    this.#engine.checkAlive();
  }

  /**
   * @param {KVCache} cache
   * @returns {KVCache}
   */
  #track(cache) {
    const ref = new WeakRef(cache);
    this.#caches.add(ref);
    this.#forgetCache.register(cache, ref);
    return cache;
  }

  /**
   * @param {'attention' | 'attentionReference'} fn
   * @param {Float32Array} q
   * @param {Float32Array} k
   * @param {Float32Array} v
   * @param {AttentionOptions} options
   * @returns {AttentionResult}
   */
  #attention(fn, q, k, v, options) {
    this.#checkAlive();
    return this.#engine.attention(fn, resolveAttentionCall(q, k, v, options, this.#generator), q, k, v);
  }

  /**
   * @param {'attentionBackward' | 'attentionBackwardReference'} fn
   * @param {Float32Array} gradOutput
   * @param {Float32Array} q
   * @param {Float32Array} k
   * @param {Float32Array} v
   * @param {Float32Array} output
   * @param {Float32Array} logSumExp
   * @param {AttentionComputation} options
   * @returns {AttentionGradients}
   */
  #backward(fn, gradOutput, q, k, v, output, logSumExp, options) {
    this.#checkAlive();
    const c = resolveBackwardCall(gradOutput, q, k, v, output, logSumExp, options);
    return this.#engine.attentionBackward(fn, c, gradOutput, q, k, v, output, logSumExp);
  }
}

/**
 * The shape of one attention computation from its options (`o`, the
 * checked `options`), and q, k, v checked against it. Throws
 * TypeError/RangeError; never touches wasm.
 * @param {Record<string, any>} o
 * @param {unknown} options
 * @param {Float32Array} q
 * @param {Float32Array} k
 * @param {Float32Array} v
 * @returns {ShapeFields} a dense layout: kvCapacity is the core's default
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
  return { batch, heads, queryLength, keyLength, headDim, valueDim, kvHeads };
}

/**
 * Validates and normalises one attention call. Throws TypeError/RangeError;
 * never touches wasm.
 * @param {Float32Array} q
 * @param {Float32Array} k
 * @param {Float32Array} v
 * @param {AttentionOptions | undefined} options
 * @param {MT19937} generator
 * @returns {AttentionCall}
 */
function resolveAttentionCall(q, k, v, options, generator) {
  const o = checkOptionNames('options', options, ATTENTION_OPTIONS);
  const shape = resolveAttentionShape(o, options, q, k, v);
  // Completed in place: an object spread here cost more than the rest of a small call.
  const c = /** @type {AttentionCall} */ (resolveAttentionOutputs('options', o, shape, generator));
  c.returnLogSumExp = checkBoolean('options.returnLogSumExp', o.returnLogSumExp ?? false);
  c.rowsLength = product(shape.batch, shape.heads, shape.queryLength);
  c.options.scoreStage = resolveReturnScores('options', o.returnScores, shape, c.weightsLength);
  return c;
}

/**
 * Validates one backward call (the forward's options, its results).
 * @param {Float32Array} gradOutput
 * @param {Float32Array} q
 * @param {Float32Array} k
 * @param {Float32Array} v
 * @param {Float32Array} output
 * @param {Float32Array | null | undefined} logSumExp
 * @param {AttentionComputation | undefined} options
 * @returns {{ shape: ShapeFields, options: CoreAttentionOptions,
 *   arrays: import('./engine/engine.d.ts').VisibilityArrays | null }}
 */
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
  const core = resolveAttentionOptions('options', o, null);
  const { fields, arrays } = resolveVisibility('options', o, shape, renormalizes(o));
  return { shape, options: { ...core, ...fields }, arrays };
}
