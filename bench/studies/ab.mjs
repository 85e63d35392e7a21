#!/usr/bin/env node
// A/B: the built packages of two checkouts (each with dist/ built), loaded
// into one process and timed interleaved after warm-up, medians of wall and
// CPU time (interleaved of lib/timing.mjs). For "did this change make it
// slower?" on a shared machine, where only numbers from one run compare.
//   node bench/studies/ab.mjs <checkout A> <checkout B> [threads] [filter] [runs]
// (filter: only the cases whose name contains it, e.g. GEMV; runs: timed runs of each,
// 15 by default; --decode: only the decode steps, one per KV cache dtype;
// --ratio: also each one's backward over its forward at (1,12,1024,64))
// e.g. git worktree add /tmp/before main~1 && (cd /tmp/before &&
//      node scripts/build.mjs --wasm) && node bench/studies/ab.mjs /tmp/before .
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { interleaved, lcgRandom } from '../lib/timing.mjs';

const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const [dirA, dirB, threadArg = '1', filterArg = '', runsArg = '15'] = args;
const filter = process.argv.includes('--decode') ? 'decode step' : filterArg;
if (!dirA || !dirB) {
  console.error('usage: node bench/studies/ab.mjs <checkout A> <checkout B> [threads] [filter] [runs] [--decode] [--ratio]');
  process.exit(2);
}
const threads = Number(threadArg);
const runs = Number(runsArg);
// dist/node.mjs is the package's Node entry (dist/index.mjs is the browser
// one); checkouts from before it had only index.mjs.
const entry = (dir) => resolve(dir, existsSync(resolve(dir, 'dist/node.mjs')) ? 'dist/node.mjs' : 'dist/index.mjs');
const load = (dir) => import(pathToFileURL(entry(dir)).href);
const runtimes = await Promise.all([dirA, dirB].map(async (dir) =>
  (await load(dir)).init({ build: threads > 1 ? 'threads' : 'single', threads })));

const random = lcgRandom();

function attentionCase(B, H, T, D, extra = {}) {
  const [q, k, v] = [0, 1, 2].map(() => random(B * H * T * D));
  const options = { batch: B, heads: H, queryLength: T, headDim: D, causal: true, ...extra };
  const more = Object.keys(extra).length ? ` ${JSON.stringify(extra)}` : '';
  return [`attention (${B},${H},${T},${D})${more}`, runtimes.map((ca) => () => ca.attention(q, k, v, options))];
}
// The backward alone, from the forward's output and log-sum-exp.
function backwardCase(B, H, T, D, extra = {}) {
  const [q, k, v, dout] = [0, 1, 2, 3].map(() => random(B * H * T * D));
  const options = { batch: B, heads: H, queryLength: T, headDim: D, causal: true, ...extra };
  const more = Object.keys(extra).length ? ` ${JSON.stringify(extra)}` : '';
  return [`attentionBackward (${B},${H},${T},${D})${more}`, runtimes.map((ca) => {
    const { output, logSumExp } = ca.attention(q, k, v, { ...options, returnLogSumExp: true });
    return () => ca.attentionBackward(dout, q, k, v, output, logSumExp, options);
  })];
}
function moduleCase(B, T, d, heads) {
  const x = random(B * T * d);
  return [`MultiHeadAttention (${B},${T},${d}, ${heads} heads)`, runtimes.map((ca) => {
    ca.manualSeed(1);
    const m = new ca.MultiHeadAttention(d, d, T, 0.0, heads).eval();
    return () => m.forward(x, [B, T, d]);
  })];
}
function linearCase(rows, d) {
  const x = random(rows * d);
  return [`Linear ${rows}×${d}·${d}×${d}`, runtimes.map((ca) => {
    ca.manualSeed(1);
    const m = new ca.Linear(d, d);
    return () => m.forward(x, [rows, d]);
  })];
}
// A generation step's Linear on stored weights (one row of x: the GEMV of
// src/gemm/stored_linear.h); out_head's 43 MB (int8) come from memory.
function gemvCase(inF, outF, dtype) {
  const x = random(inF);
  return [`GEMV ${dtype} 1×${inF}·${inF}×${outF}`, runtimes.map((ca) => {
    ca.manualSeed(1);
    const m = new ca.Linear(inF, outF, true, { weightsDtype: dtype }).eval();
    return () => m.forward(x, [1, inF]);
  })];
}
// A decode step against a KV cache of `dtype` (by default a Llama-3-8B
// layer: 32 query heads, 8 KV heads, head size 128; [12, 12, 64]: GPT-2's,
// one query row per KV head), L cached tokens, warm: steps back to back into
// a preallocated output.
function decodeCase(L, dtype, [H, KV, D] = [32, 8, 128]) {
  const [k, v, q] = [random(KV * L * D), random(KV * L * D), random(H * D)];
  const out = new Float32Array(H * D);
  return [`decode step ${H}/${KV} heads, D ${D}, L ${L}, ${dtype}`, runtimes.map((ca) => {
    const cache = ca.createKVCache({ batch: 1, kvHeads: KV, headDim: D, capacity: L, dtype }).append(k, v);
    return () => cache.attention(q, { heads: H, queryLength: 1, out });
  })];
}

const cases = [() => attentionCase(1, 12, 1024, 64), () => attentionCase(1, 1, 4096, 64),
  () => attentionCase(1, 12, 128, 64),
  () => attentionCase(1, 8, 1024, 64, { softcap: 50 }), () => backwardCase(1, 12, 1024, 64),
  () => backwardCase(1, 12, 128, 64), () => backwardCase(1, 1, 4096, 64),
  () => backwardCase(1, 8, 1024, 64, { softcap: 50 }),
  () => backwardCase(1, 8, 1024, 64, { window: { left: 255 } }),
  () => moduleCase(2, 1024, 768, 12), () => linearCase(8192, 768),
  ...['float32', 'bfloat16', 'int8'].map((dtype) => () => decodeCase(4096, dtype)),
  ...['float32', 'int8'].map((dtype) => () => decodeCase(1024, dtype, [12, 12, 64])),
  ...['int8', 'bfloat16'].flatMap((dtype) => [[768, 3072], [3072, 768], [768, 50257]]
    .map(([i, o]) => () => gemvCase(i, o, dtype)))];
console.log(`A = ${dirA}, B = ${dirB}, ${threads} thread(s), ${runs} runs, ` +
  `gemmKernel ${runtimes.map((ca) => ca.gemmKernel).join(' / ')}`);
for (const make of cases) {
  let made;
  try {
    made = make();
  } catch (e) {
    // A checkout from before the case's API (e.g. a KV cache dtype).
    console.log(`skipped: ${e instanceof Error ? e.message : e}`);
    continue;
  }
  const [name, [a, b]] = made;
  if (!name.includes(filter)) continue;
  const [ma, mb, ca, cb] = interleaved(a, b, 1500, runs);
  console.log(`${name.padEnd(40)} A ${ma.toFixed(2).padStart(8)} ms   B ${mb.toFixed(2).padStart(8)} ms   ` +
    `B/A ${(mb / ma).toFixed(3)}   CPU time B/A ${(cb / ca).toFixed(3)}`);
}
// --ratio: each checkout's backward over its own forward (returnLogSumExp),
// interleaved, at (1,12,1024,64) (the target: at most 2.0, one thread).
if (process.argv.includes('--ratio')) {
  const [, fwd] = attentionCase(1, 12, 1024, 64, { returnLogSumExp: true });
  const [, bwd] = backwardCase(1, 12, 1024, 64);
  for (const [i, label] of ['A', 'B'].entries()) {
    const [mf, mb, cf, cb] = interleaved(fwd[i], bwd[i], 1500, runs);
    console.log(`${label}: backward / forward (1,12,1024,64)   forward ${mf.toFixed(2)} ms   ` +
      `backward ${mb.toFixed(2)} ms   ratio ${(mb / mf).toFixed(3)}   CPU time ratio ${(cb / cf).toFixed(3)}`);
  }
}
for (const ca of runtimes) ca.dispose();
