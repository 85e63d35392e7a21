#!/usr/bin/env node
// The benchmark behind `npm run bench`: causal float32 attention in wasm,
// ours (single-threaded and pthreads builds) against onnxruntime-web,
// tfjs-backend-wasm, ruvector-attention-wasm and plain JS loops, one table
// from one Node process; then the native Google Benchmark per SIMD target
// against onnxruntime-node; and the decode table (one generation step against
// a KV cache, bench/lib/decode.mjs). Prints the tables, writes
// bench/out/results.json and, after a full run, bench/RESULTS.md.
//
//   node bench/run.mjs --model [--quick] [--only=ours-1,ort-web-1,...] [--rows=prefill-128,step-1024,...]
//                                 (the real-model table only, bench/lib/model.mjs; bench/out/model.json)
//   node bench/run.mjs [--quick] [--no-native] [--no-browser] [--no-write] [--no-model]
//                      [--only=ort-web,plain-js,...] [--cap=SECONDS] [--decode [--rows=ragged,window]] [--training]
//   node bench/run.mjs --render   (RESULTS.md again from bench/out/results.json; its
//                                  hand-written <!-- kept --> parts stay)
//   node bench/run.mjs --options [--quick] [--rows=padding,bshd]   (the options table only, bench/lib/options.mjs)
//   node bench/run.mjs --int8 [--quick]   (the int8 attention rows only, bench/lib/int8.mjs)
//
// --decode: only the decode table (writes bench/out/decode.json, not
// RESULTS.md); with --rows=ragged,window only the rows of many sequences
// and the window cache.
// --quick: three small shapes, short timing budgets, no module row, does not
// write RESULTS.md (a sanity run). --only: ours plus these peers (does not
// write RESULTS.md; no Chromium table). --no-browser: without the Chromium
// table (bench/browser/run.mjs). --cap: skip a peer on a shape when its rate on the
// previous shape predicts more than this per run (default 4 s).
// --training: only the training table (forward + backward,
// bench/lib/training.mjs); prints it, writes nothing but
// bench/out/training.json.
// --nodes [--save]: only the table per Node version (Node 24 and 22 from
// tests/clients' packages, and this one; bench/lib/node-versions.mjs);
// --save puts it in place of the full run's in RESULTS.md.
// --lab: only the lab's patching grid per model size (bench/lab.mjs).
// --learn: only the Learn rows (the demo's default model trained step by
// step, Node and Chromium; bench/learn.mjs); prints them, writes nothing.
// --frames: only the demo page's frame budget in Chromium (the longest frame
// gap while it computes and while it trains; bench/browser/frames.mjs).
//
// Method: every case (implementation, threads, shape, variant) lives in its
// own worker thread. Per shape, ours single and ours threads stay open, and
// each peer case is timed interleaved with them, run by run, so that every
// speed-up compares numbers taken under the same machine load (the machine
// is shared). Not a test: nothing here asserts on time.

import {
  existsSync, mkdirSync, readFileSync, writeFileSync,
} from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { renderFrames, runFrameBudget } from './browser/frames.mjs';
import { runEngineTable } from './browser/engines.mjs';
import { runBrowserBench } from './browser/run.mjs';
import { renderLab, runLabTable } from './lab.mjs';
import { runLearnTable } from './learn.mjs';
import { renderDecode, runDecodeTable } from './lib/decode.mjs';
import { renderModelText, runModelTable } from './lib/model.mjs';
import { renderNodeVersions, replaceNodes, runNodeVersions } from './lib/node-versions.mjs';
import { fmtMs } from './lib/format.mjs';
import { machineInfo, machineLines } from './lib/machine.mjs';
import { listNativeShapes, nativeArgs, runNativeShape } from './lib/native.mjs';
import { renderInt8, runInt8Table } from './lib/int8.mjs';
import { renderOptions, runOptionsTable } from './lib/options.mjs';
import { renderReport, renderResultsMd } from './lib/report.mjs';
import { interleave, openCase } from './lib/runner.mjs';
import {
  ATTENTION_SHAPES, MEMORY_CHECK_SHAPE, MHA_SHAPE, flops, shapeName,
} from './lib/shapes.mjs';
import {
  bestChains, measureFmaLimit, measureSimdLimit, measureSimdLimitThreads, withEndReading,
} from './lib/simd-limit.mjs';
import { benchPolicy, gflops, median } from './lib/timing.mjs';
import { renderLearnText } from './lib/learn-steps.mjs';
import { renderTrainingText, runTrainingTable } from './lib/training.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const argv = process.argv.slice(2);
const flag = (name) => argv.includes(`--${name}`);
const option = (name) => argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
const quick = flag('quick');
const only = option('only')?.split(',');
const capMs = Number(option('cap') ?? 4) * 1000;
const SEED = 1234;

/** bench/RESULTS.md as it is: its hand-written parts (<!-- kept --> … <!-- /kept -->) stay. */
const previousResultsMd = () => (existsSync(join(root, 'bench/RESULTS.md'))
  ? readFileSync(join(root, 'bench/RESULTS.md'), 'utf8') : '');

// --render: bench/RESULTS.md again from the latest full run's
// bench/out/results.json (after a change to the report only; the numbers
// stay that run's).
if (flag('render')) {
  const results = JSON.parse(readFileSync(join(root, 'bench/out/results.json'), 'utf8'));
  writeFileSync(join(root, 'bench/RESULTS.md'), renderResultsMd(results, previousResultsMd()));
  console.error(`Wrote bench/RESULTS.md from bench/out/results.json (the run started ${results.started})`);
  process.exit(0);
}

const policy = benchPolicy(quick);
const slowPolicy = { ...policy, minRuns: 3 };

const peerUrl = (file) => new URL(`./peers/${file}`, import.meta.url);
const PEERS = {
  ours: peerUrl('ours.mjs'),
  'ort-web': peerUrl('ort-web.mjs'),
  'tfjs-wasm': peerUrl('tfjs-wasm.mjs'),
  ruvector: peerUrl('ruvector.mjs'),
  'plain-js': peerUrl('plain-js.mjs'),
  'ort-node': peerUrl('ort-node.mjs'),
};
const peerModules = Object.fromEntries(await Promise.all(
  Object.entries(PEERS).map(async ([k, url]) => [k, await import(url)]),
));

// Rows of the wasm table, in order within each shape. ruvector has no thread
// option and plain JS is single-threaded by construction: no 2-thread rows.
const OURS = [
  { key: 'ours-1', peer: 'ours', threads: 1 },
  { key: 'ours-2', peer: 'ours', threads: 2 },
];
const PEER_CONFIGS = [
  { key: 'ort-web-1', peer: 'ort-web', threads: 1 },
  { key: 'ort-web-2', peer: 'ort-web', threads: 2 },
  { key: 'tfjs-wasm-1', peer: 'tfjs-wasm', threads: 1 },
  { key: 'tfjs-wasm-2', peer: 'tfjs-wasm', threads: 2 },
  { key: 'ruvector-1', peer: 'ruvector', threads: 1 },
  { key: 'plain-js-1', peer: 'plain-js', threads: 1 },
].filter((c) => !only || only.includes(c.peer));
const CONFIGS = [...OURS, ...PEER_CONFIGS].map((c) => ({ ...c, name: peerModules[c.peer].name }));

const log = (...a) => console.error(...a);
const started = new Date();

// The Learn rows alone.
if (flag('learn')) {
  for (const line of machineLines(machineInfo(root))) log(line);
  console.log(renderLearnText(await runLearnTable({ log, browser: !flag('no-browser') })));
  process.exit(0);
}

// The lab's patching grid per model size alone.
if (flag('lab')) {
  for (const line of machineLines(machineInfo(root))) log(line);
  console.log(renderLab(await runLabTable({ log })));
  process.exit(0);
}

// The demo page's frame budget alone.
if (flag('frames')) {
  for (const line of machineLines(machineInfo(root))) log(line);
  console.log(renderFrames(await runFrameBudget({ log })));
  process.exit(0);
}

// The training table alone.
if (flag('training')) {
  for (const line of machineLines(machineInfo(root))) log(line);
  const training = await runTrainingTable({
    policy, slowPolicy, capMs: Math.max(capMs, 15000), seed: SEED, log, skipModule: quick,
  });
  console.log(renderTrainingText(training));
  mkdirSync(join(root, 'bench/out'), { recursive: true });
  writeFileSync(join(root, 'bench/out/training.json'), JSON.stringify(training, null, 2));
  process.exit(0);
}

// ---------------------------------------------------------------------------
// Machine, versions, SIMD limit (measured first, with nothing else running)

const machine = machineInfo(root);
for (const line of machineLines(machine)) log(line);

// The options table alone (masks, padding, windows, softcap, sinks, layout).
if (flag('options')) {
  const options = await runOptionsTable({ policy, log, quick, seed: SEED, only: option('rows')?.split(',') });
  console.log([...machineLines(machine), '', 'Attention options against our plain call, one thread, wasm, Node ' +
    `${machine.node}:`, '', renderOptions(options)].join('\n'));
  mkdirSync(join(root, 'bench/out'), { recursive: true });
  writeFileSync(join(root, 'bench/out/options.json'), JSON.stringify(options, null, 2));
  process.exit(0);
}

// The table per Node version alone (Node 24 and 22 from tests/clients, and
// this one): bench/out/nodes.json; --save: also in place of the full run's
// per-Node section (bench/out/results.json, then RESULTS.md), e.g. when
// other load disturbed it there.
if (flag('nodes')) {
  const resultsFile = join(root, 'bench/out/results.json');
  if (flag('save') && (quick || !existsSync(resultsFile))) {
    console.error(quick ? '--save takes a full --nodes run, not --quick'
      : `--save: ${resultsFile} is missing: run the full bench (npm run bench) first`);
    process.exit(2);
  }
  const nodesStarted = new Date().toISOString();
  const nodes = await runNodeVersions({ log, quick });
  const run = {
    started: nodesStarted, finished: new Date().toISOString(), machine,
    loadAtEnd: loadavg(), nodes,
  };
  const { text, targets } = renderNodeVersions(nodes);
  console.log([...machineLines(machine), '', text, '', ...targets].join('\n'));
  mkdirSync(join(root, 'bench/out'), { recursive: true });
  writeFileSync(join(root, 'bench/out/nodes.json'), JSON.stringify(run, null, 2));
  if (flag('save')) {
    let results;
    try {
      results = replaceNodes(JSON.parse(readFileSync(resultsFile, 'utf8')), run);
    } catch (e) {
      console.error(`--save: ${e.message} (this run is in bench/out/nodes.json)`);
      process.exit(2);
    }
    writeFileSync(resultsFile, JSON.stringify(results, null, 2));
    writeFileSync(join(root, 'bench/RESULTS.md'), renderResultsMd(results, previousResultsMd()));
    console.error(`Saved into bench/out/results.json and bench/RESULTS.md (the full run started ${results.started})`);
  }
  process.exit(0);
}

// The int8 attention rows alone.
if (flag('int8')) {
  const int8 = await runInt8Table({ policy, log, quick, seed: SEED });
  console.log([...machineLines(machine), '', `precision 'int8' against float32, one thread, wasm ${int8.engine}, Node ` +
    `${machine.node}:`, '', renderInt8(int8)].join('\n'));
  mkdirSync(join(root, 'bench/out'), { recursive: true });
  writeFileSync(join(root, 'bench/out/int8.json'), JSON.stringify(int8, null, 2));
  process.exit(0);
}

// The real-model table alone (GPT-2-small shape; --rows=prefill-128,step-128,...; --only=ours-1,ort-web-1,...).
if (flag('model')) {
  const model = await runModelTable({ log, quick, only, rows: option('rows')?.split(',') });
  console.log([...machineLines(machine), '', renderModelText(model)].join('\n'));
  mkdirSync(join(root, 'bench/out'), { recursive: true });
  writeFileSync(join(root, 'bench/out/model.json'), JSON.stringify(model, null, 2));
  process.exit(0);
}

if (flag('decode')) {
  const decode = await runDecodeTable({ policy, seed: SEED, log, quick, rows: option('rows')?.split(',') });
  console.log([...machineLines(machine), '', 'Decode step against a KV cache, wasm, Node ' +
    `${machine.node}:`, '', renderDecode(decode)].join('\n'));
  mkdirSync(join(root, 'bench/out'), { recursive: true });
  writeFileSync(join(root, 'bench/out/decode.json'), JSON.stringify(decode, null, 2));
  process.exit(0);
}
log('Measuring the wasm SIMD128 mul+add limit...');
const simd = { start: measureSimdLimit() };
simd.chains = bestChains(simd.start.byChains);
simd.start2 = await measureSimdLimitThreads(2, simd.chains);
log(`  ${simd.start.gflops.toFixed(1)} GFLOP/s on 1 thread, ${simd.start2.toFixed(1)} on 2`);
// The relaxed-SIMD FMA limit, the same loop with f32x4.relaxed_madd (n/a in
// Node 20 without --experimental-wasm-relaxed-simd).
const fmaStart = measureFmaLimit();

// ---------------------------------------------------------------------------
// Cases

const rates = new Map(); // `${config}/${kind}/${variant}` → GFLOP/s on the latest shape it ran
const configNa = new Map(); // config key → why it cannot run at all
let caseCount = 0;

const describe = (config, shape, variant) => `${shapeName(shape)} ${config.peer} ${config.threads}T ${variant}`;

/** Opens one case, or returns why not (n/a, mismatch, error). */
async function open(config, shape, variant, { reference, returnOutput, shapePolicy }) {
  const c = await openCase({
    peer: PEERS[config.peer], config: { threads: config.threads }, shape, variant, seed: SEED,
    policy: shapePolicy, reference, returnOutput,
  });
  caseCount += 1;
  if (c.status === 'n/a' && c.level === 'config') configNa.set(config.key, c.reason);
  if (c.status !== 'ready') log(`  [${caseCount}] ${describe(config, shape, variant)}: ${c.status} ${c.reason ?? ''}`);
  return c;
}

async function closeInto(row, c) {
  const { wasmBytes } = await c.close();
  row.wasmBytes = wasmBytes;
}

const caseRow = (c) => ({
  status: 'ok',
  coldMs: c.coldMs,
  threads: c.threads,
  label: c.label,
  maxAbsDiff: c.maxAbsDiff,
  peakRssDelta: c.peakRssDelta,
  warmupRuns: c.warmupRuns,
});

/**
 * One shape: ours single (the reference output) and ours threads stay open;
 * each peer variant is opened in turn and timed interleaved with them.
 */
async function runShape(shape, { configs, shapePolicy = policy, compareWithOurs = true }) {
  log(`${shapeName(shape)}${shape.note ? ` (${shape.note})` : ''}`);
  const rows = {};
  const ours = [];
  let reference;
  for (const config of configs.filter((c) => c.peer === 'ours')) {
    const variant = peerModules.ours.variants(shape)[0];
    const c = await open(config, shape, variant, {
      shapePolicy, returnOutput: !reference && compareWithOurs, reference,
    });
    if (c.output) reference = c.output;
    delete c.output;
    if (c.status !== 'ready') {
      rows[config.key] = { status: c.status, reason: c.reason, maxAbsDiff: c.maxAbsDiff, variant };
      continue;
    }
    rows[config.key] = { ...caseRow(c), variant };
    ours.push({ config, c });
  }
  // Ours alone, interleaved: the rows of ours, and the thread scaling.
  if (ours.length) {
    const { stats, otherLoad } = await interleave(ours.map((o) => o.c), shapePolicy);
    ours.forEach((o, i) => Object.assign(rows[o.config.key], stats[i], { otherLoad }));
    for (const o of ours) {
      log(`  [${caseCount}] ${describe(o.config, shape, rows[o.config.key].variant)}: ` +
        `${fmtMs(rows[o.config.key].medianMs)} ms (${rows[o.config.key].runs} runs)`);
    }
  }
  // Ours single / ours threads: from the session of the two alone (our own
  // scaling), and from every session of this shape, where a peer's threads
  // share the two cores (onnxruntime's pool spins after each run).
  const scalings = [];
  const addScaling = (stats) => {
    if (ours.length === 2) scalings.push(stats[0].medianMs / stats[1].medianMs);
  };
  if (ours.length === 2) addScaling([rows['ours-1'], rows['ours-2']]);
  const aloneScaling = scalings[0];

  // Each peer variant, interleaved with ours.
  let peerReference = compareWithOurs ? reference : undefined;
  for (const config of configs.filter((c) => c.peer !== 'ours')) {
    const variants = peerModules[config.peer].variants(shape);
    if (!variants.length) continue;
    if (configNa.has(config.key)) {
      rows[config.key] = { status: 'n/a', reason: configNa.get(config.key) };
      continue;
    }
    const tried = [];
    for (const variant of variants) {
      const rateKey = `${config.key}/${shape.kind}/${variant}`;
      const estimateMs = rates.has(rateKey) ? flops(shape) / (rates.get(rateKey) * 1e6) : 0;
      if (estimateMs > capMs) {
        tried.push({ variant, status: 'skipped', estimateMs });
        continue;
      }
      const c = await open(config, shape, variant, {
        shapePolicy, reference: peerReference, returnOutput: !peerReference,
      });
      // Without ours to compare with (the module row), the first peer's
      // output checks the others.
      if (c.output) peerReference = c.output;
      delete c.output;
      if (c.status === 'n/a' && c.level === 'config') break;
      if (c.status !== 'ready') {
        tried.push({ variant, status: c.status, reason: c.reason, maxAbsDiff: c.maxAbsDiff });
        continue;
      }
      const session = [...ours.map((o) => o.c), c];
      const { stats, otherLoad } = await interleave(session, shapePolicy);
      const mine = stats[stats.length - 1];
      const row = { ...caseRow(c), variant, ...mine, otherLoad };
      if (ours.length) {
        row.ours1Ms = stats[0].medianMs;
        row.vsOurs1 = mine.medianMs / stats[0].medianMs;
      }
      if (ours.length === 2) {
        row.ours2Ms = stats[1].medianMs;
        row.vsOurs2 = mine.medianMs / stats[1].medianMs;
        addScaling(stats);
      }
      await closeInto(row, c);
      // Rates for the skip estimate come from real sizes only: on the toy
      // shape per-call overhead dominates and would predict absurd times.
      if (flops(shape) >= 1e7) rates.set(rateKey, gflops(flops(shape), row.medianMs));
      log(`  [${caseCount}] ${describe(config, shape, variant)}: ${fmtMs(row.medianMs)} ms (${row.runs} runs` +
        `${row.vsOurs1 ? `, ours single ${fmtMs(row.ours1Ms)} ms` : ''})`);
      tried.push(row);
    }
    if (configNa.has(config.key)) {
      rows[config.key] = { status: 'n/a', reason: configNa.get(config.key) };
      continue;
    }
    // The fastest variant by its own median (its speed-ups come from its own
    // session with ours).
    const ok = tried.filter((t) => t.status === 'ok').sort((a, b) => a.medianMs - b.medianMs);
    const failure = ['mismatch', 'error', 'n/a', 'skipped'].map((s) => tried.find((t) => t.status === s)).find(Boolean);
    rows[config.key] = { ...(ok[0] ?? failure), tried };
  }
  for (const o of ours) await closeInto(rows[o.config.key], o.c);
  if (scalings.length) {
    rows['ours-2'].scaling = {
      alone: aloneScaling,
      median: median(scalings), min: Math.min(...scalings), max: Math.max(...scalings), sessions: scalings.length,
    };
  }
  return { shape, rows, reference };
}

// ---------------------------------------------------------------------------
// The wasm table, the module row, the memory check

const shapes = quick ? ATTENTION_SHAPES.filter((s) => s.length <= 512) : ATTENTION_SHAPES;
const runOrder = [...shapes].sort((a, b) => flops(a) - flops(b)); // skip estimates grow with size
const attention = new Map();
const references = new Map();
for (const shape of runOrder) {
  const r = await runShape(shape, { configs: CONFIGS });
  if (r.reference) references.set(shapeName(shape), r.reference);
  delete r.reference;
  attention.set(shapeName(shape), r);
}

// The book's MultiHeadAttention module: ours against onnxruntime-web, with
// the same weights (ours loads the graph's through loadStateDict), so the
// outputs are compared as for attention.
let module = null;
if (!quick) {
  module = await runShape(MHA_SHAPE, {
    configs: CONFIGS.filter((c) => c.peer === 'ours' || c.peer === 'ort-web'),
    shapePolicy: slowPolicy,
  });
  delete module.reference;
}

// One generation step against a KV cache.
const decode = await runDecodeTable({ policy, seed: SEED, log, quick });

// The real model: GPT-2-small-shaped GPTModel against onnxruntime (~5 min; not in --quick / --only runs).
const model = quick || only || flag('no-model') ? null : await runModelTable({ log });

const memoryCheck = await runShape(MEMORY_CHECK_SHAPE, { configs: CONFIGS.slice(0, 1), shapePolicy: slowPolicy });
delete memoryCheck.reference;

// Training: forward + backward.
const training = quick || only ? null : await runTrainingTable({
  policy, slowPolicy, capMs: Math.max(capMs, 15000), seed: SEED, log,
});

// The Learn section's default model, step by step.
const learn = quick || only ? null : await runLearnTable({ log, browser: !flag('no-browser') });

// The lab's patching grid per model size.
const lab = quick || only ? null : renderLab(await runLabTable({ log }));

// Each Node version in its own process: limits, the headline shapes, a decode step per dtype.
const nodes = quick || only ? null : await runNodeVersions({ log });

// Masks, padding, windows, softcap, sinks, layout.
const options = only ? null : await runOptionsTable({ policy, log, quick, seed: SEED });


log('Measuring the wasm SIMD128 limit again...');
simd.end = measureSimdLimit({}, [simd.chains]);
simd.end2 = await measureSimdLimitThreads(2, simd.chains);
// Other load only lowers the number: the higher of start and end is the limit.
simd.limit1 = Math.max(simd.start.gflops, simd.end.gflops);
simd.limit2 = Math.max(simd.start2, simd.end2);
simd.fma = withEndReading(fmaStart,
  fmaStart.gflops === null ? undefined : measureFmaLimit({}, [bestChains(fmaStart.byChains)]).gflops);

// ---------------------------------------------------------------------------
// Chromium: the headline shapes on a page's thread and in a worker, against
// onnxruntime-web there, and the cold start (bench/browser/run.mjs).

let browser = null;
let frames = null;
if (!flag('no-browser') && !only) {
  log('Chromium (bench/browser/run.mjs)...');
  try {
    browser = await runBrowserBench({ quick });
  } catch (e) {
    browser = { error: String(e?.message ?? e).split('\n')[0] };
  }
  log('The headline case in every browser engine (bench/browser/engines.mjs)...');
  browser.engines = await runEngineTable({ quick, log });
  if (!quick) {
    log('The demo page\'s frame budget (bench/browser/frames.mjs)...');
    frames = await runFrameBudget({ log });
  }
}

// ---------------------------------------------------------------------------
// Native: Google Benchmark per SIMD target, then onnxruntime-node on the
// same shape right after (so both see about the same machine load).

let native = null;
if (!flag('no-native')) {
  log('Native: build/native/native_bench per SIMD target, and onnxruntime-node...');
  const binary = join(root, 'build/native/native_bench');
  const nativeOptions = quick ? { minTime: 0.02, repetitions: 1 } : { minTime: 0.1, repetitions: 3 };
  native = { args: nativeArgs(nativeOptions), shapes: [] };
  try {
    for (const g of await listNativeShapes(binary)) {
      const key = `${shapeName(g.shape)}${g.weights ? ' + weights' : ''}${g.threads > 1 ? ` on ${g.threads} threads` : ''}`;
      log(`  native_bench ${key}`);
      const nb = await runNativeShape(binary, g.suffix, nativeOptions);
      let ort = null;
      if (!g.weights && g.threads === 1) {
        const config = { key: 'ort-node-1', peer: 'ort-node', threads: 1 };
        const tried = [];
        for (const variant of peerModules['ort-node'].variants(g.shape)) {
          const c = await open(config, g.shape, variant, {
            shapePolicy: policy, reference: references.get(shapeName(g.shape)), // ours (wasm) on the same inputs
          });
          if (c.status !== 'ready') {
            tried.push({ variant, status: c.status, reason: c.reason });
            continue;
          }
          const { stats, otherLoad } = await interleave([c], policy);
          const row = { ...caseRow(c), variant, ...stats[0], otherLoad };
          await closeInto(row, c);
          log(`  [${caseCount}] ${describe(config, g.shape, variant)}: ${fmtMs(row.medianMs)} ms`);
          tried.push(row);
        }
        const ok = tried.filter((t) => t.status === 'ok').sort((a, b) => a.medianMs - b.medianMs);
        ort = { ...(ok[0] ?? tried[0]), tried };
      }
      native.shapes.push({ key, shape: g.shape, weights: g.weights, threads: g.threads, results: nb.results, ort });
    }
  } catch (e) {
    native.error = e.message;
  }
}

// ---------------------------------------------------------------------------
// Output

const finished = new Date();
const results = {
  started, finished, quick, machine, simd, policy, capMs, loadAtEnd: loadavg(),
  configs: CONFIGS,
  attention: shapes.map((s) => attention.get(shapeName(s))),
  module,
  decode,
  model,
  memoryCheck,
  browser,
  native,
  training,
  learn,
  frames,
  options,
  lab,
  nodes,
};
console.log(renderReport(results));

mkdirSync(join(root, 'bench/out'), { recursive: true });
writeFileSync(join(root, 'bench/out/results.json'), JSON.stringify(results, null, 2));
if (!quick && !only && !flag('no-write')) {
  writeFileSync(join(root, 'bench/RESULTS.md'), renderResultsMd(results, previousResultsMd()));
  log('Wrote bench/RESULTS.md');
}
