#!/usr/bin/env node
// The decode table's one-thread resident step (float32, bfloat16, int8 cache;
// Llama-3-8B layer at 4096 cached tokens) from cold caches, with the
// bench's own routes and inputs (bench/peers/ours.mjs decodeRoute,
// bench/lib/shapes.mjs makeInputs, a sweepCaches before every step), for the
// built package of each checkout given: for bisecting a change in the step's
// speed between builds.
//   node bench/studies/decode-cold.mjs <checkout> [<checkout> ...] [--steps=14]
//        [--model=gpt2|llama] [--length=4096] [--warm]
// (--model=gpt2: the GPT-2-small layer, 12 heads each its own KV head, D 64:
// the MHA decode route; --warm: no sweep before a step)
// Several checkouts run in one process, interleaved (their ratios compare);
// one checkout per process gives each build the process to itself (run it
// once per checkout, alternating, to compare builds that way). Prints the
// median ms of each build's steps, after 3 untimed ones, wall time and the
// process's CPU time (process.cpuUsage: what other jobs on a shared
// machine take from the step shows in wall time only).
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { decodeRoute } from '../peers/ours.mjs';
import { DECODE_SHAPES, makeInputs } from '../lib/shapes.mjs';
import { sweepCaches } from '../lib/sweep.mjs';

const dirs = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const steps = Number(process.argv.find((a) => a.startsWith('--steps='))?.slice(8) ?? 14);
if (!dirs.length || !(steps > 0)) {
  console.error('usage: node bench/studies/decode-cold.mjs <checkout> [<checkout> ...] [--steps=14]');
  process.exit(2);
}
const option = (name, fallback) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback;
const heads = option('model', 'llama') === 'gpt2' ? 12 : 32;
const length = Number(option('length', 4096));
const warm = process.argv.includes('--warm');
const shape = { ...DECODE_SHAPES.find((s) => s.heads === heads), cacheLength: length };
const inputs = makeInputs(shape, 1234);
const VARIANTS = [['float32', 'resident KV cache'], ['bfloat16', 'resident KV cache, bfloat16'],
  ['int8', 'resident KV cache, int8']];
const cases = [];
for (const dir of dirs) {
  const { init } = await import(pathToFileURL(resolve(dir, 'dist/node.mjs')).href);
  const ca = await init({ build: 'single' });
  for (const [name, variant] of VARIANTS) {
    cases.push({ dir, name, route: decodeRoute(ca, variant, shape, inputs), ms: [], cpu: [] });
  }
}
const WARM_UP = 3;
for (let i = 0; i < WARM_UP + steps; i++) {
  for (const c of i % 2 ? [...cases].reverse() : cases) {
    if (!warm) sweepCaches();
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    c.route.run();
    const t1 = performance.now();
    const cpu = process.cpuUsage(c0);
    if (i >= WARM_UP) {
      c.ms.push(t1 - t0);
      c.cpu.push((cpu.user + cpu.system) / 1000);
    }
  }
}
for (const dir of dirs) {
  const mine = cases.filter((c) => c.dir === dir);
  const median = (a) => [...a].sort((x, y) => x - y)[a.length >> 1];
  console.log(`${dir}: ` + mine.map((c) => `${c.name} ${median(c.ms).toFixed(2)} ms`).join(', '));
  console.log(`${' '.repeat(dir.length)}  CPU: ` + mine.map((c) => `${c.name} ${median(c.cpu).toFixed(2)} ms`).join(', '));
}
