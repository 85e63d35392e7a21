#!/usr/bin/env node
// One decode step per KV cache dtype (float32, bfloat16, int8) at the
// Llama-3-8B layer shape (32 query heads, 8 KV heads, head size 128, 4096
// cached tokens), beside a plain SIMD128 read of the same number of bytes,
// all in one process and interleaved, so that only ratios within one run
// are compared (the machine is shared).
//   node bench/studies/decode-dtype.mjs [--threads=2] [--rounds=7] [--length=4096]
// A step: truncate to L − 1, append the newest token's key and value (rounded
// to the dtype), attention of q [1, 32, 1, 128] over the L tokens into a
// preallocated output. Warm: steps repeated back to back after one untimed
// step (the cache stays in whatever level holds it, as the plain read's
// "warm", which also reads once before it times); cold: each step after
// sweeping 256 MiB of other memory (as bench/lib/decode.mjs). GB/s: the
// cache's bytes (cache.bytes) over the step's median time; "% read": of the
// plain read of the same number of bytes, warm or cold, in the same run.
// "% SIMD": the step's multiply-adds (Q·Kᵀ and P·V: 4·H·L·D FLOPs) timed at
// the SIMD128 mul+add limit measured in the same run (lib/simd-limit.mjs),
// over the step's time: the share of the step that is arithmetic the
// kernel cannot avoid without FMA (relaxed SIMD) or integer dot products.
// The floor line below the table says which of the two floors (reading the
// float32 cache, or its arithmetic) bounds the float32 step; the accuracy
// line, each dtype's step against a float64 step on the unrounded keys and
// values: its largest error as a fraction of the output's largest value
// (bounds float32 1e-5, bfloat16 1e-2, int8 3e-2).
import { fmtMs, fmtPct, fmtX, table } from '../lib/format.mjs';
import { measureReadBandwidth, readKernelBytes } from '../lib/read-bandwidth.mjs';
import { measureSimdLimit } from '../lib/simd-limit.mjs';
import { median } from '../lib/timing.mjs';
import { decodeStepJs } from '../peers/plain-js.mjs';
import { init } from 'causal-attention';

const arg = (name, fallback) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback);
const threads = arg('threads', 1);
const rounds = arg('rounds', 7);
const L = arg('length', 4096);
const [B, H, KV, D] = [1, 32, 8, 128];
const DTYPES = /** @type {const} */ (['float32', 'bfloat16', 'int8']);

const ca = await init(threads > 1 ? { build: 'threads', threads } : { build: 'single' });
const k = ca.rand([B, KV, L, D]);
const v = ca.rand([B, KV, L, D]);
const last = (a) => {
  const out = new Float32Array(B * KV * D);
  for (let h = 0; h < B * KV; h++) out.set(a.subarray((h * L + L - 1) * D, (h * L + L) * D), h * D);
  return out;
};
const [kLast, vLast] = [last(k), last(v)];
const q = ca.rand([B, H, 1, D]);
const out = new Float32Array(B * H * D);
const cases = DTYPES.map((dtype) => {
  const cache = ca.createKVCache({ batch: B, kvHeads: KV, headDim: D, capacity: L, dtype }).append(k, v);
  const step = () => cache.truncate(L - 1).append(kLast, vLast).attention(q, { heads: H, queryLength: 1, out });
  return { dtype, cache, step, warm: /** @type {number[]} */ ([]), cold: /** @type {number[]} */ ([]) };
});

// Sweeping other memory between cold steps: a read kernel of its own.
const SWEEP = 256 * 2 ** 20;
const sweeper = new WebAssembly.Instance(new WebAssembly.Module(readKernelBytes(SWEEP / 65536 + 1))).exports;
new Float32Array(/** @type {WebAssembly.Memory} */ (sweeper.memory).buffer, 0, SWEEP / 4).fill(1);
const sweep = () => /** @type {(p: number, n: number, r: number) => number} */ (sweeper.read)(0, SWEEP, 1);

for (const c of cases) for (let i = 0; i < 30; i++) c.step(); // past V8's baseline tier
const bandwidth = (cold) => cases.map((c) => measureReadBandwidth(c.cache.bytes, { cold, repeats: 5 }));
const simdLimit = () => measureSimdLimit({ repeats: 5 }, [8, 12]).gflops;
const simd = [simdLimit()];
const readWarm = [bandwidth(false)];
const readCold = [bandwidth(true)];
for (let r = 0; r < rounds; r++) {
  for (let i = 0; i < cases.length; i++) {
    const c = cases[(i + r) % cases.length]; // rotate the order each round
    const reps = 10;
    c.step(); // the first step after another case's cold steps reads from memory: untimed
    const t0 = performance.now();
    for (let s = 0; s < reps; s++) c.step();
    c.warm.push((performance.now() - t0) / reps);
    for (let s = 0; s < 3; s++) {
      sweep();
      const t1 = performance.now();
      c.step();
      c.cold.push(performance.now() - t1);
    }
  }
}
readWarm.push(bandwidth(false));
readCold.push(bandwidth(true));
simd.push(simdLimit());

const gbps = (bytes, ms) => bytes / (ms * 1e6);
// Other load only lowers a measured limit: the higher of before and after.
const gflops = Math.max(...simd);
const flops = 4 * B * H * L * D;
const computeFloorMs = flops / (gflops * 1e6);
const f32 = cases[0];
const rows = cases.map((c, i) => {
  const warm = median(c.warm), cold = median(c.cold);
  // Other load only lowers a read: the higher of before and after.
  const bwWarm = Math.max(readWarm[0][i], readWarm[1][i]), bwCold = Math.max(readCold[0][i], readCold[1][i]);
  return [
    c.dtype, (c.cache.bytes / 2 ** 20).toFixed(1),
    fmtMs(warm), gbps(c.cache.bytes, warm).toFixed(1), `${fmtPct(gbps(c.cache.bytes, warm) / bwWarm)} of ${bwWarm.toFixed(1)}`,
    fmtX(warm / median(f32.warm)), fmtPct(computeFloorMs / warm),
    fmtMs(cold), gbps(c.cache.bytes, cold).toFixed(1), `${fmtPct(gbps(c.cache.bytes, cold) / bwCold)} of ${bwCold.toFixed(1)}`,
    fmtX(cold / median(f32.cold)),
  ];
});
console.log(`Decode step, Llama-3-8B layer (B ${B}, H ${H}, Hkv ${KV}, D ${D}, L ${L}), ${ca.build} build, ` +
  `${ca.threads} thread(s), ${rounds} interleaved rounds, target ${ca.targetName ?? ''}:\n`);
console.log(table(
  ['dtype', 'MiB K+V', 'warm ms', 'GB/s', '% read (GB/s)', 'time vs f32', '% SIMD', 'cold ms', 'GB/s', '% read (GB/s)', 'time vs f32'],
  rows, ['l', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r']));
const readFloorMs = f32.cache.bytes / (Math.max(readWarm[0][0], readWarm[1][0]) * 1e6);
console.log(`\nFloors of the float32 step (warm, this run): its ${(flops / 1e6).toFixed(1)} MFLOP of mul+add at the ` +
  `SIMD128 limit of ${gflops.toFixed(1)} GFLOP/s: ${fmtMs(computeFloorMs)}; one read of its ` +
  `${(f32.cache.bytes / 2 ** 20).toFixed(1)} MiB: ${fmtMs(readFloorMs)}. A step at 50 % of the read bandwidth ` +
  `(${fmtMs(2 * readFloorMs)}) is ${2 * readFloorMs >= computeFloorMs ? 'above' : 'below'} the arithmetic floor.`);
// The float64 step on the unrounded data (plain JS's decode step, into a
// Float64Array: never rounded to float32).
const exact = decodeStepJs(q, k, v, B, H, KV, L, D, new Float64Array(B * H * D));
const accuracy = cases.map((c) => {
  c.step();
  let worst = 0, largest = 0;
  for (let i = 0; i < out.length; i++) {
    worst = Math.max(worst, Math.abs(out[i] - exact[i]));
    largest = Math.max(largest, Math.abs(exact[i]));
  }
  return `${c.dtype} ${(worst / largest).toExponential(1)}`;
});
console.log(`Accuracy (largest |step - float64 on the unrounded data| / largest |output|): ${accuracy.join(', ')}.`);
for (const c of cases) c.cache.dispose();
ca.dispose();
