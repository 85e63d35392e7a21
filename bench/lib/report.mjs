// Turns the results object of bench/run.mjs (also saved as
// bench/out/results.json) into the printed report and bench/RESULTS.md.
import { chromiumLimits, renderBrowserTable } from '../browser/report.mjs';
import { renderDecode } from './decode.mjs';
import { renderModelText } from './model.mjs';
import { nodesRunLine, renderNodeVersions } from './node-versions.mjs';
import {
  fmtBytes, fmtMs, fmtPct, fmtRate, fmtSeconds, fmtX, table, targetLine,
} from './format.mjs';
import { machineLines } from './machine.mjs';
import { renderOptions } from './options.mjs';
import { renderEngineTable } from '../browser/engines.mjs';
import { renderFrames } from '../browser/frames.mjs';
import { renderLearnText } from './learn-steps.mjs';
import { renderTrainingText } from './training.mjs';
import { flops, shapeName } from './shapes.mjs';
import { gflops } from './timing.mjs';

const MIB64 = 64 * 2 ** 20;

const SHORT = {
  'MatMul graph': 'MatMul graph',
  'ONNX Attention op': 'ONNX Attention(23)',
  'com.microsoft MultiHeadAttention': 'MS MultiHeadAttention',
  graph: 'MatMul graph',
};
const short = (v) => SHORT[v] ?? v ?? '';

/** Library error texts carry build paths and codes; keep what says what happened. */
function cleanReason(text) {
  return String(text)
    .replace(/failed to call OrtRun\(\)\. ERROR_CODE: \d+, ERROR_MESSAGE: /, 'OrtRun failed: ')
    .replace(/\/\S*\/onnxruntime\//g, 'onnxruntime/');
}

function simdLimit(results, threads) {
  return threads >= 2 ? results.simd.limit2 : results.simd.limit1;
}

/** Why Node has no relaxed-FMA figure (Node 20 validates relaxed SIMD only behind a flag). */
const nodeFmaNa = (results) => `f32x4.relaxed_madd does not validate in Node ${results.machine.node} without ` +
  '--experimental-wasm-relaxed-simd';

/** The relaxed-SIMD FMA limits of this run (runs before it was measured: not measured). */
function fmaLine(results) {
  const node = results.simd.fma;
  return 'relaxed-SIMD FMA limit (the same loop with f32x4.relaxed_madd, see note 2): Node ' +
    (node === undefined ? 'not measured in this run' : node.limit === null ? `n/a (${nodeFmaNa(results)})`
      : `${node.limit.toFixed(1)} GFLOP/s on 1 thread`) +
    (results.browser && !results.browser.error ? `; Chromium ${results.browser.version.split('.')[0]}: ` +
      chromiumLimits(results.browser) : '');
}

function simdLine(results) {
  const s = results.simd;
  return 'wasm SIMD128 limit (measured, see note 2): ' +
    `${s.limit1.toFixed(1)} GFLOP/s on 1 thread, ${s.limit2.toFixed(1)} GFLOP/s on 2 threads together ` +
    `(higher of start ${s.start.gflops.toFixed(1)} / ${s.start2.toFixed(1)} and end ` +
    `${s.end.gflops.toFixed(1)} / ${s.end2.toFixed(1)})`;
}

/** Everything but the native table: rows, numbered notes. */
function wasmSection(results) {
  const notes = [];
  const note = (text) => {
    let i = notes.indexOf(text);
    if (i < 0) i = notes.push(text) - 1;
    return `[n${i + 1}]`;
  };

  const statusCell = (r) => {
    if (r.status === 'skipped') return `skipped (est. ${fmtSeconds(r.estimateMs)})`;
    if (r.status === 'mismatch') return `mismatch (max |Δ| ${r.maxAbsDiff?.toExponential(1)})`;
    if (r.status === 'n/a') return `n/a ${note(cleanReason(r.reason))}`;
    return `error ${note(cleanReason(r.reason))}`;
  };

  const howCell = (config, r) => {
    if (config.peer === 'ours') {
      const s = r.scaling;
      if (s && r.status === 'ok') {
        return `${s.alone.toFixed(2)}× over ours single` +
          (s.sessions > 1 ? ` (with peers: median ${s.median.toFixed(2)}× of ${s.sessions} sessions, ` +
            `${s.min.toFixed(2)}–${s.max.toFixed(2)})` : '');
      }
      return r.variant === 'MultiHeadAttention' ? 'MultiHeadAttention.forward' : 'attention()';
    }
    const tried = r.tried ?? [];
    if (tried.length <= 1) return short(r.variant);
    const others = tried.filter((t) => t.variant !== r.variant).map((t) => {
      if (t.status === 'ok') return `${short(t.variant)} ${fmtMs(t.medianMs)}`;
      if (t.status === 'skipped') return `${short(t.variant)} skipped (est. ${fmtSeconds(t.estimateMs)})`;
      if (t.status === 'mismatch') return `${short(t.variant)} mismatch`;
      return `${short(t.variant)} ${t.status}${t.reason ? ` ${note(cleanReason(t.reason))}` : ''}`;
    });
    return `${short(r.variant)} (vs ${others.join(', ')})`;
  };

  const rowCells = (config, r, shape, shapeLabel = shapeName(shape)) => {
    const label = config.peer === 'ours' ? `ours (${config.threads === 1 ? 'single' : 'threads'})` : config.name;
    const head = [shapeLabel, label, String(r.threads ?? config.threads)];
    if (r.status !== 'ok') return [...head, howCell(config, r), statusCell(r), '', '', '', '', '', '', '', ''];
    const rate = gflops(flops(shape), r.medianMs);
    const ours = config.peer === 'ours';
    return [
      ...head,
      howCell(config, r),
      fmtMs(r.medianMs),
      String(r.runs),
      fmtRate(rate),
      fmtPct(rate / simdLimit(results, r.threads ?? config.threads)),
      ours ? '—' : fmtX(r.vsOurs1),
      ours ? '—' : fmtX(r.vsOurs2),
      r.wasmBytes == null ? '— (JS)' : fmtBytes(r.wasmBytes),
      fmtBytes(r.peakRssDelta),
      r.otherLoad == null ? '—' : r.otherLoad.toFixed(2),
    ];
  };

  const rows = [];
  const addShape = (entry, label) => {
    if (!entry) return;
    for (const config of results.configs) {
      const r = entry.rows[config.key];
      if (r) rows.push(rowCells(config, r, entry.shape, label));
    }
  };
  for (const entry of results.attention) addShape(entry);
  addShape(results.module);
  const mem = results.memoryCheck?.rows['ours-1'];
  if (mem) {
    const cells = rowCells(results.configs[0], mem, results.memoryCheck.shape,
      `${shapeName(results.memoryCheck.shape)} memory check`);
    if (mem.status === 'ok') cells[3] = `no weights; target < 64 MiB: ${mem.wasmBytes < MIB64 ? 'met' : 'missed'}`;
    rows.push(cells);
  }

  const p = results.policy;
  const s = results.simd;
  const fixed = [
    `Time: median of the stated number of timed runs, after a warm-up of at least ${p.warmupRuns} runs ` +
      `and ${p.warmupMs} ms (V8 starts wasm in its baseline tier, and every pthread worker tiers up on its ` +
      'own; runs slower than 1 s: 2 warm-ups, at least 3 runs). Each run includes copying q, k, v in and ' +
      'the output out (ours writes into a preallocated `out` array, the API\'s hot-path form; the peers ' +
      'return new arrays). Each (implementation, threads, shape, variant) lives in its own worker thread of ' +
      'this one Node process; per shape, ours single and ours threads stay open and every peer is timed ' +
      'interleaved with them, one run each in turn, so that a speed-up compares runs taken under the same ' +
      'machine load. Ours\' own rows come from a session of the two alone.',
    'wasm SIMD128 limit: bench/lib/simd-limit.mjs assembles a module whose loop does acc = acc·m + c ' +
      `(f32x4.mul, f32x4.add) on N independent accumulators: here ${Object.entries(s.start.byChains)
        .map(([n, g]) => `${n} → ${g.toFixed(0)}`).join(', ')} GFLOP/s at the start. Few accumulators are ` +
      'latency-bound (TOOLCHAIN.md\'s 27–31 GFLOP/s is in that range), 16 spill registers; the best is the ' +
      `throughput limit (${s.chains} accumulators). The 2-thread figure runs it in two worker threads at once. ` +
      'The relaxed-SIMD FMA limit (header) is the same loop with one f32x4.relaxed_madd per accumulator (still ' +
      '8 FLOPs: a fused multiply-add counts 2), measured where the engine validates relaxed SIMD.',
    'GFLOP/s: causal FLOPs 4·B·H·D·T(T+1)/2 for attention (the module row adds 2·B·T·d_in·d_out for each ' +
      'of the 4 projections) over the median time, whatever an implementation computes (the MatMul graphs ' +
      'and tfjs compute all T×T scores). % SIMD limit: of the 1-thread limit for 1-thread rows, of the ' +
      '2-thread limit for 2-thread rows.',
    'Speed-up columns: peer median / ours median from the same interleaved session (>1: ours is faster). ' +
      'The scaling of ours threads over ours single is from the session of the two alone (the rows of ' +
      'ours); in brackets, its median and range over every session of the shape, including those with a ' +
      'peer whose own threads share the two cores (onnxruntime\'s pool spins after each run). ' +
      'Correctness: every output is compared with ours single\'s before timing (max |Δ| ≤ 1e-3, else ' +
      '"mismatch", not timed).',
    'wasm memory: ours = `memoryBytes` after its runs; peers = the size of every WebAssembly.Memory the ' +
      'library created in its worker (wasm memory never shrinks, so this is the peak). peak RSS Δ: growth ' +
      'of the process\'s peak resident memory (VmHWM after resetting it via /proc/self/clear_refs) from ' +
      'just before the prepare/session step to the end of the warm-up, while the other cases\' workers ' +
      'are idle: JS-side arrays, onnxruntime\'s model copies and V8 garbage included; indicative only.',
    'onnxruntime-web: three graphs written in bench/lib/onnx.mjs as protobuf bytes: "MatMul graph" = ' +
      'Transpose(K) → MatMul → Mul(scale) → Add(mask, −inf above the diagonal) → Softmax → MatMul(V); ' +
      '"ONNX Attention(23)" = the ONNX Attention op with is_causal=1 on [B,H,T,D]; "MS MultiHeadAttention" = ' +
      'com.microsoft.MultiHeadAttention with unidirectional=1 (q, k, v transposed to [B,T,H·D] and back ' +
      'inside the graph). The fastest is reported, the others listed. Threads via ort.env.wasm.numThreads ' +
      '(the wasm backend ignores a session\'s intraOpNumThreads). The module row: x·W_q, x·W_k, x·W_v, ' +
      'attention as the MatMul graph or the MS op, out_proj with bias.',
    'tfjs-backend-wasm (SIMD build): "per-head 2-D" = per (b, h) matMul(Q·scale, transpose(K)) + mask → ' +
      'softmax → matMul(·, V), which runs on XNNPACK; "batched 3-D" = the same on [B·H,T,D] with ' +
      'matMul(Q, K, false, true) (the backend\'s batched/transposed path, much slower; not run where the ' +
      '[B·H,T,T] scores exceed 512 MiB).',
    'ruvector-attention-wasm: its functions take one query and JS arrays of key/value vectors, with no ' +
      'mask option; causal attention is expressed by calling scaled_dot_attention per query with ' +
      'keys[0..i] (B·H·T calls; the marshalling of the arrays dominates). Its .wasm has no SIMD ' +
      'instructions (wasm-dis) and no threads, hence no 2-thread row.',
    `Skips: a peer is skipped on a shape when its rate on the previous (smaller) shape predicts more than ` +
      `${fmtSeconds(results.capMs)} per run.`,
    'other load: CPU time of other processes during the timed runs, in cores (/proc/stat busy time minus ' +
      'this process\'s CPU time, over the wall time). It cannot see contention outside this VM (the SIMD ' +
      'limit measured at the start and at the end shows that).',
  ];
  const refs = (text) => text.replace(/\[n(\d+)\]/g, (_, n) => `[${Number(n) + fixed.length}]`);
  const headers = ['shape [B,H,T,D]', 'implementation', 'thr', 'how (fastest variant; others in ms)',
    'ms (median)', 'runs', 'GFLOP/s', '% SIMD limit', 'ours 1T speed-up', 'ours 2T speed-up',
    'wasm memory', 'peak RSS Δ', 'other load'];
  const align = ['l', 'l', 'r', 'l', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r'];
  return {
    table: refs(table(headers, rows, align)),
    notes: [...fixed, ...notes.map(refs)],
  };
}

function nativeSection(results) {
  const n = results.native;
  if (!n) return null;
  if (n.error) return { table: `native benchmark failed: ${n.error}`, notes: [], ratios: [] };
  const targets = [...new Set(n.shapes.flatMap((s) => s.results.map((r) => r.target)))];
  // AVX2 is the issue's target; AVX-512 (Highway's AVX3) where the machine has
  // it, as onnxruntime's MLAS uses it too.
  const compared = ['AVX2', 'AVX3'].filter((t) => targets.includes(t));
  const ratios = [];
  const rows = n.shapes.map(({ key, shape, results: native, ort }) => {
    const cells = [key];
    const byTarget = Object.fromEntries(native.map((r) => [r.target, r]));
    for (const t of targets) {
      const r = byTarget[t];
      cells.push(!r ? '—' : r.error ? `error: ${r.error}` : `${fmtMs(r.ms)} (${fmtRate(gflops(flops(shape), r.ms))})`);
    }
    if (!ort) {
      cells.push('—', ...compared.map(() => '—'));
    } else if (ort.status !== 'ok') {
      cells.push(`${ort.status}: ${cleanReason(ort.reason ?? '')}`.slice(0, 80), ...compared.map(() => '—'));
    } else {
      cells.push(`${fmtMs(ort.medianMs)} (${fmtRate(gflops(flops(shape), ort.medianMs))}) ${short(ort.variant)}`);
      for (const t of compared) {
        const ratio = byTarget[t] ? ort.medianMs / byTarget[t].ms : NaN;
        if (t === 'AVX2' && byTarget[t]) ratios.push({ key, ratio });
        cells.push(fmtX(ratio));
      }
    }
    return cells;
  });
  return {
    table: table(
      ['shape [B,H,T,D]', ...targets.map((t) => `${t === 'AVX3' ? 'AVX3 (AVX-512)' : t} ms (GFLOP/s)`),
        'onnxruntime-node 1T ms (GFLOP/s), graph', ...compared.map((t) => `${t} speed-up over onnxruntime-node`)],
      rows,
      ['l', ...targets.map(() => 'r'), 'r', ...compared.map(() => 'r')],
    ),
    notes: [
      `build/native/native_bench ${n.args.join(' ')} --benchmark_filter=/<shape>$ ` +
        '(bench/native/attention_bench.cc), one shape at a time: single thread, causal, no weights unless ' +
        'stated ("on 2 threads": the same thread pool and work split as the threaded wasm build, for its ' +
        'scaling without V8); median of the repetitions, real time. One column per Highway target compiled and ' +
        'supported here (dispatch forced per target).',
      'onnxruntime-node: CPU execution provider, intraOpNumThreads 1, interOpNumThreads 1, sequential, ' +
        'graph optimisation "all"; the fastest of the same three graphs as onnxruntime-web, checked against ' +
        'ours and timed like the wasm table right after the native benchmark of the same shape, so its ' +
        'time includes the N-API copies in and out, which the native benchmark does not have. Its MLAS ' +
        'kernels use AVX-512 where the CPU has it.',
    ],
    ratios,
  };
}

/** Where a reading comes from, its value and, optionally, what it is made of. */
const reading = (where, x, detail = '') => ({ where, x, detail });

/**
 * A target judged on every finite reading (`test`), with the readings as
 * its values; none when nothing was measured.
 */
function readingsLine(what, readings, test, { issue, tail = '', fmt = fmtX } = {}) {
  const seen = readings.filter((r) => Number.isFinite(r.x));
  if (!seen.length) return [];
  const values = readings.map((r) => `${r.where} ${Number.isFinite(r.x) ? fmt(r.x) : 'not measured'}${r.detail}`);
  return [targetLine(what, test === null ? null : seen.every((r) => test(r.x)), values.join('; ') + tail, issue)];
}

const ISSUE21_SCALING = ['(1,12,1024,64)', '(1,1,4096,64)', '(1,2,8192,64)'];

/**
 * The targets (the newest, marked with their issue, then the earlier ones
 * that still hold), judged from this run; a stricter newer line replaces
 * the earlier one for the same quantity. The training and Learn targets are
 * under their own tables (training.mjs, learn-steps.mjs).
 */
function targetLines(results, nativeRatios) {
  const lines = [];
  const at = (name) => results.attention.find((e) => shapeName(e.shape) === name)?.rows;
  const ok = (row) => row?.status === 'ok';
  const inChromium = (name) => (results.browser?.shapes ?? []).filter((r) => shapeName(r.shape) === name);
  const m = (r, k) => r.cases[k]?.medianMs;
  const alone = (r) => r.oursAlone?.['ours-1'] / r.oursAlone?.['ours-2'];
  const SHAPE = '(1,12,1024,64)';
  const r1024 = at(SHAPE);
  const [o1, w1, w2] = ['ours-1', 'ort-web-1', 'ort-web-2'].map((k) => r1024?.[k]);
  const browser = inChromium(SHAPE);

  // The kernel at (1,12,1024,64) against onnxruntime-web, in Node and in Chromium.
  lines.push(...readingsLine(`${SHAPE}, one thread ≥ 3.5× onnxruntime-web's fastest op, in Node and in Chromium`, [
    reading('Node', ok(w1) ? w1.vsOurs1 : NaN,
      ok(w1) ? `: ${fmtMs(w1.medianMs)} ms with ${short(w1.variant)}, ours ${fmtMs(w1.ours1Ms)} ms in the same session` : ''),
    ...browser.map((r) => reading(`Chromium ${r.mode}`, m(r, 'ort-web-1') / m(r, 'ours-1'))),
  ], (x) => x >= 3.5, { issue: 21 }));
  lines.push(...readingsLine(`${SHAPE}, two threads ≥ 3.5× onnxruntime-web's two threads, in Node and in Chromium`, [
    reading('Node', ok(w2) ? w2.vsOurs2 : NaN),
    ...browser.map((r) => reading(`Chromium ${r.mode}`, m(r, 'ort-web-2') / m(r, 'ours-2'))),
  ], (x) => x >= 3.5, { issue: 21 }));
  // The fraction of the limits, one thread.
  const rate1024 = (ms) => gflops(flops({ kind: 'attention', batch: 1, heads: 12, length: 1024, headDim: 64 }), ms);
  if (ok(o1)) {
    const rate = rate1024(o1.medianMs);
    lines.push(...readingsLine(`${SHAPE}, one thread ≥ 80% of the wasm SIMD128 limit, in Node`, [
      reading('Node', rate / results.simd.limit1,
        `: ${fmtRate(rate)} GFLOP/s of ${results.simd.limit1.toFixed(1)} GFLOP/s measured in this run`),
    ], (x) => x >= 0.8, { issue: 21, fmt: fmtPct }));
  }
  const fmaLimit = results.browser?.simd?.fma.limit;
  const nodeFma = !results.simd.fma?.limit ? `Node n/a (${nodeFmaNa(results)})`
    : `Node ${ok(o1) ? fmtPct(rate1024(o1.medianMs) / results.simd.fma.limit) : 'not measured'}`;
  if (fmaLimit) {
    lines.push(...readingsLine(`${SHAPE}, one thread, fraction of the relaxed-SIMD FMA limit (measured the same ` +
      'way; no figure set)', browser.map((r) => reading(`Chromium ${r.mode}`, rate1024(m(r, 'ours-1')) / fmaLimit,
      ` (${fmtRate(rate1024(m(r, 'ours-1')))} of ${fmaLimit.toFixed(1)} GFLOP/s)`)), null,
    { issue: 21, fmt: fmtPct, tail: `; ${nodeFma}` }));
  } else {
    lines.push(targetLine(`${SHAPE}, one thread, fraction of the relaxed-SIMD FMA limit`, null,
      `${results.browser?.simd ? `Chromium n/a (${results.browser.simd.fma.reason})` : 'Chromium: not measured in this run'}; ${nodeFma}`, 21));
  }
  // Two threads over one, ours alone, where B·H is 12, 1 and 2.
  lines.push(...readingsLine('Two threads ≥ 1.85× our one thread on ' + ISSUE21_SCALING.join(', ') +
    ', in Node and in Chromium', ISSUE21_SCALING.flatMap((name) => [
    reading(`${name} Node`, at(name)?.['ours-2']?.scaling?.alone ?? NaN),
    ...inChromium(name).filter((r) => r.oursAlone).map((r) => reading(`Chromium ${r.mode}`, alone(r))),
  ]), (x) => x >= 1.85, { issue: 21, tail: '; ours alone; (1,2,8192,64) is not in the Chromium table' }));
  // The module: the projections (a packed GEMM) and the attention together.
  const mod = results.module?.rows;
  if (ok(mod?.['ours-1'])) {
    const rate = gflops(flops(results.module.shape), mod['ours-1'].medianMs);
    lines.push(...readingsLine(`${shapeName(results.module.shape)}, one thread ≥ 85% of the limit (projections and ` +
      'attention together)', [reading('Node', rate / results.simd.limit1, `: ${fmtRate(rate)} GFLOP/s`)],
    (x) => x >= 0.85, { issue: 21, fmt: fmtPct }));
    lines.push(...readingsLine(`${shapeName(results.module.shape)}, two threads ≥ 1.8× one`,
      [reading('Node', mod['ours-2']?.scaling?.alone ?? NaN)], (x) => x >= 1.8, { tail: '; ours alone' }));
  }
  // Cold start: init() to the first result, ours below onnxruntime-web's.
  const r512 = at('(1,12,512,64)');
  const coldNode = ['ort-web-1', 'ort-web-2'].filter((k) => r512?.[k]?.coldMs !== undefined);
  const coldBrowser = results.browser?.cold ?? [];
  const oursColdB = coldBrowser.find((c) => c.key === 'ours-1')?.medianMs;
  const ortColdB = coldBrowser.filter((c) => c.key.startsWith('ort-web')).map((c) => c.medianMs);
  if (r512?.['ours-1']?.coldMs !== undefined && coldNode.length) {
    const nodeOk = coldNode.every((k) => r512[k].coldMs > r512['ours-1'].coldMs);
    const browserOk = oursColdB === undefined || ortColdB.every((ms) => ms > oursColdB);
    lines.push(targetLine('Cold start at (1,12,512,64), ours smaller', nodeOk && browserOk, 'Node ours ' +
      `${fmtMs(r512['ours-1'].coldMs)} ms, onnxruntime-web ${coldNode.map((k) => fmtMs(r512[k].coldMs)).join(' / ')} ms` +
      (oursColdB !== undefined ? `; Chromium ours ${fmtMs(oursColdB)} ms, onnxruntime-web ${ortColdB.map(fmtMs).join(' / ')} ms` : '')));
  }
  // Earlier rounds' targets that still hold.
  const scaling = results.attention.filter((e) => e.shape.length >= 512 && e.rows['ours-2']?.scaling)
    .map((e) => ({ name: shapeName(e.shape), s: e.rows['ours-2'].scaling }));
  lines.push(...readingsLine('Two threads ≥ 1.8× our single thread at every T ≥ 512',
    scaling.map((t) => reading(t.name, t.s.alone)), (x) => x >= 1.8, {
      tail: '; ours alone; with peers\' threads sharing the cores, medians ' +
        scaling.map((t) => fmtX(t.s.median)).join(', '),
    }));
  const mem = results.memoryCheck?.rows['ours-1'];
  if (mem?.status === 'ok') {
    lines.push(targetLine('(1,1,16384,64) under 64 MiB of wasm memory', mem.wasmBytes < MIB64, fmtBytes(mem.wasmBytes)));
  }
  lines.push(...readingsLine('Native AVX2 faster than onnxruntime-node single-thread on the same shapes',
    (nativeRatios ?? []).map((t) => reading(t.key, t.ratio)), (x) => x > 1));
  return lines;
}

const TARGETS_HEADING = 'Targets (issue 21\'s first, marked; then issue 14\'s and the earlier ones that still hold; ' +
  'the training and Learn targets are under their tables)';

const numbered = (list) => list.map((n, i) => `${i + 1}. ${n}`).join('\n');

function headerLines(results) {
  return [
    ...machineLines(results.machine),
    `Load average at the end: ${results.loadAtEnd.map((x) => x.toFixed(2)).join(' ')}.`,
    simdLine(results),
    fmaLine(results),
  ];
}

/**
 * Cold start in Node, from each case's own worker: loading the
 * implementation, creating its session or module, the first run.
 */
function coldLines(results) {
  const r = results.attention.find((x) => shapeName(x.shape) === '(1,12,512,64)');
  if (!r) return [];
  const keys = ['ours-1', 'ours-2', 'ort-web-1', 'ort-web-2'].filter((k) => r.rows[k]?.coldMs !== undefined);
  if (!keys.length) return [];
  return [
    `Cold start at (1,12,512,64) in Node (a fresh worker thread: ours = import + init() + first attention(); ` +
      'onnxruntime-web = import + backend start-up + session creation + first run of the variant in the table):',
    '',
    '| implementation | ms |',
    '|---|--:|',
    ...keys.map((k) => `| ${r.rows[k].label ?? k} (${r.rows[k].threads} thread${r.rows[k].threads > 1 ? 's' : ''}${r.rows[k].variant ? `, ${r.rows[k].variant}` : ''}) | ${fmtMs(r.rows[k].coldMs)} |`),
  ];
}

function browserLines(results) {
  const b = results.browser;
  if (!b) return [];
  const engines = b.engines ? ['', renderEngineTable(b.engines)] : [];
  if (b.error) return [`Chromium table failed: ${b.error}`, ...engines];
  return [renderBrowserTable(b), ...engines];
}

/** The per-Node section under its heading (and when it was measured apart, replaceNodes), or nothing. */
export function nodesSection(results, heading) {
  if (!results.nodes) return [];
  const { text, targets } = renderNodeVersions(results.nodes, results.machine.cpu.model);
  return ['', heading, '', ...(results.nodesRun ? [nodesRunLine(results.nodesRun), ''] : []), text, '', ...targets];
}

/** The text printed by `npm run bench`. */
export function renderReport(results) {
  const wasm = wasmSection(results);
  const native = nativeSection(results);
  return [
    ...headerLines(results),
    ...nodesSection(results, 'Where users run: each Node version in its own process (bench/node-table.mjs):'),
    '',
    `Causal float32 attention in wasm, Node ${results.machine.node}, shapes [B, H, T, D]:`,
    '',
    wasm.table,
    '',
    numbered(wasm.notes),
    '',
    ...coldLines(results),
    '',
    'In headless Chromium (bench/browser/run.mjs):',
    '',
    ...browserLines(results),
    '',
    `${TARGETS_HEADING}:`,
    ...targetLines(results, native?.ratios),
    ...(results.decode ? ['', 'Decode step against a KV cache (generation), wasm:', '', renderDecode(results.decode)] : []),
    ...(results.model ? ['', renderModelText(results.model)] : []),
    ...(native ? ['', 'Native (Google Benchmark per SIMD target) and onnxruntime-node, single thread:', '',
      native.table, '', numbered(native.notes)] : []),
    ...(results.training ? ['', renderTrainingText(results.training)] : []),
    ...(results.learn ? ['', renderLearnText(results.learn)] : []),
    ...(results.frames ? ['', renderFrames(results.frames)] : []),
    ...(results.lab ? ['', results.lab] : []),
    ...(results.options ? ['', 'Attention options against our plain call, one thread, wasm:', '', renderOptions(results.options)] : []),
    '',
    `Run took ${((new Date(results.finished) - new Date(results.started)) / 60000).toFixed(1)} min.`,
  ].join('\n');
}

/**
 * Hand-written parts of bench/RESULTS.md (measurements of other benches,
 * what was tried), each between a `<!-- kept -->` line and a `<!-- /kept -->`
 * line: a re-render puts each back at the end of the generated section
 * (`## ` heading) it followed; where that heading is gone, before
 * "## Reproduce".
 */
const KEPT = /^<!-- kept -->\n[\s\S]*?^<!-- \/kept -->\n?/gm;

export function keepHandWritten(rendered, previous) {
  const lines = rendered.split('\n');
  const headingAt = (heading) => {
    const stem = (h) => h.split(' (')[0];
    const i = lines.indexOf(heading);
    return i >= 0 ? i : lines.findIndex((l) => l.startsWith('## ') && stem(l) === stem(heading));
  };
  const inserts = new Map(); // line index → kept texts, in order
  for (const match of previous.matchAll(KEPT)) {
    const before = previous.slice(0, match.index).replace(KEPT, '').split('\n');
    const heading = before.findLast((l) => l.startsWith('## '));
    const at = heading === undefined ? -1 : headingAt(heading);
    let end = at < 0 ? -1 : lines.findIndex((l, i) => i > at && l.startsWith('## '));
    if (end < 0) end = lines.indexOf('## Reproduce');
    if (end < 0) end = lines.length;
    inserts.set(end, [...(inserts.get(end) ?? []), match[0].trimEnd(), '']);
  }
  return lines.flatMap((l, i) => [...(inserts.get(i) ?? []), l])
    .concat(inserts.get(lines.length) ?? []).join('\n');
}

/**
 * bench/RESULTS.md after a full run; `previous`: the file it replaces, whose
 * hand-written parts it keeps (keepHandWritten).
 */
export function renderResultsMd(results, previous = '') {
  return keepHandWritten(generatedResultsMd(results), previous);
}

function generatedResultsMd(results) {
  const wasm = wasmSection(results);
  const native = nativeSection(results);
  const minutes = ((new Date(results.finished) - new Date(results.started)) / 60000).toFixed(1);
  return [
    '# Benchmark results',
    '',
    `Full run of \`npm run bench\`, started ${new Date(results.started).toISOString()}, finished ` +
      `${new Date(results.finished).toISOString()} (${minutes} min); written by bench/run.mjs. The machine ` +
      'is shared (2 vCPUs, other developers compiling): peers are timed interleaved with ours so the ' +
      'speed-ups hold up better than the absolute times, which move by 10–50 % from run to run.',
    '',
    ...headerLines(results).map((l) => `- ${l}`),
    ...nodesSection(results, '## Where users run: Node 24, 22 and the bench\'s own, each in its own process'),
    '',
    `## Causal attention in wasm (Node ${results.machine.node}), shapes [B, H, T, D]`,
    '',
    wasm.table,
    '',
    numbered(wasm.notes),
    '',
    '## Cold start (Node)',
    '',
    ...coldLines(results),
    '',
    '## In headless Chromium',
    '',
    ...browserLines(results),
    '',
    `## ${TARGETS_HEADING}`,
    '',
    ...targetLines(results, native?.ratios),
    ...(results.decode ? ['', '## Decode step against a KV cache (generation), wasm', '', renderDecode(results.decode)] : []),
    ...(results.model ? ['', renderModelText(results.model)] : []),
    ...(native ? ['', '## Native: Google Benchmark per SIMD target vs onnxruntime-node (single thread)', '',
      native.table, '', numbered(native.notes)] : []),
    ...(results.training ? ['', renderTrainingText(results.training)] : []),
    ...(results.learn ? ['', '## The Learn section\'s model, step by step', '', renderLearnText(results.learn, { fence: true })] : []),
    ...(results.frames ? ['', '## The demo page\'s frame budget', '', renderFrames(results.frames)] : []),
    // Rendered by bench/lab.mjs (text with its target's line).
    ...(results.lab ? ['', '## The lab\'s activation-patching grid', '', results.lab] : []),
    ...(results.options ? ['', '## Attention options (masks, padding, windows, softcap, sinks, layout) against our plain call, one thread, wasm', '',
      renderOptions(results.options)] : []),
    '',
    '## Reproduce',
    '',
    '```sh',
    'npm run bench                   # set-up, native + wasm builds, then node bench/run.mjs (about 25 min)',
    'node bench/run.mjs --quick      # sanity run: small shapes, short budgets; leaves this file alone',
    'node bench/run.mjs --no-native  # without the Google Benchmark / onnxruntime-node table',
    'node bench/run.mjs --decode     # only the decode table (KV cache); leaves this file alone',
    'node bench/run.mjs --decode --rows=ragged,window   # only its issue 20 rows (many sequences, the window cache)',
    'node bench/run.mjs --training   # the training table alone (forward + backward)',
    'node bench/run.mjs --model      # the real-model table alone (GPT-2-small shape vs onnxruntime; ~5 min)',
    'node bench/run.mjs --learn      # the Learn model\'s steps/s alone (Node and Chromium)',
    'node bench/run.mjs --frames     # the demo page\'s frame budget alone (Chromium)',
    'node bench/run.mjs --options    # the attention options table alone (issue 19)',
    'node bench/run.mjs --nodes      # the table per Node version alone (Node 24 and 22 from tests/clients)',
    'node bench/run.mjs --nodes --save   # the same, then in place of this file\'s per-Node section (same CPU only)',
    'node bench/run.mjs --int8       # the int8 attention rows alone',
    'node bench/run.mjs --render     # this file again from bench/out/results.json (report changes only)',
    '# Hand-written parts of this file survive a run between a "<!-- kept -->" and a "<!-- /kept -->" line.',
    '```',
    '',
    'The raw numbers of the latest run are in bench/out/results.json (not committed).',
    '',
  ].join('\n');
}
