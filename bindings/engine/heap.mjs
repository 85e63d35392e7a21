// The wasm heap as seen from JS: one grow-only scratch arena per module
// (so repeated calls neither leak nor fragment), and Float32Array views
// re-read after anything that can grow memory (a grown heap detaches the old
// views, or, with shared memory, leaves them at the old length).

/** Largest heap the modules are linked for (-sMAXIMUM_MEMORY=2GB). */
const MAX_WASM_BYTES = 2 ** 31;
const ALIGN = 64;

const alignUp = (n) => Math.ceil(n / ALIGN) * ALIGN;

export class Heap {
  constructor(mod) {
    this.mod = mod;
    this.ptr = 0;
    this.capacity = 0;
    this.sharedView = null;
  }

  /** A Float32Array over the whole current heap. */
  f32() {
    const memory = this.mod.wasmMemory; // exported by the pthreads build only
    if (!memory) return this.mod.HEAPF32;
    if (!this.sharedView || this.sharedView.buffer !== memory.buffer) {
      this.sharedView = new Float32Array(memory.buffer);
    }
    return this.sharedView;
  }

  /** Current size of the wasm memory in bytes. */
  memoryBytes() {
    return (this.mod.wasmMemory?.buffer ?? this.mod.HEAPF32.buffer).byteLength;
  }

  /**
   * Reserves consecutive 64-byte-aligned float regions, one per entry of
   * `counts` (0 gives a null pointer), and returns their byte addresses.
   * Throws a RangeError, before touching the heap, when the total cannot
   * fit a wasm32 heap, and after a failed allocation (the arena is then
   * empty and the module still usable).
   */
  reserve(what, counts) {
    let total = 0;
    for (const n of counts) total += alignUp(n * 4);
    checkFits(`${what} needs ${formatBytes(total)} of wasm memory for its tensors`, total);
    if (total > this.capacity) {
      if (this.ptr) this.mod._free(this.ptr);
      this.ptr = 0;
      this.capacity = 0;
      // Over-allocate a little so slowly growing shapes do not reallocate
      // on every call.
      const want = Math.min(MAX_WASM_BYTES - ALIGN, Math.max(total, Math.ceil(total * 1.25)));
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
   * Throws a RangeError like reserve(); `need` says what the bytes are for.
   */
  allocate(what, bytes, need = `${formatBytes(bytes)} of wasm memory`) {
    checkFits(`${what} needs ${need}`, bytes + ALIGN);
    const ptr = this.mod._malloc(bytes + ALIGN) >>> 0;
    if (!ptr) throw this.#allocationError(what, bytes);
    return { ptr, base: alignUp(ptr) };
  }

  free(ptr) {
    this.mod._free(ptr);
  }

  #allocationError(what, bytes) {
    return new RangeError(
      `${what} needs ${formatBytes(bytes)} of wasm memory and the module could ` +
      `not allocate it (heap now ${formatBytes(this.memoryBytes())}, ` +
      `limit ${formatBytes(MAX_WASM_BYTES)})`);
  }

  /** Frees the arena (the wasm memory itself cannot shrink). */
  release() {
    if (this.ptr) this.mod._free(this.ptr);
    this.ptr = 0;
    this.capacity = 0;
  }
}

/** Throws, before touching the heap, when `bytes` cannot fit a wasm32 heap. */
function checkFits(needs, bytes) {
  if (!(bytes < MAX_WASM_BYTES)) {
    throw new RangeError(`${needs}; a wasm32 module holds at most ${formatBytes(MAX_WASM_BYTES)}`);
  }
}

export function formatBytes(n) {
  if (n >= 2 ** 30) return `${(n / 2 ** 30).toFixed(2)} GiB`;
  if (n >= 2 ** 20) return `${(n / 2 ** 20).toFixed(1)} MiB`;
  if (n >= 2 ** 10) return `${(n / 2 ** 10).toFixed(1)} KiB`;
  return `${n} bytes`;
}
