#!/usr/bin/env node
// The real-model table (issue 31): a GPT-2-small-shaped GPTModel (124M
// parameters, random weights: the speed does not depend on the values) in
// Node, ours (single and threads builds) against onnxruntime-web (wasm, 1
// and 2 threads, each in a process of its own: its thread count is
// process-wide) and onnxruntime-node (native, 1 and 2 threads) running the
// same model with the same weights as an ONNX graph (bench/lib/onnx-gpt.mjs;
// its logits checked against ours first). Prefill of 128 and 1024 tokens;
// one cached generation step after 128 and 1024 tokens (ours); the SIMD128
// limit and the read bandwidth measured in the same run; the targets on
// lines of their own.
//   node bench/model.mjs [--quick]        (bench/run.mjs --model runs it too)
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { gptModelBytes } from './lib/onnx-gpt.mjs';
import { measureReadBandwidth } from './lib/read-bandwidth.mjs';
import { CHAIN_COUNTS, measureSimdKernel } from './lib/simd-limit.mjs';

const here = resolve(new URL('..', import.meta.url).pathname);
const CFG = { vocab_size: 50257, context_length: 1024, emb_dim: 768, n_heads: 12, n_layers: 12, drop_rate: 0, qkv_bias: true };
const median = (a) => [...a].sort((x, y) => x - y)[a.length >> 1];
const ids = (T) => Int32Array.from({ length: T }, (_, i) => (i * 7919 + 13) % CFG.vocab_size);

/** Multiply-adds × 2 of a prefill of T tokens: every projection and out_head, and the causal attention. */
export function prefillFlops(T) {
  const E = CFG.emb_dim;
  const perLayer = 2 * T * (4 * E * E + 8 * E * E) + 2 * E * T * (T + 1);
  return CFG.n_layers * perLayer + 2 * T * E * CFG.vocab_size;
}

/** ms per call: `warm` warm-up calls, then the median of `reps`. */
async function time(fn, { warm = 1, reps = 3 } = {}) {
  for (let i = 0; i < warm; i++) await fn();
  const ms = [];
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    await fn();
    ms.push(performance.now() - t0);
  }
  return median(ms);
}

/** onnxruntime's prefill times for the model file at `path` (one process: ORT-web's threads are process-wide). */
async function ortTimes(peer, threads, path, lengths, quick) {
  let ort;
  let options;
  if (peer === 'web') {
    ort = await import('onnxruntime-web');
    const { createRequire } = await import('node:module');
    const dist = resolve(createRequire(import.meta.url).resolve('onnxruntime-web'), '..');
    Object.assign(ort.env.wasm, { numThreads: threads, simd: true, proxy: false, wasmPaths: `${pathToFileURL(dist).href}/` });
    ort.env.logLevel = 'error';
    options = { executionProviders: ['wasm'], graphOptimizationLevel: 'all' };
  } else {
    const mod = await import('onnxruntime-node');
    ort = mod.InferenceSession ? mod : mod.default;
    options = { executionProviders: ['cpu'], graphOptimizationLevel: 'all', intraOpNumThreads: threads, interOpNumThreads: 1 };
  }
  const out = {};
  for (const T of lengths) {
    const session = await ort.InferenceSession.create(readFileSync(`${path}.${T}.onnx`), options);
    const feeds = { input_ids: new ort.Tensor('int64', BigInt64Array.from(ids(T), BigInt), [1, T]) };
    const run = () => session.run(feeds);
    const first = await run();
    out[T] = { ms: await time(run, { warm: 0, reps: T > 128 || quick ? 1 : 3 }), logits: T === 16 ? Array.from(first.logits.data) : null };
    await session.release();
  }
  return out;
}

// A child process: one onnxruntime configuration, its times as JSON on stdout.
const child = process.argv.find((a) => a.startsWith('--child='));
if (child) {
  const [peer, threads, path, lengths, quick] = child.slice(8).split(',');
  const result = await ortTimes(peer, Number(threads), path, lengths.split(':').map(Number), quick === 'quick');
  // A file, not stdout: exit() would cut a pipe's pending writes short.
  writeFileSync(`${path}.${peer}.${threads}.json`, JSON.stringify(result));
  process.exit(0);
}

/**
 * The table's rows and limits. `lengths`: the prefill lengths timed.
 * @param {{ quick?: boolean, log?: (...a: unknown[]) => void }} [options]
 */
export async function runModelTable({ quick = false, log = () => {} } = {}) {
  const lengths = quick ? [128] : [128, 1024];
  const { init } = await import(pathToFileURL(resolve(here, 'dist/node.mjs')).href);
  log('limits: SIMD128 mul+add, read bandwidth...');
  const simd = Math.max(...CHAIN_COUNTS.map((c) => measureSimdKernel(c)));
  const readGBs = measureReadBandwidth(512 * 2 ** 20, { repeats: 5 });
  const rows = [];
  const dir = mkdtempSync(join(tmpdir(), 'ca-gpt-'));
  const base = join(dir, 'gpt2');
  let weightsBytes = 0;
  let check = null;
  try {
    for (const build of ['single', 'threads']) {
      const ca = await init({ build, threads: build === 'threads' ? 2 : 1 });
      const rss0 = process.memoryUsage().rss;
      ca.manualSeed(1);
      const model = new ca.GPTModel(CFG).eval();
      weightsBytes = model.numParameters() * 4;
      if (build === 'single') {
        log('writing the ONNX graphs (same weights)...');
        const sd = model.stateDict();
        for (const T of [16, ...lengths]) {
          writeFileSync(`${base}.${T}.onnx`, gptModelBytes({ vocab: CFG.vocab_size, emb: CFG.emb_dim, heads: CFG.n_heads, layers: CFG.n_layers, tokens: T }, sd));
        }
        check = model.forward(ids(16), [1, 16]);
      }
      const row = { name: `ours, ${build}`, threads: ca.threads, prefill: {}, step: {} };
      for (const T of lengths) {
        log(`ours ${build}: prefill ${T}...`);
        row.prefill[T] = await time(() => model.forward(ids(T), [1, T]), { warm: T > 128 ? 0 : 1, reps: T > 128 || quick ? 1 : 3 });
      }
      for (const T of lengths) {
        log(`ours ${build}: a generation step after ${T} tokens...`);
        // The steps end at T tokens (the context's end for 1024).
        const count = quick ? 3 : 5;
        model.resetCache();
        model.forward(ids(T - count), [1, T - count], { useCache: true });
        const steps = [];
        for (let i = 0; i < count; i++) {
          const t0 = performance.now();
          model.forward([i + 1], [1, 1], { useCache: true });
          steps.push(performance.now() - t0);
        }
        row.step[T] = median(steps);
      }
      row.rssMB = (process.memoryUsage().rss - rss0) / 2 ** 20;
      row.cacheMB = 2 * CFG.n_layers * (Math.max(...lengths) + 5) * CFG.emb_dim * 4 / 2 ** 20;
      model.resetCache();
      rows.push(row);
      ca.dispose();
    }
    for (const [peer, label] of [['web', 'onnxruntime-web'], ['node', 'onnxruntime-node']]) {
      for (const threads of [1, 2]) {
        log(`${label} ${threads} thread(s)...`);
        execFileSync(process.execPath, [new URL(import.meta.url).pathname,
          `--child=${peer},${threads},${base},${[16, ...lengths].join(':')},${quick ? 'quick' : 'full'}`],
        { stdio: ['ignore', 'inherit', 'inherit'] });
        const out = JSON.parse(readFileSync(`${base}.${peer}.${threads}.json`, 'utf8'));
        const diff = out[16].logits.reduce((m, x, i) => Math.max(m, Math.abs(x - check[i]) / (1 + Math.abs(check[i]))), 0);
        rows.push({ name: `${label}, ${threads} thread${threads > 1 ? 's' : ''}`, threads,
          prefill: Object.fromEntries(lengths.map((T) => [T, out[T].ms])), step: {}, check: diff });
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return { rows, simd, readGBs, weightsBytes, lengths };
}

/** The table as text, each target on a line of its own. */
export function renderModel({ rows, simd, readGBs, weightsBytes, lengths }) {
  const lines = ['Real model: a GPT-2-small-shaped GPTModel (124M, 163,009,536 parameters with the untied out_head), random weights, Node',
    `SIMD128 mul+add limit ${simd.toFixed(1)} GFLOP/s per thread; read bandwidth ${readGBs.toFixed(1)} GB/s (512 MiB); ` +
    `the weights ${(weightsBytes / 2 ** 20).toFixed(0)} MiB: one read ${(weightsBytes / readGBs / 1e6).toFixed(1)} ms`, '',
    `| | ${lengths.map((T) => `prefill ${T} (ms, GFLOP/s)`).join(' | ')} | ${lengths.map((T) => `step after ${T} (ms)`).join(' | ')} |`,
    `|---|${lengths.map(() => '---').join('|')}|${lengths.map(() => '---').join('|')}|`];
  for (const r of rows) {
    const pre = lengths.map((T) => `${r.prefill[T].toFixed(0)} (${(prefillFlops(T) / r.prefill[T] / 1e6).toFixed(1)})`);
    const step = lengths.map((T) => (r.step[T] === undefined ? '—' : r.step[T].toFixed(1)));
    lines.push(`| ${r.name}${r.check !== undefined ? ` (logits vs ours: ${r.check.toExponential(1)})` : ''} | ${pre.join(' | ')} | ${step.join(' | ')} |`);
  }
  lines.push('');
  const find = (name) => rows.find((r) => r.name === name);
  for (const [ours, ort, t] of [['ours, single', 'onnxruntime-web, 1 thread', 1], ['ours, threads', 'onnxruntime-web, 2 threads', 2]]) {
    for (const T of lengths) {
      const ratio = find(ort).prefill[T] / find(ours).prefill[T];
      lines.push(`Target: prefill ${T}, ${t} thread(s), ≥ 1.5× onnxruntime-web: ${ratio.toFixed(2)}×, ${ratio >= 1.5 ? 'met' : 'missed'}`);
      const share = prefillFlops(T) / find(ours).prefill[T] / 1e6 / (simd * t);
      lines.push(`Target: prefill ${T}, ${t} thread(s), ≥ 70 % of the SIMD limit: ${(100 * share).toFixed(0)} %, ${share >= 0.7 ? 'met' : 'missed'}`);
    }
  }
  const readMs = weightsBytes / readGBs / 1e6;
  for (const T of lengths) {
    const step = find('ours, single').step[T];
    lines.push(`Target: a cached step after ${T} tokens within 1.3× one read of the weights (${readMs.toFixed(1)} ms): ` +
      `${step.toFixed(1)} ms = ${(step / readMs).toFixed(2)}×, ${step <= 1.3 * readMs ? 'met' : 'missed'}`);
  }
  const single = find('ours, single');
  const budget = (weightsBytes / 2 ** 20 + single.cacheMB) * 1.1;
  lines.push(`Target: memory ≤ weights + caches + 10 % (${budget.toFixed(0)} MiB): the process grew ${single.rssMB.toFixed(0)} MiB, ` +
    `${single.rssMB <= budget ? 'met' : 'missed'}`);
  return lines.join('\n');
}

if (process.argv[1] === new URL(import.meta.url).pathname) {
  const result = await runModelTable({ quick: process.argv.includes('--quick'), log: (...a) => console.error(...a) });
  console.log(renderModel(result));
}
