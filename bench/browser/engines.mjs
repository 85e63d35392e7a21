#!/usr/bin/env node
// The browser table's headline case in every engine of
// tests/browser/engines.mjs (Chromium, Firefox ESR, WebKitGTK; each from
// its Debian package): ours, single-threaded and threads builds, on the
// page's thread and in a module worker, timed interleaved after warm-up as
// bench/browser/run.mjs times them (each case a fresh context, or a
// WebKitGTK session), with the SIMD128 mul+add and relaxed-SIMD FMA
// limits measured in that engine (bench/lib/simd-limit.mjs): a row per
// engine. Also called by bench/run.mjs after the Chromium table.
//
//   node bench/browser/engines.mjs [--quick]
//   BROWSER_ENGINES=firefox node bench/browser/engines.mjs
import { ENGINES } from '../../tests/browser/engines.mjs';
import { fmtMs } from '../lib/format.mjs';
import { flops, shapeName } from '../lib/shapes.mjs';
import { gflops } from '../lib/timing.mjs';
import { BROWSER_SHAPES, runBrowserBench } from './run.mjs';

/** (1, 12, 1024, 64): the README's headline shape. */
export const ENGINE_SHAPE = BROWSER_SHAPES[1];

/** Runs the headline case in each engine; resolves to a row per engine (or why it has none). */
export async function runEngineTable({ quick = false, log = console.error } = {}) {
  const rows = [];
  for (const engine of ENGINES) {
    if (engine.unavailable) {
      rows.push({ engine: engine.name, skipped: engine.unavailable });
      continue;
    }
    try {
      const r = await runBrowserBench({ engine, quick, peers: ['ours'], shapes: [ENGINE_SHAPE], cold: false });
      const ms = {};
      const threads = {};
      for (const row of r.shapes) {
        for (const [key, c] of Object.entries(row.cases)) {
          ms[`${row.mode} ${key}`] = c.medianMs;
          threads[key] = c.threads;
        }
      }
      rows.push({ engine: engine.name, version: r.version, simd: r.simd, ms, threads });
    } catch (e) {
      log(`  ${engine.name}: ${String(e?.message ?? e).split('\n')[0]}`);
      rows.push({ engine: engine.name, skipped: `failed: ${String(e?.message ?? e).split('\n')[0]}` });
    }
  }
  return rows;
}

/** The engines table (markdown). */
export function renderEngineTable(rows) {
  const rate = (ms) => (ms ? gflops(flops(ENGINE_SHAPE), ms).toFixed(1) : '—');
  const lines = [
    `Ours at ${shapeName(ENGINE_SHAPE)} in each browser engine (Debian's packages; bench/browser/engines.mjs): ` +
      'interleaved medians after warm-up, each case in a fresh context; 1T the single build, 2T the threads build ' +
      'with 2 threads; the limits measured on a page\'s thread of that engine (bench/lib/simd-limit.mjs).',
    '',
    '| engine | SIMD128 mul+add GFLOP/s | relaxed FMA GFLOP/s | page 1T ms | page 2T ms | worker 1T ms | worker 2T ms | page 2T/1T | page 1T GFLOP/s |',
    '|---|--:|--:|--:|--:|--:|--:|--:|--:|',
  ];
  for (const r of rows) {
    if (r.skipped) {
      lines.push(`| ${r.engine} | skipped: ${r.skipped} | | | | | | | |`);
      continue;
    }
    const m = (k) => r.ms[k];
    const t = (k) => (m(k) === undefined ? '—' : fmtMs(m(k)));
    const fma = r.simd.fma.limit === null ? 'n/a' : r.simd.fma.limit.toFixed(1);
    const scale = m('page ours-1') && m('page ours-2') ? `${(m('page ours-1') / m('page ours-2')).toFixed(2)}×` : '—';
    lines.push(`| ${r.version} | ${r.simd.simd128.limit.toFixed(1)} | ${fma} | ${t('page ours-1')} | ` +
      `${t('page ours-2')} | ${t('worker ours-1')} | ${t('worker ours-2')} | ${scale} | ${rate(m('page ours-1'))} |`);
  }
  return lines.join('\n');
}

if (process.argv[1] === new URL(import.meta.url).pathname) {
  const rows = await runEngineTable({ quick: process.argv.includes('--quick') });
  console.log(renderEngineTable(rows));
}
