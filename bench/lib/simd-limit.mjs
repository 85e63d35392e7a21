// Measures the wasm SIMD128 mul+add throughput of this machine and Node: a
// hand-assembled module (bytes below, no toolchain) whose loop updates N
// independent f32x4 accumulators, acc = acc · m + c (f32x4.mul then
// f32x4.add: 8 FLOPs per accumulator and iteration). With enough
// independent chains it is bound by throughput, not latency; the best N
// is the limit. The same ops our kernels and every peer's wasm are made of.
// With { fma: true } the loop body is one f32x4.relaxed_madd per accumulator
// instead (relaxed SIMD; still 8 FLOPs: a fused multiply-add counts 2), the
// limit of the relaxed-SIMD kernels where the engine validates them
// (Chromium; Node 20 only with --experimental-wasm-relaxed-simd).
//
//   (func (export "kernel") (param $n i32) (result f32)
//     (local $acc0..$accN-1 v128) (local $m v128) (local $c v128)
//     m = splat 0.999; c = splat 0.001
//     loop: for each acc: acc = f32x4.add(f32x4.mul(acc, m), c)
//           n -= 1; br_if n != 0
//     return lane 0 of Σ acc)

import {
  F32, F32X4_ADD, F32X4_EXTRACT_LANE, F32X4_MUL, F32X4_RELAXED_MADD, GET, HEADER, I32, SET, TEE, V128, leb,
  name, section, vector,
} from './wasm-bytes.mjs';

const f32x4Const = (x) => {
  const b = new Uint8Array(16);
  const dv = new DataView(b.buffer);
  for (let i = 0; i < 4; ++i) dv.setFloat32(i * 4, x, true);
  return [0xfd, 0x0c, ...b];
};


/**
 * The module bytes for `chains` accumulators; `fma`: acc = relaxed_madd(acc,
 * m, c) instead of f32x4.add(f32x4.mul(acc, m), c).
 */
export function simdKernelBytes(chains, { fma = false } = {}) {
  const n = 0;
  const acc = (i) => 1 + i;
  const m = 1 + chains;
  const c = 2 + chains;
  const body = [];
  body.push(...f32x4Const(0.999), SET, ...leb(m));
  body.push(...f32x4Const(0.001), SET, ...leb(c));
  body.push(0x03, 0x40); // loop (no result)
  for (let i = 0; i < chains; ++i) {
    body.push(GET, ...leb(acc(i)), GET, ...leb(m));
    if (fma) body.push(GET, ...leb(c), ...F32X4_RELAXED_MADD);
    else body.push(...F32X4_MUL, GET, ...leb(c), ...F32X4_ADD);
    body.push(SET, ...leb(acc(i)));
  }
  body.push(GET, n, 0x41, 1, 0x6b, TEE, n, 0x0d, 0); // n = n - 1; br_if 0
  body.push(0x0b); // end loop
  body.push(GET, ...leb(acc(0)));
  for (let i = 1; i < chains; ++i) body.push(GET, ...leb(acc(i)), ...F32X4_ADD);
  body.push(...F32X4_EXTRACT_LANE, 0);
  body.push(0x0b); // end function
  const locals = vector([[...leb(chains + 2), V128]]);
  const func = [...locals, ...body];
  return Uint8Array.from([
    ...HEADER,
    ...section(1, vector([[0x60, 1, I32, 1, F32]])), // type: (i32) -> f32
    ...section(3, vector([[0]])), // function 0 has type 0
    ...section(7, vector([[...name('kernel'), 0x00, 0]])),
    ...section(10, vector([[...leb(func.length), ...func]])),
  ]);
}

/**
 * GFLOP/s of the kernel in this thread: warm-up calls (to reach V8's
 * optimising tier), then the median of `repeats` calls of about `callMs`.
 */
export function measureSimdKernel(chains, { callMs = 40, repeats = 7, fma = false } = {}) {
  const instance = new WebAssembly.Instance(new WebAssembly.Module(simdKernelBytes(chains, { fma })));
  const kernel = instance.exports.kernel;
  let iterations = 1000;
  // Warm-up: many short calls, then grow the call until it lasts callMs.
  for (let i = 0; i < 200; ++i) kernel(1000);
  for (;;) {
    const t0 = performance.now();
    kernel(iterations);
    const ms = performance.now() - t0;
    if (ms >= callMs / 2) {
      iterations = Math.max(1, Math.round((iterations * callMs) / ms));
      break;
    }
    iterations *= 2;
  }
  const rates = [];
  let sink = 0;
  for (let r = 0; r < repeats; ++r) {
    const t0 = performance.now();
    sink += kernel(iterations);
    const ms = performance.now() - t0;
    rates.push((8 * chains * iterations) / (ms * 1e6));
  }
  if (!Number.isFinite(sink)) throw new Error('SIMD kernel produced a non-finite sum');
  rates.sort((a, b) => a - b);
  return rates[rates.length >> 1];
}

export const CHAIN_COUNTS = [4, 8, 12, 13, 16];

/** The accumulator count of the best rate in a byChains object. */
export const bestChains = (byChains) => Number(Object.entries(byChains).sort((a, b) => b[1] - a[1])[0][0]);

/**
 * A start reading (measureSimdLimit / measureFmaLimit) with the end one:
 * `limit` is the higher (other load only lowers a reading); null where the
 * engine could not run the kernel.
 */
export const withEndReading = (start, end = start.gflops) => (start.gflops === null
  ? { ...start, limit: null } : { ...start, end, limit: Math.max(start.gflops, end) });

/** The best GFLOP/s over the chain counts (single thread); `options.fma`: the relaxed_madd loop. */
export function measureSimdLimit(options, chainCounts = CHAIN_COUNTS) {
  const byChains = {};
  for (const n of chainCounts) byChains[n] = measureSimdKernel(n, options);
  const best = Math.max(...Object.values(byChains));
  return { gflops: best, byChains };
}

/** Whether this engine validates f32x4.relaxed_madd (the relaxed-SIMD proposal). */
export const relaxedFmaValidates = () => WebAssembly.validate(simdKernelBytes(1, { fma: true }));

/**
 * The relaxed-SIMD FMA limit (single thread), measured as measureSimdLimit
 * with the relaxed_madd loop; { gflops: null, reason } where the engine does
 * not validate it.
 */
export function measureFmaLimit(options, chainCounts = CHAIN_COUNTS) {
  if (!relaxedFmaValidates()) {
    return { gflops: null, reason: 'f32x4.relaxed_madd does not validate here (relaxed SIMD off)' };
  }
  return measureSimdLimit({ ...options, fma: true }, chainCounts);
}

/**
 * Aggregate GFLOP/s of `threads` threads running the kernel at the same time
 * (worker threads started together on a barrier): the limit for a build using
 * that many threads.
 */
export async function measureSimdLimitThreads(threads, chains) {
  const { Worker } = await import('node:worker_threads');
  const barrier = new Int32Array(new SharedArrayBuffer(4));
  const workers = [];
  const results = [];
  for (let i = 0; i < threads; ++i) {
    const w = new Worker(new URL('./simd-limit-worker.mjs', import.meta.url), {
      workerData: { chains, barrier: barrier.buffer, threads },
    });
    workers.push(w);
    results.push(new Promise((resolve, reject) => {
      w.once('message', resolve);
      w.once('error', reject);
    }));
  }
  const rates = await Promise.all(results);
  await Promise.all(workers.map((w) => w.terminate()));
  return rates.reduce((a, b) => a + b, 0);
}
