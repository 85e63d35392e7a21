#!/usr/bin/env node
// precision 'int8' against float32 in CPU time (process.cpuUsage per call),
// medians of interleaved runs, one thread: on a shared, loaded machine CPU
// time varies far less than the wall time bench/run.mjs --int8 reads.
// With a second checkout (dist/ built), also this checkout's int8 call
// against that one's, interleaved in the same process.
//   node bench/studies/int8-cpu.mjs [heads,queryLength] [runs] [other checkout]
// e.g. node bench/studies/int8-cpu.mjs 12,1024 21 ../before
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { lcgRandom } from '../lib/timing.mjs';

const [shapeArg = '12,1024', runsArg = '21', other] = process.argv.slice(2);
const [heads, queryLength] = shapeArg.split(',').map(Number);
const runs = Number(runsArg);
const here = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const load = async (dir) => {
  const entry = resolve(dir, existsSync(resolve(dir, 'dist/node.mjs')) ? 'dist/node.mjs' : 'dist/index.mjs');
  return (await import(pathToFileURL(entry).href)).init({ build: 'single' });
};
const ca = await load(here);
const random = lcgRandom();
const n = heads * queryLength * 64;
const [q, k, v] = [random(n), random(n), random(n)];
const options = (precision) => ({ batch: 1, heads, queryLength, headDim: 64, causal: true, precision });
const f32 = options('float32');
const i8 = options('int8');
const cpuMs = (lib, o) => {
  const start = process.cpuUsage();
  lib.attention(q, k, v, o);
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
};
const median = (x) => x.slice().sort((a, b) => a - b)[x.length >> 1];
const time = (calls) => {
  for (const call of calls) call();  // warm-up
  const ms = calls.map(() => []);
  for (let i = 0; i < runs; i++) calls.forEach((call, j) => ms[j].push(call()));
  return ms.map(median);
};
const [a, b] = time([() => cpuMs(ca, i8), () => cpuMs(ca, f32)]);
console.log(`${process.version} (1, ${heads}, ${queryLength}, 64) causal: int8 ${a.toFixed(1)} ms vs float32 ${b.toFixed(1)} ms CPU: ×${(a / b).toFixed(3)}`);
if (other) {
  const before = await load(resolve(other));
  const [x, y] = time([() => cpuMs(ca, i8), () => cpuMs(before, i8)]);
  console.log(`  int8 here ${x.toFixed(1)} ms vs ${other} ${y.toFixed(1)} ms CPU: ×${(x / y).toFixed(3)}`);
}
