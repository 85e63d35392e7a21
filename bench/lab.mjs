#!/usr/bin/env node
// The lab's activation-patching grid (web/learn/model/lab.mjs: every head at
// every position and each whole head and layer; per layer the rows share
// the corrupted run up to and including that layer's attention, and only
// the layers after it run, once on all rows: lab.mjs's patchedLosses)
// timed per model size, untrained (the time does not depend on the values:
// the rows before the repeat, equal to the corrupted run, are skipped in
// any model), in Node on the single build: the page runs it in the
// training worker. Target: the default Learn model's grid under 1 s.
//   node bench/lab.mjs [--rounds=R]      (bench/run.mjs --lab prints it too)
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { runLab } from '../web/learn/model/lab.mjs';
import { DEFAULTS, Trainer } from '../web/learn/model/trainer.mjs';

const here = resolve(new URL('..', import.meta.url).pathname);

/** Model sizes: the page's default, then larger ones the settings allow. */
export const LAB_SIZES = [
  { name: 'default (2 layers × 4 heads, d 64, 64 tokens)', layers: 2, heads: 4, dModel: 64, contextLength: 64 },
  { name: '2 layers × 8 heads, d 128, 64 tokens', layers: 2, heads: 8, dModel: 128, contextLength: 64 },
  { name: '3 layers × 8 heads, d 128, 128 tokens (near the settings’ limits)', layers: 3, heads: 8, dModel: 128, contextLength: 128 },
];

/** Median grid time (ms) per size over `rounds` runs after one warm-up: [{ name, ms, lab }]. */
export async function runLabTable({ rounds = 5, log = () => {} } = {}) {
  const { init } = await import(pathToFileURL(resolve(here, 'dist/node.mjs')).href);
  const ca = await init({ build: 'single' });
  const rows = [];
  try {
    for (const size of LAB_SIZES) {
      log(`lab grid, ${size.name}...`);
      const trainer = new Trainer(ca, { ...DEFAULTS, ...size });
      runLab(trainer);
      const times = [];
      let lab = null;
      for (let r = 0; r < rounds; r++) {
        lab = runLab(trainer);
        times.push(lab.patchingMs);
      }
      times.sort((a, b) => a - b);
      rows.push({ name: size.name, ms: times[times.length >> 1], lab: lab.ms, cells: size.layers * size.heads * size.contextLength });
      trainer.dispose();
    }
  } finally {
    ca.dispose();
  }
  return rows;
}

/** The table as text, with the target's line. */
export function renderLab(rows) {
  const lines = ['Lab: the activation-patching grid (every head × position, each head, each layer), Node, single build',
    '', '| model | head × position cells | grid ms (median) | whole lab ms |', '|---|---|---|---|'];
  for (const r of rows) lines.push(`| ${r.name} | ${r.cells} | ${r.ms.toFixed(0)} | ${r.lab.toFixed(0)} |`);
  const first = rows[0];
  lines.push('', `Target: the default model's grid under 1000 ms: ${first.ms.toFixed(0)} ms, ${first.ms < 1000 ? 'met' : 'missed'}`);
  return lines.join('\n');
}

if (process.argv[1] === new URL(import.meta.url).pathname) {
  const rounds = Number(process.argv.find((a) => a.startsWith('--rounds='))?.slice(9) ?? 5);
  console.log(renderLab(await runLabTable({ rounds, log: (...a) => console.error(...a) })));
}
