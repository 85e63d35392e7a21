#!/usr/bin/env node
// Our two-thread scaling on few long heads, repeated: the target is
// ≥ 1.8× on (1,1,4096,64) and (1,2,8192,64) in every run, not just some.
// Each repetition: the single and the threads build in one process, timed
// interleaved after 1.5 s of warm-up, medians of 15; prints 1T, 2T and their
// ratio per shape, then the lowest ratio over the repetitions. Built dist/
// needed (npm run build).
//   node bench/studies/scaling.mjs [repetitions=3]
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { makeInputs, shapeName } from '../lib/shapes.mjs';
import { median } from '../lib/timing.mjs';

const SHAPES = [
  { kind: 'attention', batch: 1, heads: 1, length: 4096, headDim: 64 },
  { kind: 'attention', batch: 1, heads: 2, length: 8192, headDim: 64 },
];
const repetitions = Number(process.argv[2] ?? 3);
if (!(Number.isInteger(repetitions) && repetitions >= 1)) {
  console.error('usage: node bench/studies/scaling.mjs [repetitions >= 1]');
  process.exit(2);
}

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { init } = await import(pathToFileURL(join(root, 'dist/node.mjs')).href);
const single = await init({ build: 'single' });
const threads = await init({ build: 'threads', threads: 2 });

const lowest = new Map();
for (let r = 1; r <= repetitions; r++) {
  for (const shape of SHAPES) {
    const { q, k, v } = makeInputs(shape, r);
    const out = new Float32Array(q.length);
    const options = {
      batch: shape.batch, heads: shape.heads, queryLength: shape.length, headDim: shape.headDim,
      causal: true, out,
    };
    const runs = [single, threads].map((ca) => () => ca.attention(q, k, v, options));
    const end = performance.now() + 1500;
    while (performance.now() < end) for (const run of runs) run();
    const times = [[], []];
    for (let i = 0; i < 15; i++) {
      for (const j of i % 2 ? [1, 0] : [0, 1]) {
        const t0 = performance.now();
        runs[j]();
        times[j].push(performance.now() - t0);
      }
    }
    const [t1, t2] = times.map(median);
    const name = shapeName(shape);
    lowest.set(name, Math.min(lowest.get(name) ?? Infinity, t1 / t2));
    console.log(`run ${r} ${name.padEnd(15)} 1T ${t1.toFixed(1).padStart(7)} ms  2T ${t2.toFixed(1).padStart(7)} ms  ` +
      `${(t1 / t2).toFixed(2)}×`);
  }
}
for (const [name, x] of lowest) {
  console.log(`${name}: lowest 2T/1T over ${repetitions} runs ${x.toFixed(2)}× (target ≥ 1.8×: ${x >= 1.8 ? 'met' : 'missed'})`);
}
single.dispose();
threads.dispose();
