// Measures this machine's single-thread memory read bandwidth as wasm sees
// it: a hand-assembled module (bytes below, no toolchain) whose loop sums a
// buffer with v128.load into 8 independent f32x4 accumulators (so loads, not
// adds, bound it). A decode step reads the cached keys and values once per
// token, so the speed of light for a cache of N bytes is one read of N
// bytes: "cold" after sweeping a larger buffer first (as the rest of a model,
// or another benchmark case, evicts the cache between two steps of one
// layer), "warm" read again and again (N bytes stay in whatever cache level
// holds them).
//
//   (func (export "read") (param $ptr i32) (param $bytes i32) (param $reps i32) (result f32)
//     loop: for p in [ptr, ptr + bytes) step 128:
//             acc_i = f32x4.add(acc_i, v128.load(p + 16 i)) for i < 8
//           reps -= 1; br_if reps != 0
//     return lane 0 of Σ acc)

import {
  F32, F32X4_ADD, F32X4_EXTRACT_LANE, GET, HEADER, I32, SET, TEE, V128, leb, name, section, vector,
} from './wasm-bytes.mjs';

const I32_ADD = 0x6a;
const I32_SUB = 0x6b;
const I32_LT_U = 0x49;
const V128_LOAD = [0xfd, 0x00];
const CHAINS = 8;
const STRIDE = 16 * CHAINS;
const PAGE = 65536;

/** The module's bytes: memory of `pages` 64 KiB pages, exported with read(). */
export function readKernelBytes(pages) {
  const [ptr, bytes, reps, p, end] = [0, 1, 2, 3, 4];
  const acc = (i) => 5 + i;
  const body = [
    0x03, 0x40, // loop $rep
    GET, ptr, SET, p,
    GET, ptr, GET, bytes, I32_ADD, SET, end,
    0x03, 0x40, // loop $inner
  ];
  for (let i = 0; i < CHAINS; ++i) {
    body.push(GET, ...leb(acc(i)), GET, p, ...V128_LOAD, 4, ...leb(16 * i), ...F32X4_ADD,
      SET, ...leb(acc(i)));
  }
  body.push(GET, p, 0x41, ...leb(STRIDE), I32_ADD, TEE, p); // p += STRIDE
  body.push(GET, end, I32_LT_U, 0x0d, 0); // br_if $inner (p < end)
  body.push(0x0b); // end $inner
  body.push(GET, reps, 0x41, 1, I32_SUB, TEE, reps, 0x0d, 0); // br_if $rep (--reps)
  body.push(0x0b); // end $rep
  body.push(GET, ...leb(acc(0)));
  for (let i = 1; i < CHAINS; ++i) body.push(GET, ...leb(acc(i)), ...F32X4_ADD);
  body.push(...F32X4_EXTRACT_LANE, 0, 0x0b); // lane 0; end
  const locals = vector([[2, I32], [...leb(CHAINS), V128]]);
  const func = [...locals, ...body];
  return Uint8Array.from([
    ...HEADER,
    ...section(1, vector([[0x60, 3, I32, I32, I32, 1, F32]])), // (i32 i32 i32) -> f32
    ...section(3, vector([[0]])),
    ...section(5, vector([[0x00, ...leb(pages)]])), // memory: min pages
    ...section(7, vector([[...name('read'), 0x00, 0], [...name('memory'), 0x02, 0]])),
    ...section(10, vector([[...leb(func.length), ...func]])),
  ]);
}

/** Bytes swept before each cold read: beyond what the caches hold for us. */
const EVICT_BYTES = 256 * 2 ** 20;

/**
 * GB/s of reading a buffer of `bytes` bytes on this thread. Warm: the median
 * of `repeats` timed calls of about `callMs` each, after warm-up, reading it
 * again and again. Cold (`cold: true`): the median of `repeats` single reads,
 * each after sweeping EVICT_BYTES of other memory.
 */
export function measureReadBandwidth(bytes, { callMs = 60, repeats = 7, cold = false } = {}) {
  const size = Math.ceil(bytes / STRIDE) * STRIDE;
  const evict = cold ? EVICT_BYTES : 0;
  const instance = new WebAssembly.Instance(
    new WebAssembly.Module(readKernelBytes(Math.ceil((size + evict) / PAGE) + 1)));
  const { read, memory } = instance.exports;
  // Touch every page with non-zero data: untouched pages all map to one
  // zero page and would read from cache.
  new Float32Array(memory.buffer, 0, (size + evict) / 4).fill(1);
  for (let i = 0; i < 20; ++i) read(0, Math.min(size, 1 << 16), 1);
  if (cold) {
    const rates = [];
    for (let r = 0; r < repeats; ++r) {
      read(size, evict, 1);
      const t0 = performance.now();
      read(0, size, 1);
      rates.push(size / ((performance.now() - t0) * 1e6));
    }
    rates.sort((a, b) => a - b);
    return rates[rates.length >> 1];
  }
  let reps = 1;
  for (;;) {
    const t0 = performance.now();
    read(0, size, reps);
    const ms = performance.now() - t0;
    if (ms >= callMs / 2) {
      reps = Math.max(1, Math.round((reps * callMs) / ms));
      break;
    }
    reps *= 2;
  }
  const rates = [];
  let sink = 0;
  for (let r = 0; r < repeats; ++r) {
    const t0 = performance.now();
    sink += read(0, size, reps);
    rates.push((size * reps) / ((performance.now() - t0) * 1e6));
  }
  if (!Number.isFinite(sink)) throw new Error('read kernel produced a non-finite sum');
  rates.sort((a, b) => a - b);
  return rates[rates.length >> 1];
}
