#!/usr/bin/env node
// The headline shapes (attention, the module, a decode step against a KV
// cache) in headless Chromium (Debian's /usr/bin/chromium via
// playwright-core): ours (single-threaded and pthreads builds) against
// onnxruntime-web (1 and 2 threads), on the page's thread and in a module
// worker, each case in its own browser context (its own renderer process,
// so its own page thread), timed interleaved after warm-up; and the cold
// start, init() to the first result, in fresh contexts. The SIMD128
// mul+add limit and the relaxed-SIMD FMA limit (bench/lib/simd-limit.mjs)
// are measured on a page's thread before and after the timed cases; the
// higher of the two readings is the limit (as bench/run.mjs does in Node).
//
//   node bench/browser/run.mjs [--quick] [--mode=page|worker] [--only=SHAPE]
//                              [--profile]
//
// --profile: a V8 CPU profile (CDP Profiler) of ours' single-threaded
// timed runs per shape, top functions printed (where the time goes in
// Chromium's V8). Also called by bench/run.mjs (runBrowserBench).
import { chromium } from 'playwright-core';
import { fmtMs } from '../lib/format.mjs';
import {
  ATTENTION_SHAPES, DECODE_SHAPES, MHA_SHAPE, shapeName,
} from '../lib/shapes.mjs';
import { bestChains, withEndReading } from '../lib/simd-limit.mjs';
import { median, planRuns, summarize } from '../lib/timing.mjs';
import { ortVariants } from '../peers/ort-common.mjs';
import { renderBrowserTable } from './report.mjs';
import { startBenchServer } from './server.mjs';

const log = (...a) => console.error(...a);
const SEED = 1234;

export const BROWSER_SHAPES = [
  ATTENTION_SHAPES.find((s) => s.heads === 12 && s.length === 512 && s.batch === 1),
  ATTENTION_SHAPES.find((s) => s.heads === 12 && s.length === 1024 && s.batch === 1),
  ATTENTION_SHAPES.find((s) => s.heads === 1 && s.length === 4096),
  MHA_SHAPE,
  // The decode issue's headline: a Llama-3-8B-shaped step at 4096 cached tokens.
  DECODE_SHAPES.find((s) => s.kvHeads < s.heads && s.cacheLength === 4096),
];
export const COLD_SHAPE = BROWSER_SHAPES[0];
export { renderBrowserTable };

const CONFIGS = [
  { key: 'ours-1', peer: 'ours', threads: 1 },
  { key: 'ours-2', peer: 'ours', threads: 2 },
  { key: 'ort-web-1', peer: 'ort-web', threads: 1 },
  { key: 'ort-web-2', peer: 'ort-web', threads: 2 },
];

export async function launchChromium() {
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'],
  });
}

/**
 * A fresh context (renderer process, empty cache) with the bench page:
 * `browser` is Playwright's Chromium, or an engine of
 * tests/browser/engines.mjs started (its newPage: a context, or a
 * WebKitGTK session, of its own).
 */
async function openContext(browser, url, mode) {
  const context = browser.newContext ? await browser.newContext() : null;
  const page = context ? await context.newPage() : await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${url}bench/browser/index.html?mode=${mode}`);
  await page.waitForFunction(() => document.body?.dataset.ready === 'true');
  const call = (op, message) => page.evaluate(([o, m]) => globalThis.bench.call(o, m), [op, message]);
  return { context: context ?? page, page, call, errors };
}

async function openCase(browser, url, mode, config, shape, variant, policy) {
  const c = await openContext(browser, url, mode);
  const reply = await c.call('open', {
    peer: config.peer, config: { threads: config.threads }, shape, variant, seed: SEED, policy,
  });
  if (reply.status !== 'ready') {
    await c.context.close();
    return { ...reply, errors: c.errors };
  }
  return {
    ...reply,
    page: c.page,
    run: async (count) => (await c.call('run', { count })).samples,
    close: async () => { await c.call('close'); await c.context.close(); },
  };
}

/** Interleaved rounds over open cases (as bench/lib/runner.mjs's interleave). */
async function interleave(cases, policy) {
  const roundMs = cases.reduce((s, c) => s + c.estimateMs, 0);
  const runs = planRuns(roundMs, Math.max(...cases.map((c) => c.estimateMs)), policy);
  const samples = cases.map(() => []);
  for (let r = 0; r < runs; ++r) {
    const order = cases.map((_, i) => i);
    if (r % 2) order.reverse();
    for (const i of order) samples[i].push(...(await cases[i].run(1)));
  }
  return samples.map(summarize);
}

async function profileRuns(c, runs) {
  const session = await c.page.context().newCDPSession(c.page);
  await session.send('Profiler.enable');
  await session.send('Profiler.setSamplingInterval', { interval: 200 });
  await session.send('Profiler.start');
  await c.run(runs);
  const { profile } = await session.send('Profiler.stop');
  const self = new Map();
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const counts = new Map();
  for (const id of profile.samples) counts.set(id, (counts.get(id) ?? 0) + 1);
  let total = 0;
  for (const [id, n] of counts) {
    const f = byId.get(id).callFrame;
    const name = `${f.functionName || '(anonymous)'} ${f.url.split('/').pop()}`;
    self.set(name, (self.get(name) ?? 0) + n);
    total += n;
  }
  return [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, 12)
    .map(([name, n]) => `${((100 * n) / total).toFixed(1).padStart(5)}%  ${name}`);
}

/**
 * The SIMD128 and relaxed-FMA limits on a fresh page's thread: every
 * accumulator count at the start, the best one again at the end (`start`:
 * the first reading); `limit` is the higher reading (other load only lowers
 * it), null where the engine does not validate relaxed SIMD.
 */
async function measureLimits(browser, url, start = null) {
  const c = await openContext(browser, url, 'page');
  const measure = async (fma, chainCounts) => {
    const r = await c.call('simdLimit', { fma, chainCounts });
    if (r.status === 'error') throw new Error(r.reason);
    return r;
  };
  try {
    const out = {};
    for (const [kind, fma] of [['simd128', false], ['fma', true]]) {
      const first = start?.[kind] ?? await measure(fma);
      out[kind] = !start || first.gflops === null ? withEndReading(first)
        : withEndReading(first, (await measure(fma, [bestChains(first.byChains)])).gflops);
    }
    return out;
  } finally {
    await c.context.close();
  }
}

/**
 * Runs the browser table; resolves to its results object. `engine` (an
 * engine of tests/browser/engines.mjs; Chromium through Playwright when
 * absent), `peers` (the implementations: ours and onnxruntime-web),
 * `shapes` and `cold` (the cold start) narrow it for the engines table.
 */
export async function runBrowserBench({
  quick = false, modes = ['page', 'worker'], only, profile = false, engine, peers = ['ours', 'ort-web'], shapes: chosen,
  cold = true,
} = {}) {
  const policy = quick
    ? { warmupRuns: 2, warmupMs: 300, budgetMs: 600, minRuns: 3, maxRuns: 9 }
    : { warmupRuns: 3, warmupMs: 1500, budgetMs: 2500, minRuns: 5, maxRuns: 21 };
  const server = await startBenchServer();
  const browser = engine ? await engine.start() : await launchChromium();
  const version = engine ? browser.version : `Chromium ${browser.version()}`;
  const results = { version: engine ? version : browser.version(), engine: engine?.name ?? 'Chromium', modes, shapes: [], cold: [], coldShape: COLD_SHAPE };
  try {
    log(`${version}: SIMD128 and relaxed-SIMD FMA limits...`);
    const start = await measureLimits(browser, server.url);
    let shapes = chosen ?? (quick ? BROWSER_SHAPES.slice(0, 1) : BROWSER_SHAPES);
    if (only) shapes = shapes.filter((s) => shapeName(s).includes(only));
    for (const mode of modes) {
      for (const shape of shapes) {
        log(`${version}, ${mode}: ${shapeName(shape)}`);
        const shapePolicy = shape.kind === 'mha' ? { ...policy, minRuns: 3 } : policy;
        const row = { mode, shape, cases: {} };
        const open = [];
        for (const config of CONFIGS.filter((c) => peers.includes(c.peer))) {
          const oursVariant = { mha: 'MultiHeadAttention', decode: 'resident KV cache' }[shape.kind] ?? 'attention';
          const variants = config.peer === 'ours'
            ? [oursVariant]
            : (shape.kind === 'mha' ? ['graph'] : ortVariants(shape));
          // onnxruntime-web: the fastest variant after warm-up.
          let best = null;
          for (const variant of variants) {
            const c = await openCase(browser, server.url, mode, config, shape, variant, shapePolicy);
            if (c.status !== 'ready') {
              log(`  ${config.key} ${variant}: ${c.status} ${c.reason ?? ''} ${c.errors?.join('; ') ?? ''}`);
              continue;
            }
            if (!best || c.estimateMs < best.estimateMs) {
              if (best) await best.close();
              best = { ...c, variant };
            } else {
              await c.close();
            }
          }
          if (best) open.push({ config, c: best });
        }
        // The outputs agree (a sampled sum, host.mjs) before anything is timed.
        const ref = open.find((o) => o.config.key === 'ours-1')?.c.checksum;
        row.mismatch = open.filter((o) => ref !== undefined &&
          !(Math.abs(o.c.checksum - ref) <= 1e-3 * (1 + Math.abs(ref)))).map((o) => o.config.key);
        // Ours alone first (our own 2-thread scaling, no onnxruntime pool
        // spinning on the cores after its runs), then everything interleaved.
        const ours = open.filter((o) => o.config.peer === 'ours');
        if (ours.length === 2) {
          const alone = await interleave(ours.map((o) => o.c), shapePolicy);
          row.oursAlone = { 'ours-1': alone[0].medianMs, 'ours-2': alone[1].medianMs };
        }
        const stats = await interleave(open.map((o) => o.c), shapePolicy);
        open.forEach((o, i) => {
          row.cases[o.config.key] = { ...stats[i], variant: o.c.variant, checksum: o.c.checksum, threads: o.c.threads };
          log(`  ${o.config.key} (${o.c.variant}): ${fmtMs(stats[i].medianMs)} ms`);
        });
        if (profile && !engine) {
          const o = open.find((x) => x.config.key === 'ours-1');
          if (o && mode === 'page') row.profile = await profileRuns(o.c, Math.max(3, Math.ceil(2000 / o.c.estimateMs)));
          if (row.profile) log(row.profile.map((l) => `    ${l}`).join('\n'));
        }
        for (const o of open) await o.c.close();
        results.shapes.push(row);
      }
    }
    // Cold start: fresh contexts (empty HTTP and code caches), page thread.
    const coldRuns = quick ? 1 : 3;
    for (const config of CONFIGS.filter((c) => cold && c.key !== 'ort-web-2' && peers.includes(c.peer))) {
      const variant = config.peer === 'ours' ? 'attention' : 'MatMul graph';
      const times = [];
      for (let r = 0; r < coldRuns; ++r) {
        const c = await openContext(browser, server.url, 'page');
        const reply = await c.call('coldStart', {
          peer: config.peer, config: { threads: config.threads }, shape: COLD_SHAPE, variant, seed: SEED,
        });
        await c.context.close();
        if (reply.ms !== undefined) times.push(reply.ms);
        else log(`  cold ${config.key}: ${reply.reason}`);
      }
      if (times.length) {
        results.cold.push({ key: config.key, variant, medianMs: median(times), runs: times.length });
        log(`  cold start ${config.key}: ${fmtMs(median(times))} ms`);
      }
    }
    results.simd = await measureLimits(browser, server.url, start);
    log(`  SIMD128 ${results.simd.simd128.limit.toFixed(1)} GFLOP/s, relaxed FMA ` +
      `${results.simd.fma.limit?.toFixed(1) ?? `n/a: ${results.simd.fma.reason}`}`);
  } finally {
    await browser.close();
    await server.close();
  }
  return results;
}

if (process.argv[1] === new URL(import.meta.url).pathname) {
  const argv = process.argv.slice(2);
  const opt = (n) => argv.find((a) => a.startsWith(`--${n}=`))?.split('=')[1];
  const results = await runBrowserBench({
    quick: argv.includes('--quick'),
    modes: opt('mode') ? [opt('mode')] : undefined,
    only: opt('only'),
    profile: argv.includes('--profile'),
  });
  console.log(renderBrowserTable(results));
}
