// The wasm heap as seen from JS: one scratch arena per module (so repeated
// calls neither leak nor fragment) that a call's inputs are staged into and
// its results copied out of, and Float32Array views re-read after
// anything that can grow memory (a grown heap detaches the old views, or,
// with shared memory, leaves them at the old length). The arena holds
// nothing between calls: a large one goes back to malloc as soon as a later
// call needs much less, or another allocation (a KV cache) needs the room,
// so memory a finished call no longer needs is reusable (wasm memory itself
// never shrinks).

/**
 * Largest heap the modules are linked for: wasm32's whole 4 GiB
 * (CMakeLists.txt CA_MAXIMUM_MEMORY). Pointers past 2 GiB are read unsigned
 * (`>>> 0`) everywhere in the engine, as in Emscripten's glue.
 */
export const MAX_WASM_BYTES = 2 ** 32;
/**
 * Largest single block (a KV cache, one call's tensors): Emscripten 3.1.6's
 * dlmalloc grows the heap by less than 2 GiB per request (sys_alloc's
 * HALF_MAX_SIZE_T), so 4 GiB hold two or more blocks, each below 2 GiB.
 */
export const MAX_BLOCK_BYTES = 2 ** 31;
const ALIGN = 64;
/**
 * Arenas up to this size are kept between calls and over-allocated by a
 * quarter, so that slowly growing shapes do not reallocate on every call;
 * a larger one is exactly the call's size and is not kept for calls that
 * need less than a quarter of it.
 */
const KEEP_BYTES = 64 * 2 ** 20;

/** @typedef {import('./embind.mjs').EmbindModule} EmbindModule */
/** @typedef {import('./embind.mjs').Ptr} Ptr */
/** @typedef {import('./engine.d.ts').Staged} Staged */

const alignUp = (/** @type {number} */ n) => Math.ceil(n / ALIGN) * ALIGN;

export class Heap {
  /** @param {EmbindModule} mod */
  constructor(mod) {
    this.mod = mod;
    /** @type {Ptr} the arena, as malloc returned it */
    this.ptr = 0;
    this.capacity = 0;
    /** @type {Float32Array | null} */
    this.sharedView = null;
    /** @type {Map<Ptr, number>} blocks of their own (allocate), by pointer: their bytes */
    this.blocks = new Map();
    /** @type {Set<Ptr>} those of them that hold stored weights */
    this.weightBlocks = new Set();
  }

  /**
   * A Float32Array over the whole current heap.
   * @returns {Float32Array}
   */
  f32() {
    const memory = this.mod.wasmMemory; // exported by the pthreads build only
    if (!memory) return this.mod.HEAPF32;
    if (!this.sharedView || this.sharedView.buffer !== memory.buffer) {
      this.sharedView = new Float32Array(memory.buffer);
    }
    return this.sharedView;
  }

  /**
   * Copies arrays into the arena in order and reserves the outputs after
   * them; null entries and 0 counts give pointer 0. The view is re-read
   * after the reservation, which may grow memory.
   * Float32Arrays go through the float view; Int32Array and Uint8Array
   * inputs (key lengths, boolean masks) through a view of their own type,
   * each in whole 4-byte slots.
   * @param {string} what
   * @param {ReadonlyArray<Staged | null | undefined>} inputs
   * @param {number[]} outputCounts
   * @returns {Ptr[]}
   */
  stage(what, inputs, outputCounts) {
    const counts = [...inputs.map((a) => (a ? Math.ceil(a.byteLength / 4) : 0)), ...outputCounts];
    const ptrs = this.reserve(what, counts);
    const f32 = this.f32();
    inputs.forEach((a, i) => {
      if (!a) return;
      if (a instanceof Float32Array) f32.set(a, ptrs[i] >>> 2);
      else if (a instanceof Int32Array) new Int32Array(f32.buffer, ptrs[i], a.length).set(a);
      else new Uint8Array(f32.buffer, ptrs[i], a.length).set(a);
    });
    return ptrs;
  }

  /**
   * A result copied out of the heap into `target` or a new array. Re-reads
   * the view: the wasm call may have grown memory for its workspace.
   * @param {Ptr} ptr
   * @param {number} length
   * @param {Float32Array} [target]
   * @returns {Float32Array}
   */
  copyOut(ptr, length, target) {
    const out = target ?? new Float32Array(length);
    out.set(this.f32().subarray(ptr >>> 2, (ptr >>> 2) + length));
    return out;
  }

  /** @returns {number} the wasm memory's size in bytes */
  memoryBytes() {
    return (this.mod.wasmMemory?.buffer ?? this.mod.HEAPF32.buffer).byteLength;
  }

  /**
   * Reserves consecutive 64-byte-aligned float regions, one per entry of
   * `counts` (0 gives a null pointer), and returns their byte addresses.
   * Throws a RangeError, before touching the heap, when the total cannot
   * fit a wasm32 heap, and after a failed allocation (the arena is then
   * empty and the module still usable).
   * @param {string} what the call, for the message
   * @param {number[]} counts floats per region
   * @returns {Ptr[]}
   */
  reserve(what, counts) {
    let total = 0;
    for (const n of counts) total += alignUp(n * 4);
    checkFits(() => `${what} needs ${formatBytes(total)} of wasm memory for its tensors`, total);
    if (total > this.capacity || (this.capacity > KEEP_BYTES && total < this.capacity / 4)) {
      this.release();
      const want = total <= KEEP_BYTES ? Math.min(KEEP_BYTES, Math.ceil(total * 1.25)) : total;
      let ptr = this.mod._malloc(want + ALIGN);
      let size = want;
      if (!ptr && want > total) {
        ptr = this.mod._malloc(total + ALIGN);
        size = total;
      }
      if (!ptr) throw this.#allocationError(what, total);
      this.ptr = ptr >>> 0;
      this.capacity = size;
    }
    const base = alignUp(this.ptr);
    const ptrs = [];
    let offset = base;
    for (const n of counts) {
      ptrs.push(n ? offset : 0);
      offset += alignUp(n * 4);
    }
    return ptrs;
  }

  /**
   * A block of its own, outside the arena (e.g. a resident KV cache), for
   * `bytes` bytes: { ptr, base }, base 64-byte aligned; give ptr to free().
   * Throws a RangeError like reserve(); `need` says what the bytes are for,
   * `weights` that they are a Linear's stored weights (not a KV cache).
   * @param {string} what
   * @param {number} bytes
   * @param {string} [need]
   * @param {boolean} [weights]
   * @returns {{ ptr: Ptr, base: Ptr }}
   */
  allocate(what, bytes, need = `${formatBytes(bytes)} of wasm memory`, weights = false) {
    checkFits(() => `${what} needs ${need}`, bytes + ALIGN);
    let ptr = this.mod._malloc(bytes + ALIGN) >>> 0;
    if (!ptr && this.ptr) {
      // The arena holds nothing between calls: give its room to this block.
      this.release();
      ptr = this.mod._malloc(bytes + ALIGN) >>> 0;
    }
    if (!ptr) throw this.#allocationError(what, bytes);
    this.blocks.set(ptr, bytes);
    if (weights) this.weightBlocks.add(ptr);
    return { ptr, base: alignUp(ptr) };
  }

  /** @param {Ptr} ptr */
  free(ptr) {
    this.blocks.delete(ptr);
    this.weightBlocks.delete(ptr);
    this.mod._free(ptr);
  }

  /**
   * @param {string} what
   * @param {number} bytes
   * @returns {RangeError}
   */
  #allocationError(what, bytes) {
    let held = 0, weights = 0;
    for (const [ptr, n] of this.blocks) {
      if (this.weightBlocks.has(ptr)) weights += n;
      else held += n;
    }
    const count = this.blocks.size - this.weightBlocks.size;
    const stored = this.weightBlocks.size
      ? `; the stored weights of ${this.weightBlocks.size} Linear layer${this.weightBlocks.size > 1 ? 's' : ''} ` +
        `(quantize(); free with dispose() or quantize('float32')) hold ${formatBytes(weights)}` : '';
    const holders = count
      ? `${count} live KV cache${count > 1 ? 's' : ''} (yours or the modules' useCache) ` +
        `hold${count > 1 ? '' : 's'} ${formatBytes(held)}`
      : 'no KV cache holds any of it';
    return new RangeError(
      `${what} needs ${formatBytes(bytes)} of wasm memory and the module could ` +
      `not allocate it (heap now ${formatBytes(this.memoryBytes())}, ` +
      `limit ${formatBytes(MAX_WASM_BYTES)}; ${holders}${stored}; no scratch memory is held between calls). ` +
      'Dispose the KV caches you no longer need (cache.dispose(), a module\'s resetCache()); ' +
      'wasm memory never shrinks and can fragment, so a fresh runtime (dispose() this one, then init()) ' +
      'starts with all of it free');
  }

  /** Frees the arena (the wasm memory itself cannot shrink). */
  release() {
    if (this.ptr) this.mod._free(this.ptr);
    this.ptr = 0;
    this.capacity = 0;
  }
}

/**
 * Throws, before touching the heap, when `bytes` cannot be one block of a
 * wasm32 heap.
 * The message is built only then: formatting it on every call would add
 * its cost to every small attention call.
 * @param {() => string} needs
 * @param {number} bytes
 */
function checkFits(needs, bytes) {
  if (!(bytes < MAX_BLOCK_BYTES)) {
    throw new RangeError(`${needs()}; a wasm32 module holds at most ${formatBytes(MAX_WASM_BYTES)}, ` +
      `in blocks below ${formatBytes(MAX_BLOCK_BYTES)} each`);
  }
}

/**
 * @param {number} n bytes
 * @returns {string}
 */
export function formatBytes(n) {
  if (n >= 2 ** 30) return `${(n / 2 ** 30).toFixed(2)} GiB`;
  if (n >= 2 ** 20) return `${(n / 2 ** 20).toFixed(1)} MiB`;
  if (n >= 2 ** 10) return `${(n / 2 ** 10).toFixed(1)} KiB`;
  return `${n} bytes`;
}

/**
 * Product of dims as a Number, or Infinity when it is not exact.
 * @param {...number} dims
 */
export function product(...dims) {
  let p = 1;
  for (const d of dims) p *= d;
  return Number.isSafeInteger(p) ? p : Infinity;
}
