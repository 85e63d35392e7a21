// ca.createKVCache()'s KVCache (index.d.ts describes it): keys and values
// resident in one block of the module's heap (src/attention.h's kv_capacity
// layout), so that a decode step copies only q in and the output out.
//
// The modules keep their useCache state in one of these too; they reach its
// internals through the symbols below, which the package does not export.
// The block's pointers and every copy in and out of it are the engine
// layer's (engine.mjs); this class keeps the length and checks the caller.

import { KV_DTYPE } from './codes.mjs';
import {
  checkBoolean, checkInteger, checkKvGroups, checkOptionNames, checkTensor, describe, product,
  resolveAttentionOutputs,
} from './validate.mjs';

/** The core's KVCacheView of a cache (src/layer.h), for a layer forward. */
export const CACHE_VIEW = Symbol('KVCache view');
/** Advances the length after a layer forward wrote rows in place. */
export const CACHE_ADVANCE = Symbol('KVCache advance');
/** Moves the cache into a block of a larger capacity (the modules' growth). */
export const CACHE_RESERVE = Symbol('KVCache reserve');

const LAYOUT_OPTIONS = ['batch', 'kvHeads', 'headDim', 'valueDim', 'capacity', 'dtype'];
const ATTENTION_OPTIONS = [
  'heads', 'queryLength', 'causal', 'maskStrategy', 'scale', 'dropout', 'training', 'seed',
  'returnWeights', 'returnLogSumExp', 'out', 'weightsOut', 'window', 'softcap', 'sinks', 'mask', 'maskShape',
];

/**
 * createKVCache's options, checked.
 * @param {import('../index.js').KVCacheOptions | undefined} options
 * @returns {CacheLayout}
 */
export function resolveCacheLayout(options) {
  const o = checkOptionNames('options', options, LAYOUT_OPTIONS);
  if (options === undefined) {
    throw new TypeError('options must be an object with batch, kvHeads, headDim and capacity, got undefined');
  }
  const batch = checkInteger('options.batch', o.batch);
  const kvHeads = checkInteger('options.kvHeads', o.kvHeads);
  const headDim = checkInteger('options.headDim', o.headDim);
  const valueDim = checkInteger('options.valueDim', o.valueDim ?? headDim);
  const capacity = checkInteger('options.capacity', o.capacity);
  if (capacity > 0xffffffff) {
    throw new RangeError(`options.capacity must be at most 2^32 - 1, got ${capacity}`);
  }
  const dtype = checkCacheDtype('options.dtype', o.dtype ?? 'float32');
  return { batch, kvHeads, headDim, valueDim, capacity, dtype };
}

/**
 * A KV cache's storage type, checked: 'float32', 'bfloat16' or 'int8'.
 * @param {string} name the argument, for the message
 * @param {unknown} dtype
 * @returns {CacheLayout['dtype']}
 */
export function checkCacheDtype(name, dtype) {
  if (typeof dtype !== 'string' || !KV_DTYPE.has(dtype)) {
    throw new TypeError(`${name} must be one of ${[...KV_DTYPE.keys()].map((d) => `'${d}'`).join(', ')}, ` +
      `got ${describe(dtype)}`);
  }
  return /** @type {CacheLayout['dtype']} */ (dtype);
}

/** @typedef {import('./engine.mjs').CacheLayout} CacheLayout */
/** @typedef {import('./engine.mjs').CacheBlock} CacheBlock */

// Frees the wasm block of a cache that was garbage-collected undisposed.
const registry = new FinalizationRegistry((/** @type {() => void} */ release) => release());

export class KVCache {
  /** @type {import('./engine.mjs').Engine} */
  #engine;
  /** @type {import('../nn/random.mjs').MT19937} */
  #generator;
  /** @type {() => void} */
  #checkAlive;
  /** @type {CacheBlock | null} */
  #block = null;
  /** @type {Readonly<CacheLayout>} the block's; kept after dispose() for the getters */
  #layout;
  #length = 0;
  #disposed = false;

  /**
   * Built by the runtime (createKVCache, the modules' createCache).
   * @param {import('./engine.mjs').Engine} engine
   * @param {import('../nn/random.mjs').MT19937} generator draws dropout seeds
   * @param {CacheLayout} layout checked (resolveCacheLayout)
   * @param {() => void} [checkAlive] throws once its runtime is disposed (default: the engine's check)
   */
  constructor(engine, generator, layout, checkAlive = () => engine.checkAlive()) {
    checkAlive();
    this.#checkAlive = checkAlive;
    this.#engine = engine;
    this.#generator = generator;
    this.#layout = this.#allocate(layout).layout;
  }

  /** @returns {number} */
  get length() {
    this.#live();
    return this.#length;
  }

  get capacity() {
    return this.#layout.capacity;
  }

  get batch() {
    return this.#layout.batch;
  }

  get kvHeads() {
    return this.#layout.kvHeads;
  }

  get headDim() {
    return this.#layout.headDim;
  }

  get valueDim() {
    return this.#layout.valueDim;
  }

  /** How keys and values are stored: 'float32', 'bfloat16' or 'int8'. */
  get dtype() {
    return this.#layout.dtype;
  }

  /** Bytes of wasm memory the cache holds (0 after dispose()). */
  get bytes() {
    return this.#block?.bytes ?? 0;
  }

  get disposed() {
    return this.#disposed;
  }

  /**
   * @param {Float32Array} k
   * @param {Float32Array} v
   * @returns {this}
   */
  append(k, v) {
    const block = this.#live();
    const { batch, kvHeads, headDim, valueDim, capacity } = this.#layout;
    const perToken = batch * kvHeads * headDim;
    const heads = `batch ${batch} × kvHeads ${kvHeads}`;
    if (!(k instanceof Float32Array)) {
      throw new TypeError(`k must be a Float32Array, got ${describe(k)}`);
    }
    if (k.length === 0 || k.length % perToken !== 0) {
      throw new RangeError(
        `k must have a length that is a positive multiple of ${heads} × headDim ${headDim} ` +
        `= ${perToken} (one token per ${perToken} values), got length ${k.length}`);
    }
    const t = k.length / perToken;
    checkTensor('v', v, product(batch, kvHeads, t, valueDim),
      `${heads} × ${t} tokens (from k) × valueDim ${valueDim}`);
    if (t > capacity - this.#length) {
      throw new RangeError(
        `append of ${t} tokens would hold ${this.#length + t}, past the cache's capacity ` +
        `${capacity} (it holds ${this.#length})`);
    }
    this.#engine.appendToCache(block, this.#length, k, v);
    this.#length += t;
    return this;
  }

  /**
   * @overload
   * @param {Float32Array} q
   * @param {import('../index.js').KVCacheAttentionOptions & { returnWeights: true }} options
   * @returns {import('../index.js').AttentionResultWithWeights}
   */
  /**
   * @overload
   * @param {Float32Array} q
   * @param {import('../index.js').KVCacheAttentionOptions} options
   * @returns {import('../index.js').AttentionResult}
   */
  /**
   * @param {Float32Array} q
   * @param {import('../index.js').KVCacheAttentionOptions} options
   * @returns {import('./engine.mjs').AttentionResult}
   */
  attention(q, options) {
    const block = this.#live();
    const o = checkOptionNames('options', options, ATTENTION_OPTIONS);
    if (options === undefined) {
      throw new TypeError('options must be an object with at least heads and queryLength, got undefined');
    }
    const { batch, kvHeads, headDim, valueDim, capacity, dtype } = this.#layout;
    const heads = checkInteger('options.heads', o.heads);
    const queryLength = checkInteger('options.queryLength', o.queryLength);
    checkKvGroups("options.heads must be a multiple of the cache's kvHeads", heads, kvHeads);
    if (this.#length === 0) {
      throw new RangeError('the cache is empty (length 0): append keys and values before attention');
    }
    checkTensor('q', q, product(batch, heads, queryLength, headDim),
      `batch ${batch} × heads ${heads} × queryLength ${queryLength} × headDim ${headDim}`);
    const shape = {
      batch, heads, queryLength, keyLength: this.#length, headDim, valueDim, kvHeads, kvCapacity: capacity,
      kvDtype: KV_DTYPE.get(dtype),
    };
    // The queries are the newest tokens: the mask's bottom-right alignment.
    const call = /** @type {import('./engine.mjs').AttentionCall} */ (resolveAttentionOutputs('options',
      { ...o, causal: o.causal ?? 'bottom-right' }, shape, this.#generator));
    // The log-sum-exp of each row, as ca.attention gives it: split decodes
    // over several caches merge their outputs with it.
    call.returnLogSumExp = checkBoolean('options.returnLogSumExp', o.returnLogSumExp ?? false);
    call.rowsLength = product(batch, heads, queryLength);
    return this.#engine.attendCache(call, q, block);
  }

  /**
   * @param {number} n
   * @returns {this}
   */
  truncate(n) {
    this.#live();
    checkInteger('n', n, 0);
    if (n > this.#length) {
      throw new RangeError(`n must be at most the cache's length ${this.#length}, got ${n}`);
    }
    this.#length = n;
    return this;
  }

  /** @returns {this} */
  reset() {
    return this.truncate(0);
  }

  dispose() {
    const block = this.#block;
    if (this.#disposed || !block) return;
    this.#disposed = true;
    registry.unregister(block);
    this.#engine.freeCache(block);
    this.#block = null;
  }

  [Symbol.dispose]() {
    this.dispose();
  }

  /** @returns {import('./engine.mjs').KVCacheView} */
  [CACHE_VIEW]() {
    return this.#engine.cacheView(this.#live(), this.#length);
  }

  /** @param {number} tokens */
  [CACHE_ADVANCE](tokens) {
    this.#length += tokens;
  }

  /** @param {number} capacity */
  [CACHE_RESERVE](capacity) {
    const old = this.#live();
    const block = this.#allocate({ ...old.layout, capacity }); // throws before changing anything
    this.#layout = block.layout;
    registry.unregister(old);
    this.#engine.moveCache(old, block, this.#length);
    this.#engine.freeCache(old);
  }

  /**
   * @param {CacheLayout} layout
   * @returns {CacheBlock}
   */
  #allocate(layout) {
    const engine = this.#engine;
    const block = engine.allocateCache(layout);
    this.#block = block;
    registry.register(this, () => engine.freeCache(block), block);
    return block;
  }

  /**
   * The block, after checking that the runtime and the cache are alive.
   * @returns {CacheBlock}
   */
  #live() {
    this.#checkAlive();
    if (this.#disposed || !this.#block) {
      throw new TypeError('this KV cache has been disposed; create a new one with ca.createKVCache()');
    }
    return this.#block;
  }
}
