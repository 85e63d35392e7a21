// ca.createKVCache()'s KVCache (index.d.ts describes it): keys and values
// resident in one block of the module's heap (src/attention/attention.h's kv_capacity
// layout), so that a decode step copies only q in and the output out.
//
// The modules keep their useCache state in one of these too; they reach its
// internals through the symbols below, which the package does not export.
// The block's pointers and every copy in and out of it are the engine
// layer's (engine.mjs); this class keeps the bookkeeping and checks the
// caller.
//
// Bookkeeping per sequence b: rows[b] rows held (rows [0, rows[b]) of each
// of its KV heads), and, in a window cache, start[b] tokens dropped before
// row 0, so that sequence b has length start[b] + rows[b] and row r holds
// position start[b] + r. Attention reads relative positions only: each
// sequence's queries are its newest tokens (bottom-right per sequence, the
// kernel's keyLengths = rows), and a window { left: W − 1 } gives the same
// visibility on rows as on positions, as long as each query's W − 1 keys
// before it are held. A window cache keeps that true by compacting a
// sequence (moving its newest W − 1 rows to the front) when an append
// would not fit: capacity ≥ W − 1 + the longest chunk appended.

import { KV_DTYPE } from '../engine/codes.mjs';
import {
  checkBoolean, checkIndices, checkInteger, checkKvGroups, checkOptionNames, checkTensor, describe,
} from './validate.mjs';
import { product } from '../engine/heap.mjs';
import { resolveAttentionOutputs } from './attention-options.mjs';

/** The core's KVCacheView of a cache (src/model/layer.h), for a layer forward. */
export const CACHE_VIEW = Symbol('KVCache view');
/** Advances the length after a layer forward wrote rows in place. */
export const CACHE_ADVANCE = Symbol('KVCache advance');
/** Moves the cache into a block of a larger capacity (the modules' growth). */
export const CACHE_RESERVE = Symbol('KVCache reserve');
/** Rows held per sequence of a module's cache (all sequences hold the same). */
export const CACHE_ROWS = Symbol('KVCache rows');
/** A window cache keeps only each sequence's newest W − 1 rows (the modules' room-making). */
export const CACHE_COMPACT = Symbol('KVCache compact');

const LAYOUT_OPTIONS = ['batch', 'kvHeads', 'headDim', 'valueDim', 'capacity', 'window', 'dtype'];
const ATTENTION_OPTIONS = [
  'heads', 'queryLength', 'causal', 'maskStrategy', 'scale', 'dropout', 'training', 'seed',
  'returnWeights', 'returnLogSumExp', 'out', 'weightsOut', 'window', 'softcap', 'sinks', 'mask', 'maskShape',
  'precision',
];

/**
 * createKVCache's options, checked.
 * @param {import('./attention.d.ts').KVCacheOptions | undefined} options
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
  if (o.window === undefined) return { batch, kvHeads, headDim, valueDim, capacity, dtype };
  const window = checkInteger('options.window', o.window);
  if (capacity < window) {
    throw new RangeError(`options.capacity must be at least options.window ${window} (the window's W − 1 = ` +
      `${window - 1} newest tokens plus a chunk of at least 1), got ${capacity}`);
  }
  return { batch, kvHeads, headDim, valueDim, capacity, window, dtype };
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

/**
 * A call's `sequences`: distinct indices in [0, batch), at least one; all
 * of them, in order, when left out.
 * @param {string} name
 * @param {unknown} value
 * @param {number} batch
 * @returns {Int32Array}
 */
function resolveSequences(name, value, batch) {
  if (value === undefined) return Int32Array.from({ length: batch }, (_, b) => b);
  const ids = checkIndices(name, value, batch);
  if (ids.length === 0) {
    throw new RangeError(`${name} must list at least one sequence, got an empty list`);
  }
  const seen = new Set();
  ids.forEach((id, i) => {
    if (seen.has(id)) throw new RangeError(`${name} must not repeat a sequence, got ${id} again at [${i}]`);
    seen.add(id);
  });
  return ids;
}

/** @typedef {import('../engine/engine.d.ts').CacheLayout} CacheLayout */
/** @typedef {import('../engine/engine.d.ts').CacheBlock} CacheBlock */

// Frees the wasm block of a cache that was garbage-collected undisposed.
const registry = new FinalizationRegistry((/** @type {() => void} */ release) => release());

export class KVCache {
  /** @type {import('../engine/engine.mjs').Engine} */
  #engine;
  /** @type {import('./random.mjs').MT19937} */
  #generator;
  /** @type {() => void} */
  #checkAlive;
  /** @type {CacheBlock | null} */
  #block = null;
  /** @type {Readonly<CacheLayout>} the block's; kept after dispose() for the getters */
  #layout;
  /** W of a window cache, 0 for none. */
  #window;
  /** @type {Int32Array} rows held per sequence */
  #rows;
  /** @type {Float64Array} tokens a window cache dropped per sequence (row 0's position) */
  #start;
  #disposed = false;

  /**
   * Built by the runtime (createKVCache, the modules' createCache).
   * @param {import('../engine/engine.mjs').Engine} engine
   * @param {import('./random.mjs').MT19937} generator draws dropout seeds
   * @param {CacheLayout} layout checked (resolveCacheLayout)
   * @param {() => void} [checkAlive] throws once its runtime is disposed (default: the engine's check)
   */
  constructor(engine, generator, layout, checkAlive = () => engine.checkAlive()) {
    checkAlive();
    this.#checkAlive = checkAlive;
    this.#engine = engine;
    this.#generator = generator;
    this.#layout = this.#allocate(layout).layout;
    this.#window = layout.window ?? 0;
    this.#rows = new Int32Array(layout.batch);
    this.#start = new Float64Array(layout.batch);
  }

  /** @returns {number} the longest sequence's length */
  get length() {
    this.#live();
    return longest(this.#lengths());
  }

  /** @returns {Int32Array} each sequence's length (a copy) */
  get lengths() {
    this.#live();
    return Int32Array.from(this.#lengths());
  }

  /** @returns {number | null} */
  get window() {
    return this.#window || null;
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
   * @param {import('./attention.d.ts').KVCacheAppendOptions} [options]
   * @returns {this}
   */
  append(k, v, options) {
    const block = this.#live();
    const o = checkOptionNames('options', options, ['sequences']);
    const { batch, kvHeads, headDim, valueDim, capacity } = this.#layout;
    const sequences = resolveSequences('options.sequences', o.sequences, batch);
    const n = sequences.length;
    const perToken = n * kvHeads * headDim;
    const heads = o.sequences === undefined
      ? `batch ${batch} × kvHeads ${kvHeads}` : `sequences.length ${n} × kvHeads ${kvHeads}`;
    if (!(k instanceof Float32Array)) {
      throw new TypeError(`k must be a Float32Array, got ${describe(k)}`);
    }
    if (k.length === 0 || k.length % perToken !== 0) {
      throw new RangeError(
        `k must have a length that is a positive multiple of ${heads} × headDim ${headDim} ` +
        `= ${perToken} (one token per ${perToken} values), got length ${k.length}`);
    }
    const t = k.length / perToken;
    checkTensor('v', v, product(n, kvHeads, t, valueDim),
      `${heads} × ${t} tokens (from k) × valueDim ${valueDim}`);
    const W = this.#window;
    if (W && t > capacity - (W - 1)) {
      throw new RangeError(
        `append of ${t} tokens is longer than this window cache takes: its capacity ${capacity} holds the ` +
        `window's W − 1 = ${W - 1} newest tokens plus a chunk of at most ${capacity - (W - 1)} ` +
        `(capacity ≥ W − 1 + the longest chunk appended)`);
    }
    for (const s of sequences) {
      if (W || t <= capacity - this.#rows[s]) continue;
      const which = batch === 1 ? 'it holds' : `sequence ${s} holds`;
      throw new RangeError(
        `append of ${t} tokens would hold ${this.#rows[s] + t}, past the cache's capacity ` +
        `${capacity} (${which} ${this.#rows[s]})`);
    }
    // Checked: from here nothing throws. A window cache makes room first.
    for (const s of sequences) {
      if (this.#rows[s] + t > capacity) this.#keepNewest(block, s, W - 1);
    }
    this.#engine.appendToCache(block, sequences, Array.from(sequences, (s) => this.#rows[s]), k, v);
    for (const s of sequences) this.#rows[s] += t;
    return this;
  }

  /**
   * @overload
   * @param {Float32Array} q
   * @param {import('./attention.d.ts').KVCacheAttentionOptions & { returnWeights: true }} options
   * @returns {import('./attention.d.ts').AttentionResultWithWeights}
   */
  /**
   * @overload
   * @param {Float32Array} q
   * @param {import('./attention.d.ts').KVCacheAttentionOptions} options
   * @returns {import('./attention.d.ts').AttentionResult}
   */
  /**
   * @param {Float32Array} q
   * @param {import('./attention.d.ts').KVCacheAttentionOptions} options
   * @returns {import('../engine/engine.d.ts').AttentionResult}
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
    const keyLength = longest(this.#rows);
    if (keyLength === 0) {
      throw new RangeError('the cache is empty (length 0): append keys and values before attention');
    }
    checkTensor('q', q, product(batch, heads, queryLength, headDim),
      `batch ${batch} × heads ${heads} × queryLength ${queryLength} × headDim ${headDim}`);
    const shape = {
      batch, heads, queryLength, keyLength, headDim, valueDim, kvHeads, kvCapacity: capacity,
      kvDtype: KV_DTYPE.get(dtype),
    };
    // The queries are each sequence's newest tokens: the mask's bottom-right
    // alignment, per sequence when their lengths differ.
    const visibility = { causal: o.causal ?? 'bottom-right' };
    if (this.#rows.some((r) => r !== keyLength)) Object.assign(visibility, { keyLengths: this.#rows });
    if (this.#window) Object.assign(visibility, this.#windowRules(o, queryLength));
    const call = /** @type {import('../engine/engine.d.ts').AttentionCall} */ (resolveAttentionOutputs('options',
      { ...o, ...visibility }, shape, this.#generator));
    // The log-sum-exp of each row, as ca.attention gives it: split decodes
    // over several caches merge their outputs with it.
    call.returnLogSumExp = checkBoolean('options.returnLogSumExp', o.returnLogSumExp ?? false);
    call.rowsLength = product(batch, heads, queryLength);
    return this.#engine.attendCache(call, q, block);
  }

  /**
   * @param {number} n
   * @param {import('./attention.d.ts').KVCacheTruncateOptions} [options]
   * @returns {this}
   */
  truncate(n, options) {
    this.#live();
    const o = checkOptionNames('options', options, ['sequences']);
    checkInteger('n', n, 0);
    const sequences = resolveSequences('options.sequences', o.sequences, this.#layout.batch);
    const lengths = this.#lengths();
    for (const s of sequences) {
      if (n > lengths[s]) {
        const whose = this.#layout.batch === 1 ? "the cache's" : `sequence ${s}'s`;
        throw new RangeError(`n must be at most ${whose} length ${lengths[s]}, got ${n}`);
      }
      this.#checkHeld('n', n, s);
    }
    for (const s of sequences) {
      if (n === 0) this.#start[s] = 0;
      this.#rows[s] = n - this.#start[s];
    }
    return this;
  }

  /** @returns {this} */
  reset() {
    return this.truncate(0);
  }

  /**
   * Sequence `to` becomes the first `length` tokens of sequence `from`
   * (default: all of it): a prompt's cache forked.
   * @param {number} from
   * @param {number} to
   * @param {import('./attention.d.ts').KVCacheCopyOptions} [options]
   * @returns {this}
   */
  copySequence(from, to, options) {
    const block = this.#live();
    const o = checkOptionNames('options', options, ['length']);
    const { batch } = this.#layout;
    for (const [name, value] of /** @type {const} */ ([['from', from], ['to', to]])) {
      checkInteger(name, value, 0);
      if (value >= batch) throw new RangeError(`${name} must be a sequence index in [0, ${batch}), got ${value}`);
    }
    if (from === to) {
      throw new RangeError(`to must differ from from: a sequence cannot be copied onto itself, got ${from} and ${to}`);
    }
    const full = this.#lengths()[from];
    const length = o.length === undefined ? full : checkInteger('options.length', o.length, 0);
    if (length > full) {
      throw new RangeError(`options.length must be at most sequence ${from}'s length ${full}, got ${length}`);
    }
    this.#checkHeld('options.length', length, from);
    this.#start[to] = length === 0 ? 0 : this.#start[from];
    this.#rows[to] = length - this.#start[to];
    this.#engine.copyRows(block, from, 0, block, to, 0, this.#rows[to]);
    return this;
  }

  dispose() {
    const block = this.#block;
    if (this.#disposed || !block) return;
    this.#disposed = true;
    registry.unregister(block);
    this.#engine.freeBlock(block);
    this.#block = null;
  }

  [Symbol.dispose]() {
    this.dispose();
  }

  /** @returns {import('../engine/embind.mjs').KVCacheView} */
  [CACHE_VIEW]() {
    return this.#engine.cacheView(this.#live(), this.#rows[0], this.#start[0]);
  }

  /** @param {number} tokens */
  [CACHE_ADVANCE](tokens) {
    for (let s = 0; s < this.#rows.length; s++) this.#rows[s] += tokens;
  }

  /** @returns {number} */
  get [CACHE_ROWS]() {
    return this.#rows[0];
  }

  [CACHE_COMPACT]() {
    const block = this.#live();
    for (let s = 0; s < this.#rows.length; s++) this.#keepNewest(block, s, this.#window - 1);
  }

  /** @param {number} capacity */
  [CACHE_RESERVE](capacity) {
    const old = this.#live();
    const block = this.#allocate({ ...old.layout, capacity }); // throws before changing anything
    this.#layout = block.layout;
    registry.unregister(old);
    this.#rows.forEach((rows, s) => this.#engine.copyRows(old, s, 0, block, s, 0, rows));
    this.#engine.freeBlock(old);
  }

  /** @returns {number[]} each sequence's length: dropped tokens and rows held */
  #lengths() {
    return Array.from(this.#rows, (rows, s) => this.#start[s] + rows);
  }

  /**
   * A window cache's attention: its own window, and each sequence's W − 1
   * keys before its first query held.
   * @param {{ window?: unknown, mask?: unknown, causal?: unknown }} o
   * @param {number} queryLength
   */
  #windowRules(o, queryLength) {
    const W = this.#window;
    for (const name of /** @type {const} */ (['window', 'mask'])) {
      if (o[name] !== undefined) {
        throw new RangeError(`options.${name} is not taken by a window cache: it applies its own window ` +
          `{ left: ${W - 1} } over the tokens it holds`);
      }
    }
    if (o.causal !== undefined && o.causal !== 'bottom-right') {
      throw new RangeError(`options.causal of a window cache must be 'bottom-right' (its queries are each ` +
        `sequence's newest tokens), got ${describe(o.causal)}`);
    }
    this.#lengths().forEach((length, s) => {
      const need = Math.min(length, queryLength + W - 1);
      if (this.#rows[s] < need) {
        throw new RangeError(`options.queryLength ${queryLength} needs the ${need} newest keys of sequence ${s} ` +
          `(its queries and the window's W − 1 = ${W - 1} before them), but this window cache holds ` +
          `${this.#rows[s]} of them: after making room it keeps W − 1 plus the chunk appended`);
      }
    });
    return { window: { left: W - 1 } };
  }

  /**
   * Throws unless cutting sequence s to n tokens leaves what a window cache
   * needs to go on: the W − 1 tokens before position n.
   * @param {string} name
   * @param {number} n
   * @param {number} s
   */
  #checkHeld(name, n, s) {
    const W = this.#window;
    if (!W || n === 0 || this.#start[s] <= Math.max(0, n - (W - 1))) return;
    throw new RangeError(`${name} must be 0 or at least ${this.#start[s] + W - 1} for sequence ${s}: this window ` +
      `cache dropped its first ${this.#start[s]} tokens, and going on from n tokens needs the W − 1 = ${W - 1} ` +
      `before n, got ${n}`);
  }

  /**
   * Moves sequence s's newest `keep` rows (or all it holds) to its front.
   * @param {CacheBlock} block
   * @param {number} s
   * @param {number} keep
   */
  #keepNewest(block, s, keep) {
    const drop = Math.max(0, this.#rows[s] - keep);
    if (drop === 0) return;
    this.#engine.copyRows(block, s, drop, block, s, 0, this.#rows[s] - drop);
    this.#rows[s] -= drop;
    this.#start[s] += drop;
  }

  /**
   * @param {CacheLayout} layout
   * @returns {CacheBlock}
   */
  #allocate(layout) {
    const engine = this.#engine;
    const block = engine.allocateCache(layout);
    this.#block = block;
    registry.register(this, () => engine.freeBlock(block), block);
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

/**
 * The largest of `lengths` (0 for none): a loop, not `Math.max(...lengths)`,
 * which passes every element as an argument and overflows the stack for a
 * batch of a few hundred thousand sequences.
 * @param {ArrayLike<number>} lengths
 */
function longest(lengths) {
  let max = 0;
  for (let i = 0; i < lengths.length; i++) if (lengths[i] > max) max = lengths[i];
  return max;
}
