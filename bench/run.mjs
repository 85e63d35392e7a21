#!/usr/bin/env node
// The benchmark behind `npm run bench`: causal float32 attention in wasm,
// ours (single-threaded and pthreads builds) against onnxruntime-web,
// tfjs-backend-wasm, ruvector-attention-wasm and plain JS loops, one table
// from one Node process; then the native Google Benchmark per SIMD target
// against onnxruntime-node. Writes bench/RESULTS.md (full runs) and
// bench/out/results.json.
//
//   node bench/run.mjs [--quick] [--no-native] [--no-write] [--only=ours,ort-web,...]
//                      [--cap=SECONDS]
//
// --quick: three small shapes, short timing budgets, no module row, does not
// write RESULTS.md (a sanity run). --cap: skip an implementation on a shape
// when its estimated time per run (from its rate on the previous shape)
// exceeds this (default 4 s). Not a test: nothing here asserts on time.

import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  fmtBytes, fmtMs, fmtPct, fmtRate, fmtSeconds, fmtX, table,
} from './lib/format.mjs';
import { machineInfo, machineLines } from './lib/machine.mjs';
import { listNativeShapes, nativeArgs, runNativeShape } from './lib/native.mjs';
import { runCase } from './lib/runner.mjs';
import {
  ATTENTION_SHAPES, MEMORY_CHECK_SHAPE, MHA_SHAPE, flops, shapeName,
} from './lib/shapes.mjs';
import { measureSimdLimit, measureSimdLimitThreads } from './lib/simd-limit.mjs';
import { gflops } from './lib/timing.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const argv = process.argv.slice(2);
const flag = (name) => argv.includes(`--${name}`);
const option = (name) => argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
const quick = flag('quick');
const only = option('only')?.split(',');
const capMs = Number(option('cap') ?? 4) * 1000;
const SEED = 1234;
const MIB64 = 64 * 2 ** 20;

const policy = quick
  ? { warmupRuns: 2, warmupMs: 100, budgetMs: 400, minRuns: 3, maxRuns: 9 }
  : { warmupRuns: 3, warmupMs: 1000, budgetMs: 2000, minRuns: 5, maxRuns: 21 };

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
const CONFIGS = [
  { key: 'ours-1', peer: 'ours', threads: 1 },
  { key: 'ours-2', peer: 'ours', threads: 2 },
  { key: 'ort-web-1', peer: 'ort-web', threads: 1 },
  { key: 'ort-web-2', peer: 'ort-web', threads: 2 },
  { key: 'tfjs-wasm-1', peer: 'tfjs-wasm', threads: 1 },
  { key: 'tfjs-wasm-2', peer: 'tfjs-wasm', threads: 2 },
  { key: 'ruvector-1', peer: 'ruvector', threads: 1 },
  { key: 'plain-js-1', peer: 'plain-js', threads: 1 },
].filter((c) => !only || only.includes(c.peer) || c.peer === 'ours');

const log = (...a) => console.error(...a);
const started = new Date();

// ---------------------------------------------------------------------------
// Machine, versions, SIMD limit (measured first, with nothing else running)

const machine = machineInfo(root);
for (const line of machineLines(machine)) log(line);
log('Measuring the wasm SIMD128 mul+add limit...');
// Measured at the start and again at the end; other load only lowers the
// number, so the higher of the two is the limit used for the % column.
const simdStart = measureSimdLimit();
const bestChains = Number(Object.entries(simdStart.byChains).sort((a, b) => b[1] - a[1])[0][0]);
const simd2Start = await measureSimdLimitThreads(2, bestChains);
const simd1 = { ...simdStart };
let simd2 = simd2Start;
const simdLimit = (threads) => (threads >= 2 ? simd2 : simd1.gflops);
let simdLine = '';
function describeSimd(end, end2) {
  const byChains = Object.entries(simdStart.byChains).map(([n, g]) => `${n}: ${g.toFixed(0)}`).join(', ');
  simdLine = `wasm SIMD128 limit (measured: f32x4 mul+add loop; GFLOP/s by independent accumulators at the start ${byChains}): ` +
    `${simd1.gflops.toFixed(1)} GFLOP/s on 1 thread, ${simd2.toFixed(1)} GFLOP/s on 2 threads together ` +
    (end === undefined ? '(at the start)' : `(best of start ${simdStart.gflops.toFixed(1)} / ${simd2Start.toFixed(1)} ` +
      `and end ${end.toFixed(1)} / ${end2.toFixed(1)})`);
}
describeSimd();
log(simdLine);

// ---------------------------------------------------------------------------
// The wasm table

const shapes = quick ? ATTENTION_SHAPES.filter((s) => s.length <= 512) : ATTENTION_SHAPES;
const runOrder = [...shapes].sort((a, b) => flops(a) - flops(b));
const rates = new Map(); // `${config}/${kind}/${variant}` → GFLOP/s on the latest shape it ran
const configNa = new Map(); // config key → reason it cannot run at all
const results = new Map(); // shape name → config key → row result
const references = new Map(); // shape name → ours single's output (ArrayBuffer)
let caseCount = 0;

const ORT_SHORT = {
  'MatMul graph': 'MatMul graph',
  'ONNX Attention op': 'ONNX Attention(23)',
  'com.microsoft MultiHeadAttention': 'MS MultiHeadAttention',
  graph: 'MatMul graph',
};
const short = (v) => ORT_SHORT[v] ?? v;

/**
 * Runs every variant of one implementation on a shape (each in its own
 * worker) and returns the fastest that matched the reference, with the
 * others in `tried`. With `returnOutput`, the first output comes back as
 * `output` and also serves as the reference for the remaining variants.
 */
async function runConfig(config, shape, { reference, returnOutput, shapePolicy = policy }) {
  const mod = peerModules[config.peer];
  const variants = mod.variants(shape);
  if (variants.length === 0) return null;
  if (configNa.has(config.key)) return { status: 'n/a', reason: configNa.get(config.key) };
  const tried = [];
  let output;
  for (const variant of variants) {
    const rateKey = `${config.key}/${shape.kind}/${variant}`;
    const estimateMs = rates.has(rateKey) ? flops(shape) / (rates.get(rateKey) * 1e6) : 0;
    if (config.peer !== 'ours' && estimateMs > capMs) {
      tried.push({ variant, status: 'skipped', estimateMs });
      continue;
    }
    const r = await runCase({
      peer: PEERS[config.peer], config: { threads: config.threads }, shape, variant, seed: SEED,
      policy: shapePolicy, reference: reference ?? output, returnOutput: returnOutput && !output,
    });
    caseCount += 1;
    if (r.output) {
      output = r.output;
      delete r.output;
    }
    // Rates for the skip estimate come from real sizes only: on the toy shape
    // per-call overhead dominates and would predict absurd times.
    if (r.status === 'ok' && flops(shape) >= 1e7) rates.set(rateKey, gflops(flops(shape), r.medianMs));
    if (r.status === 'n/a' && r.level === 'config') {
      configNa.set(config.key, r.reason);
      return r;
    }
    log(`  [${caseCount}] ${shapeName(shape)} ${config.peer} ${config.threads}T ${short(variant)}: ` +
      (r.status === 'ok' ? `${fmtMs(r.medianMs)} ms (${r.runs} runs)` : `${r.status} ${r.reason ?? ''}`));
    tried.push({ variant, ...r });
  }
  const ok = tried.filter((t) => t.status === 'ok').sort((a, b) => a.medianMs - b.medianMs);
  if (ok.length) return { ...ok[0], tried, output };
  // Nothing ran: report the most telling failure.
  for (const status of ['mismatch', 'error', 'n/a', 'skipped']) {
    const t = tried.find((x) => x.status === status);
    if (t) return { ...t, tried, output };
  }
  return null;
}

for (const shape of runOrder) {
  const name = shapeName(shape);
  log(`${name}${shape.note ? ` (${shape.note})` : ''}`);
  const row = {};
  results.set(name, row);
  let reference;
  for (const config of CONFIGS) {
    const isReference = config.key === 'ours-1';
    const r = await runConfig(config, shape, { reference, returnOutput: isReference });
    if (!r) continue;
    if (isReference && r.output) reference = r.output;
    delete r.output;
    row[config.key] = r;
  }
  if (reference) references.set(name, reference);
}

// The book's MultiHeadAttention module: ours against onnxruntime-web. Ours
// creates its own weights, so outputs cannot be compared with onnxruntime's;
// the onnxruntime variants (same weights) are checked against each other.
const slowPolicy = { ...policy, warmupRuns: 2, minRuns: 3, budgetMs: policy.budgetMs };
const mhaRow = {};
if (!quick) {
  const name = shapeName(MHA_SHAPE);
  log(name);
  let ortReference;
  for (const config of CONFIGS.filter((c) => c.peer === 'ours' || c.peer === 'ort-web')) {
    const isOrt = config.peer === 'ort-web';
    const r = await runConfig(config, MHA_SHAPE, {
      reference: isOrt ? ortReference : undefined,
      returnOutput: isOrt && !ortReference,
      shapePolicy: slowPolicy,
    });
    if (!r) continue;
    if (isOrt && r.output && !ortReference) ortReference = r.output;
    delete r.output;
    mhaRow[config.key] = r;
  }
}

// Memory check: one long sequence on a fresh single-threaded runtime.
log(shapeName(MEMORY_CHECK_SHAPE));
const memoryCheck = await runConfig(CONFIGS[0], MEMORY_CHECK_SHAPE, { shapePolicy: slowPolicy });

// The limit again, now that the wasm cases are done.
log('Measuring the wasm SIMD128 limit again...');
const simdEnd = measureSimdLimit({}, [bestChains]);
const simd2End = await measureSimdLimitThreads(2, bestChains);
simd1.gflops = Math.max(simd1.gflops, simdEnd.gflops);
simd2 = Math.max(simd2, simd2End);
describeSimd(simdEnd.gflops, simd2End);

// ---------------------------------------------------------------------------
// Formatting the wasm table

const notes = [];
const note = (text) => {
  let i = notes.indexOf(text);
  if (i < 0) i = notes.push(text) - 1;
  return `[${i + 1}]`;
};

/** Library error texts carry build paths and codes; keep what says what happened. */
function cleanReason(text) {
  return String(text)
    .replace(/failed to call OrtRun\(\)\. ERROR_CODE: \d+, ERROR_MESSAGE: /, 'OrtRun failed: ')
    .replace(/\/\S*\/onnxruntime\//g, 'onnxruntime/');
}

function statusCell(r) {
  if (r.status === 'skipped') return `skipped (est. ${fmtSeconds(r.estimateMs)})`;
  if (r.status === 'mismatch') return `mismatch (max |Δ| ${r.maxAbsDiff?.toExponential(1)})`;
  if (r.status === 'n/a') return `n/a ${note(cleanReason(r.reason))}`;
  return `error ${note(cleanReason(r.reason))}`;
}

function howCell(config, r, shape, ours1) {
  if (config.peer === 'ours') {
    if (config.threads > 1 && ours1?.status === 'ok' && r.status === 'ok') {
      return `${(ours1.medianMs / r.medianMs).toFixed(2)}× over ours single`;
    }
    return r.variant === 'MultiHeadAttention' ? 'MultiHeadAttention.forward' : 'attention()';
  }
  const tried = r.tried ?? [];
  if (tried.length <= 1) return short(r.variant ?? '');
  const others = tried.filter((t) => t !== r && t.variant !== r.variant).map((t) => {
    if (t.status === 'ok') return `${short(t.variant)} ${fmtMs(t.medianMs)}`;
    if (t.status === 'skipped') return `${short(t.variant)} skipped (est. ${fmtSeconds(t.estimateMs)})`;
    return `${short(t.variant)} ${t.status}${t.reason ? ` ${note(cleanReason(t.reason))}` : ''}`;
  });
  return `${short(r.variant)} (vs ${others.join(', ')})`;
}

function rowCells(config, r, shape, ours1, ours2) {
  const label = config.peer === 'ours' ? `ours (${config.threads === 1 ? 'single' : 'threads'})` : peerModules[config.peer].name;
  const head = [shapeName(shape), label, String(r.threads ?? config.threads)];
  if (r.status !== 'ok') {
    return [...head, howCell(config, r, shape, ours1), statusCell(r), '', '', '', '', '', '', '', ''];
  }
  const rate = gflops(flops(shape), r.medianMs);
  const ours = config.peer === 'ours';
  const vs = (o) => (o?.status === 'ok' ? fmtX(r.medianMs / o.medianMs) : '—');
  return [
    ...head,
    howCell(config, r, shape, ours1),
    fmtMs(r.medianMs),
    String(r.runs),
    fmtRate(rate),
    fmtPct(rate / simdLimit(r.threads ?? config.threads)),
    ours ? '—' : vs(ours1),
    ours ? '—' : vs(ours2),
    ours ? fmtBytes(r.wasmBytes) : r.wasmBytes == null ? '— (JS)' : fmtBytes(r.wasmBytes),
    fmtBytes(r.peakRssDelta),
    r.otherLoad == null ? '—' : r.otherLoad.toFixed(2),
  ];
}

const HEADERS = ['shape [B,H,T,D]', 'implementation', 'thr', 'how (fastest variant; others in ms)', 'ms (median)',
  'runs', 'GFLOP/s', '% SIMD limit', 'ours 1T speed-up', 'ours 2T speed-up', 'wasm memory', 'peak RSS Δ',
  'other load'];
const ALIGN = ['l', 'l', 'r', 'l', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r'];
const rows = [];
for (const shape of shapes) {
  const row = results.get(shapeName(shape));
  for (const config of CONFIGS) {
    const r = row[config.key];
    if (r) rows.push(rowCells(config, r, shape, row['ours-1'], row['ours-2']));
  }
}
if (Object.keys(mhaRow).length) {
  for (const config of CONFIGS) {
    const r = mhaRow[config.key];
    if (r) rows.push(rowCells(config, r, MHA_SHAPE, mhaRow['ours-1'], mhaRow['ours-2']));
  }
}
if (memoryCheck) {
  const cells = rowCells(CONFIGS[0], memoryCheck, MEMORY_CHECK_SHAPE, null, null);
  cells[0] += ' memory check';
  if (memoryCheck.status === 'ok') {
    cells[3] = `no weights; target < 64 MiB: ${memoryCheck.wasmBytes < MIB64 ? 'met' : 'missed'}`;
  }
  rows.push(cells);
}
const wasmTable = table(HEADERS, rows, ALIGN);

const fixedNotes = [
  `Time: median of the stated number of runs after warm-up (at least ${policy.warmupRuns} runs and ` +
    `${policy.warmupMs} ms, as every pthread worker tiers its wasm up on its own; runs slower than 1 s: 2 warm-ups and at least 3 runs); each run includes copying ` +
    'q, k, v in and the output out of the implementation (ours writes into a preallocated `out` array, ' +
    'the API\'s hot-path form; the peers return new arrays). Each (implementation, threads, shape, variant) ' +
    'runs in a fresh worker thread of this one Node process (onnxruntime-web fixes its thread count per ' +
    'process-wide instance; a fresh worker also makes the memory numbers per case).',
  'wasm SIMD128 limit: bench/lib/simd-limit.mjs assembles a module whose loop does acc = acc·m + c ' +
    '(f32x4.mul, f32x4.add) on N independent accumulators; with few accumulators it is latency-bound ' +
    `(here ${Object.entries(simdStart.byChains).map(([n, g]) => `${n} → ${g.toFixed(0)}`).join(', ')} GFLOP/s; ` +
    'TOOLCHAIN.md\'s 27–31 GFLOP/s is in the latency-bound range; 16 spills registers), with enough accumulators it is bound by ' +
    'throughput, which is the limit used. The 2-thread figure runs it in two worker threads at once.',
  'GFLOP/s: causal FLOPs 4·B·H·D·T(T+1)/2 for attention (the module row adds 2·B·T·d_in·d_out per ' +
    'projection, 4 projections) divided by the median time, whatever the implementation actually computes ' +
    '(the MatMul graphs and tfjs compute the full T×T scores). % SIMD limit: of the 1-thread limit for ' +
    '1-thread rows, of the 2-thread limit for 2-thread rows.',
  'Speed-up columns: peer time / ours time (>1: ours is faster). Correctness: every output is compared ' +
    'with ours single before timing; max |Δ| > 1e-3 is reported as mismatch and not timed.',
  'wasm memory: ours = `memoryBytes` after the runs; peers = the size of every WebAssembly.Memory the ' +
    'library created in its worker (wasm memory never shrinks, so this is its peak). peak RSS Δ: growth of ' +
    'the process\'s peak resident memory (VmHWM after resetting it via /proc/self/clear_refs) from just ' +
    'before the session/prepare step to the end of the runs: includes JS-side arrays, onnxruntime\'s ' +
    'model copies, V8 garbage not yet collected; indicative only.',
  'onnxruntime-web: three graphs built in bench/lib/onnx.mjs as protobuf bytes: "MatMul graph" = ' +
    'Transpose(K) → MatMul → Mul(scale) → Add(mask, -inf above the diagonal) → Softmax → MatMul(V); ' +
    '"ONNX Attention(23)" = the ONNX Attention op with is_causal=1 on [B,H,T,D]; "MS MultiHeadAttention" = ' +
    'com.microsoft.MultiHeadAttention with unidirectional=1 (inputs transposed to [B,T,H·D] and back ' +
    'inside the graph). The faster is reported; the others are listed. numThreads via ort.env.wasm ' +
    '(sessions\' intraOpNumThreads is ignored by the wasm backend).',
  'tfjs-backend-wasm (SIMD build): "per-head 2-D" = per (b, h) matMul(Q·scale, transpose(K)) + mask → ' +
    'softmax → matMul(·, V), which runs on XNNPACK; "batched 3-D" = the same on [B·H,T,D] with ' +
    'matMul(Q, K, false, true) (the backend\'s batched/transposed path, several times slower; skipped ' +
    'where the [B·H,T,T] scores exceed 512 MiB).',
  'ruvector-attention-wasm: its functions take one query and JS arrays of key/value vectors, with no ' +
    'mask option; causal attention is expressed by calling scaled_dot_attention per query with keys[0..i] ' +
    '(B·H·T calls). The marshalling of the key/value arrays dominates. Its .wasm contains no SIMD ' +
    'instructions (wasm-dis) and has no threads, so it has no 2-thread row.',
  `Skips: an implementation is skipped on a shape when its rate on the previous (smaller) shape predicts ` +
    `more than ${fmtSeconds(capMs)} per run.`,
  'other load: CPU used by other processes on this shared 2-core machine during the timed runs, in cores ' +
    '(/proc/stat busy time minus this process\'s own CPU time, over the wall time). Near 0: the numbers are ' +
    'clean; around 1: one of the two cores was taken, which hurts 2-thread rows most.',
];

// ---------------------------------------------------------------------------
// Native table: Google Benchmark per SIMD target vs onnxruntime-node

let nativeTable = '';
let nativeNotes = [];
const nativeRatios = [];
if (!flag('no-native')) {
  log('Native: build/native/native_bench per SIMD target, and onnxruntime-node...');
  try {
    const binary = join(root, 'build/native/native_bench');
    const nativeOptions = quick ? { minTime: 0.02, repetitions: 1 } : { minTime: 0.1, repetitions: 3 };
    const groups = await listNativeShapes(binary);
    const measured = [];
    // One shape at a time: every target, then onnxruntime-node on the same
    // shape right after, so both see about the same machine load.
    for (const g of groups) {
      const key = `${shapeName(g.shape)}${g.weights ? ' + weights' : ''}`;
      log(`  native_bench ${key}`);
      const nb = await runNativeShape(binary, g.suffix, nativeOptions);
      const ort = g.weights ? null : await runConfig({ key: 'ort-node-1', peer: 'ort-node', threads: 1 }, g.shape, {
        reference: references.get(shapeName(g.shape)), // ours (wasm, single) on the same inputs
      });
      measured.push({ key, shape: g.shape, native: nb.results, ort });
    }
    const targets = [...new Set(measured.flatMap((m) => m.native.map((r) => r.target)))];
    // Speed-up over onnxruntime-node for AVX2 (the issue's target) and, where
    // the machine has it, AVX-512 (Highway's AVX3), which onnxruntime's MLAS
    // also uses when present.
    const compared = ['AVX2', 'AVX3'].filter((t) => targets.includes(t));
    const nativeRows = measured.map(({ key, shape, native, ort }) => {
      const cells = [key];
      const byTarget = {};
      for (const t of targets) {
        const r = native.find((x) => x.target === t);
        byTarget[t] = r;
        cells.push(r ? (r.error ? `error: ${r.error}` : `${fmtMs(r.ms)} (${fmtRate(gflops(flops(shape), r.ms))})`) : '—');
      }
      if (!ort) {
        cells.push('—', ...compared.map(() => '—'));
      } else if (ort.status !== 'ok') {
        cells.push(statusCell(ort), ...compared.map(() => '—'));
      } else {
        cells.push(`${fmtMs(ort.medianMs)} (${fmtRate(gflops(flops(shape), ort.medianMs))}) ${short(ort.variant)}`);
        for (const t of compared) {
          const ratio = byTarget[t] ? ort.medianMs / byTarget[t].ms : NaN;
          if (t === 'AVX2' && byTarget[t]) {
            nativeRatios.push({ key, ratio, avx2: byTarget[t].ms, ort: ort.medianMs, variant: ort.variant });
          }
          cells.push(fmtX(ratio));
        }
      }
      return cells;
    });
    nativeTable = table(
      ['shape [B,H,T,D]', ...targets.map((t) => `${t === 'AVX3' ? 'AVX3 (AVX-512)' : t} ms (GFLOP/s)`),
        'onnxruntime-node 1T ms (GFLOP/s), graph', ...compared.map((t) => `${t} speed-up over onnxruntime-node`)],
      nativeRows,
      ['l', ...targets.map(() => 'r'), 'r', ...compared.map(() => 'r')],
    );
    nativeNotes = [
      `build/native/native_bench ${nativeArgs(nativeOptions).join(' ')} --benchmark_filter=/<shape>$ ` +
        '(bench/native/attention_bench.cc), one shape at a time: single thread, causal, no weights unless ' +
        'stated; median of the repetitions, real time. One column per Highway target compiled and supported ' +
        'here (dispatch forced per target).',
      'onnxruntime-node: CPU execution provider, intraOpNumThreads 1, interOpNumThreads 1, sequential, ' +
        'graph optimisation "all"; the faster of the same three graphs as onnxruntime-web (same checks and ' +
        'timing as the wasm table, right after the native benchmark of the same shape), so its time includes ' +
        'the N-API copies in and out, which the native benchmark does not have. Its MLAS kernels use AVX-512 ' +
        'where the CPU has it.',
    ];
  } catch (e) {
    nativeTable = `native benchmark failed: ${e.message}`;
  }
}

// ---------------------------------------------------------------------------
// Targets of the issue

function targetLines() {
  const lines = [];
  const at1024 = results.get('(1,12,1024,64)');
  const o1 = at1024?.['ours-1'];
  const w1 = at1024?.['ort-web-1'];
  if (o1?.status === 'ok' && w1?.status === 'ok') {
    const x = w1.medianMs / o1.medianMs;
    lines.push(`- Single thread at (1,12,1024,64) ≥ 3× onnxruntime-web single-thread: ${x >= 3 ? 'met' : 'missed'} ` +
      `(${fmtX(x)}: ours ${fmtMs(o1.medianMs)} ms, onnxruntime-web ${fmtMs(w1.medianMs)} ms with ${short(w1.variant)})`);
  } else {
    lines.push('- Single thread at (1,12,1024,64) ≥ 3× onnxruntime-web single-thread: not measured');
  }
  if (o1?.status === 'ok') {
    const rate = gflops(flops({ batch: 1, heads: 12, length: 1024, headDim: 64 }), o1.medianMs);
    const f = rate / simd1.gflops;
    lines.push(`- Single thread at (1,12,1024,64) ≥ 60% of the wasm SIMD limit: ${f >= 0.6 ? 'met' : 'missed'} ` +
      `(${fmtRate(rate)} GFLOP/s = ${fmtPct(f)} of ${simd1.gflops.toFixed(1)} GFLOP/s measured here)`);
  }
  const scaling = shapes.filter((s) => s.length >= 512).map((s) => {
    const r = results.get(shapeName(s));
    return r?.['ours-1']?.status === 'ok' && r?.['ours-2']?.status === 'ok'
      ? { s, x: r['ours-1'].medianMs / r['ours-2'].medianMs, load: r['ours-2'].otherLoad } : null;
  }).filter(Boolean);
  if (scaling.length) {
    const all = scaling.every((t) => t.x >= 1.8);
    lines.push(`- Two threads ≥ 1.8× our single thread at T ≥ 512: ${all ? 'met' : 'missed'} (` +
      scaling.map((t) => `${shapeName(t.s)} ${fmtX(t.x)}${t.load == null ? '' : ` (other load ${t.load.toFixed(2)})`}`)
        .join(', ') + ')');
  }
  if (memoryCheck?.status === 'ok') {
    lines.push(`- (1,1,16384,64) under 64 MiB of wasm memory: ${memoryCheck.wasmBytes < MIB64 ? 'met' : 'missed'} ` +
      `(${fmtBytes(memoryCheck.wasmBytes)})`);
  }
  if (nativeRatios.length) {
    const all = nativeRatios.every((t) => t.ratio > 1);
    lines.push(`- Native AVX2 faster than onnxruntime-node single-thread on the same shapes: ${all ? 'met' : 'missed'} (` +
      nativeRatios.map((t) => `${t.key} ${fmtX(t.ratio)}`).join(', ') + ')');
  }
  return lines;
}

// ---------------------------------------------------------------------------
// Output

const finished = new Date();
const minutes = ((finished - started) / 60000).toFixed(1);
const loadEnd = (await import('node:os')).loadavg();
const allNotes = [...fixedNotes, ...notes];
const numbered = (list) => list.map((n, i) => `${i + 1}. ${n}`).join('\n');
const wasmNotes = numbered(allNotes);
const header = [
  ...machineLines(machine),
  `Load average at the end: ${loadEnd.map((x) => x.toFixed(2)).join(' ')} (other work on this machine makes timings noisy).`,
  simdLine,
];
// The table's note references ([n]) count from the fixed notes.
const shiftRefs = (text) => text.replace(/\[(\d+)\]/g, (_, n) => `[${Number(n) + fixedNotes.length}]`);
const wasmTableOut = shiftRefs(wasmTable);
const nativeTableOut = nativeTable;

const report = [
  ...header,
  '',
  `Causal float32 attention in wasm, Node ${process.version}, shapes [B, H, T, D]:`,
  '',
  wasmTableOut,
  '',
  wasmNotes,
  '',
  'Targets (issue 4):',
  ...targetLines(),
  ...(nativeTableOut ? ['', 'Native (Google Benchmark per SIMD target) and onnxruntime-node, single thread:', '',
    nativeTableOut, '', numbered(nativeNotes)] : []),
  '',
  `Run took ${minutes} min.`,
].join('\n');
console.log(report);

mkdirSync(join(root, 'bench/out'), { recursive: true });
writeFileSync(join(root, 'bench/out/results.json'), JSON.stringify({
  started, finished, machine, simd: { single: simd1, twoThreads: simd2 },
  attention: Object.fromEntries(results), module: mhaRow, memoryCheck, nativeRatios,
}, null, 2));

if (!quick && !flag('no-write') && !only) {
  const md = [
    '# Benchmark results',
    '',
    `Full run of \`npm run bench\` started ${started.toISOString()} and finished ${finished.toISOString()} ` +
      `(${minutes} min), written by bench/run.mjs. The machine is shared (2 vCPUs, other builds running), ` +
      'so treat single numbers as ±10–20 %.',
    '',
    ...header.map((l) => `- ${l}`),
    '',
    `## Causal attention in wasm (Node ${process.version}), shapes [B, H, T, D]`,
    '',
    wasmTableOut,
    '',
    wasmNotes,
    '',
    '## Targets of issue 4',
    '',
    ...targetLines(),
    ...(nativeTableOut ? ['', '## Native: Google Benchmark per SIMD target vs onnxruntime-node (single thread)', '',
      nativeTableOut, '', numbered(nativeNotes)] : []),
    '',
    '## Reproduce',
    '',
    '```sh',
    'npm run bench            # set-up, native + wasm builds, then node bench/run.mjs (about 10–15 min)',
    'node bench/run.mjs --quick      # sanity run: small shapes, short budgets, does not touch this file',
    'node bench/run.mjs --no-native  # skip the Google Benchmark / onnxruntime-node table',
    '```',
    '',
    'The raw numbers of the latest run are in bench/out/results.json (not committed).',
    '',
  ].join('\n');
  writeFileSync(join(root, 'bench/RESULTS.md'), md);
  log('Wrote bench/RESULTS.md');
}
