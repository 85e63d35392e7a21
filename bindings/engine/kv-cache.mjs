// A key/value cache resident in wasm memory, for generating token by token:
// keys [batch, kvHeads, capacity, headDim] and values [batch, kvHeads,
// capacity, valueDim] in one block of the module's heap (src/attention.h's
// kv_capacity layout), of which the first `length` rows per KV head are
// held. append() copies new rows in (once); attention() sends only q in and
// the output out: the cache itself is never copied per step.
//
// The modules keep their useCache state in one of these too; they reach its
// internals through the symbols below, which the package does not export.

import { formatBytes } from './heap.mjs';
import {
  checkInteger, checkKvGroups, checkOptionNames, checkTensor, describe, product,
  resolveAttentionOutputs,
} from './validate.mjs';

/** The core's KVCacheView of a cache (src/layer.h), for a layer forward. */
export const CACHE_VIEW = Symbol('KVCache view');
/** Advances the length after a layer forward wrote rows in place. */
export const CACHE_ADVANCE = Symbol('KVCache advance');
/** Moves the cache into a block of a larger capacity (the modules' growth). */
export const CACHE_RESERVE = Symbol('KVCache reserve');

const LAYOUT_OPTIONS = ['batch', 'kvHeads', 'headDim', 'valueDim', 'capacity'];
const ATTENTION_OPTIONS = [
  'heads', 'queryLength', 'causal', 'maskStrategy', 'scale', 'dropout', 'training', 'seed',
  'returnWeights', 'out', 'weightsOut',
];

/** createKVCache's options, checked: { batch, kvHeads, headDim, valueDim, capacity }. */
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
  return { batch, kvHeads, headDim, valueDim, capacity };
}

// Frees the wasm block of a cache that was garbage-collected undisposed.
const registry = new FinalizationRegistry((release) => release());

export class KVCache {
  #engine;
  #layout;
  #block = null; // { ptr, base } from the heap
  #length = 0;
  #disposed = false;

  /**
   * `engine`: { heap (bindings/engine/heap.mjs), checkAlive(), attention(call, q,
   * keysPtr, valuesPtr) -> { output, weights? }, generator }.
   * Use ca.createKVCache(options); not constructed directly.
   */
  constructor(engine, layout) {
    engine.checkAlive();
    this.#engine = engine;
    this.#layout = Object.freeze({ ...layout });
    this.#allocate(layout.capacity);
  }

  /** Tokens held per sequence (rows per KV head). */
  get length() {
    this.#checkAlive();
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

  /** Whether dispose() has run. */
  get disposed() {
    return this.#disposed;
  }

  /**
   * Appends t tokens: k [batch, kvHeads, t, headDim], v [batch, kvHeads, t,
   * valueDim], t inferred from k's length. Past capacity: a RangeError, and
   * nothing changes. Returns the cache.
   */
  append(k, v) {
    this.#checkAlive();
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
    const f32 = this.#engine.heap.f32();
    const base = [this.#block.base >>> 2, this.#valuesBase() >>> 2];
    const widths = [headDim, valueDim];
    [k, v].forEach((src, i) => {
      const w = widths[i];
      for (let h = 0; h < batch * kvHeads; h++) {
        f32.set(src.subarray(h * t * w, (h + 1) * t * w), base[i] + (h * capacity + this.#length) * w);
      }
    });
    this.#length += t;
    return this;
  }

  /**
   * Attention of q [batch, heads, queryLength, headDim] over every cached
   * key, without copying the cache. heads is a multiple of kvHeads (query
   * head h reads KV head ⌊h / (heads / kvHeads)⌋). Options as
   * ca.attention's (causal defaults to 'bottom-right': the queries are the
   * newest tokens), minus the sizes the cache fixes.
   */
  attention(q, options) {
    this.#checkAlive();
    const o = checkOptionNames('options', options, ATTENTION_OPTIONS);
    if (options === undefined) {
      throw new TypeError('options must be an object with at least heads and queryLength, got undefined');
    }
    const { batch, kvHeads, headDim, valueDim, capacity } = this.#layout;
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
    };
    const call = resolveAttentionOutputs('options', { ...o, causal: o.causal ?? 'bottom-right' }, shape,
      this.#engine.generator);
    return this.#engine.attention(call, q, this.#block.base, this.#valuesBase());
  }

  /** Keeps the first n tokens (0 <= n <= length). Returns the cache. */
  truncate(n) {
    this.#checkAlive();
    checkInteger('n', n, 0);
    if (n > this.#length) {
      throw new RangeError(`n must be at most the cache's length ${this.#length}, got ${n}`);
    }
    this.#length = n;
    return this;
  }

  /** Empties the cache (keeps its memory). Returns the cache. */
  reset() {
    return this.truncate(0);
  }

  /** Frees the cache's wasm memory. Idempotent; any later use is a TypeError. */
  dispose() {
    if (this.#disposed) return;
    this.#disposed = true;
    registry.unregister(this.#block);
    this.#engine.heap.free(this.#block.ptr);
    this.#block = null;
  }

  [Symbol.dispose]() {
    this.dispose();
  }

  [CACHE_VIEW]() {
    this.#checkAlive();
    return {
      keys: this.#block.base, values: this.#valuesBase(), capacity: this.#layout.capacity, length: this.#length,
    };
  }

  [CACHE_ADVANCE](tokens) {
    this.#length += tokens;
  }

  [CACHE_RESERVE](capacity) {
    this.#checkAlive();
    const old = { block: this.#block, layout: this.#layout };
    this.#layout = Object.freeze({ ...old.layout, capacity });
    try {
      this.#allocate(capacity);
    } catch (error) {
      this.#layout = old.layout;
      throw error;
    }
    registry.unregister(old.block);
    const f32 = this.#engine.heap.f32();
    const { batch, kvHeads, headDim, valueDim } = old.layout;
    const from = [old.block.base >>> 2, (old.block.base >>> 2) + batch * kvHeads * old.layout.capacity * headDim];
    const to = [this.#block.base >>> 2, this.#valuesBase() >>> 2];
    [headDim, valueDim].forEach((w, i) => {
      for (let h = 0; h < batch * kvHeads; h++) {
        const src = from[i] + h * old.layout.capacity * w;
        f32.copyWithin(to[i] + h * capacity * w, src, src + this.#length * w);
      }
    });
    this.#engine.heap.free(old.block.ptr);
  }

  #allocate(capacity) {
    const { batch, kvHeads, headDim, valueDim } = this.#layout;
    const bytes = product(batch, kvHeads, capacity, headDim + valueDim, 4);
    this.#block = this.#engine.heap.allocate('a KV cache', bytes,
      `${formatBytes(bytes)} of wasm memory (batch ${batch} × kvHeads ${kvHeads} × ` +
      `capacity ${capacity} × (headDim ${headDim} + valueDim ${valueDim}) × 4 bytes)`);
    const { heap } = this.#engine;
    const { ptr } = this.#block;
    registry.register(this, () => heap.free(ptr), this.#block);
  }

  #valuesBase() {
    const { batch, kvHeads, capacity, headDim } = this.#layout;
    return this.#block.base + batch * kvHeads * capacity * headDim * 4;
  }

  #checkAlive() {
    this.#engine.checkAlive();
    if (this.#disposed) {
      throw new TypeError('this KV cache has been disposed; create a new one with ca.createKVCache()');
    }
  }
}
