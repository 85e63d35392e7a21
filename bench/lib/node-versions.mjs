// "Where users run": the headline table per Node version. Each version runs
// bench/node-table.mjs in a process of its own (its own V8: Node 20 without
// relaxed SIMD, Node 22 and 24 with it on by default), one after the other;
// this module finds the versions, runs them and renders their tables and
// the targets that depend on relaxed SIMD.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { renderInt8 } from './int8.mjs';
import { cpuInfo } from './machine.mjs';
import { fmtMs, fmtPct, fmtRate, fmtX, table, targetLine } from './format.mjs';
import { flops, shapeName } from './shapes.mjs';
import { gflops } from './timing.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * The Node versions to run, newest first: 24 and 22 from the client suite's
 * npm packages (`npm ci --prefix tests/clients` installs them), then the Node
 * running the bench. Each { label, execPath } or { label, unavailable }.
 */
export function nodeVersions() {
  const fromClients = (pkg, label) => {
    const execPath = join(root, 'tests/clients/node_modules', pkg, 'bin/node');
    return existsSync(execPath) ? { label, execPath }
      : { label, unavailable: `${execPath} is missing: run npm ci --prefix tests/clients` };
  };
  return [fromClients('node24', 'Node 24'), fromClients('node22', 'Node 22'),
    { label: `Node ${process.versions.node.split('.')[0]} (the bench's own)`, execPath: process.execPath }];
}

/** Runs bench/node-table.mjs under each version; resolves to [{ label, results } | { label, unavailable }]. */
export async function runNodeVersions({ log, quick = false, versions = nodeVersions() }) {
  const dir = mkdtempSync(join(tmpdir(), 'ca-node-table-'));
  const out = [];
  try {
    for (const [i, v] of versions.entries()) {
      if (v.unavailable) {
        log(`${v.label}: ${v.unavailable}`);
        out.push(v);
        continue;
      }
      log(`${v.label}: bench/node-table.mjs...`);
      const file = join(dir, `${i}.json`);
      try {
        execFileSync(v.execPath, [join(root, 'bench/node-table.mjs'), `--out=${file}`, ...(quick ? ['--quick'] : [])],
          { cwd: root, stdio: ['ignore', 'inherit', 'inherit'], timeout: 20 * 60_000 });
        out.push({ label: v.label, results: JSON.parse(readFileSync(file, 'utf8')) });
      } catch (e) {
        out.push({ label: v.label, unavailable: `bench/node-table.mjs failed: ${String(e.message).split('\n')[0]}` });
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return out;
}

const ok = (row) => row?.status === 'ok';

/**
 * A full run's results (bench/out/results.json) with its per-Node section
 * replaced by a `--nodes` run of its own (run: { started, finished, machine,
 * loadAtEnd, nodes }), which the report then names as measured apart. A run
 * on another CPU model is refused: one file, one machine.
 */
export function replaceNodes(results, run) {
  const was = results.machine?.cpu?.model;
  const now = run.machine.cpu.model;
  if (was !== now) {
    throw new RangeError(`bench/out/results.json was measured on ${was}, this --nodes run on ${now}: ` +
      'run the full bench (npm run bench) on this machine before saving a --nodes run into it');
  }
  const { started, finished, machine, loadAtEnd, nodes } = run;
  return {
    ...results,
    nodes,
    nodesRun: { started, finished, ours: machine.ours, node: machine.node, loadAverage: machine.loadAverage, loadAtEnd },
  };
}

/** The line that says a per-Node section was measured apart from the full run (replaceNodes). */
export function nodesRunLine(run) {
  const minutes = ((new Date(run.finished) - new Date(run.started)) / 60000).toFixed(1);
  const load = (l) => l.map((x) => x.toFixed(2)).join(' ');
  return `Measured apart from the full run (\`node bench/run.mjs --nodes --save\`): started ${run.started}, ` +
    `${minutes} min; ${run.ours}, driven by Node ${run.node}; load average ${load(run.loadAverage)} at the start, ` +
    `${load(run.loadAtEnd)} at the end.`;
}

/**
 * The tables, notes and targets of runNodeVersions' result, as text; cpu: the
 * model of the CPU they ran on (this one's by default).
 */
export function renderNodeVersions(list, cpu = cpuInfo().model) {
  const limits = [];
  const rows = [];
  const decode = [];
  const unavailable = [];
  for (const { label, results: r, unavailable: why } of list) {
    if (why) {
      unavailable.push(`- ${label}: not run (${why})`);
      continue;
    }
    limits.push([label, `${r.node} (V8 ${r.v8})`, r.gemmKernel, `${r.simd.limit1.toFixed(1)} / ${r.simd.limit2.toFixed(1)}`,
      r.fma.limit === null ? 'n/a (relaxed SIMD off)' : r.fma.limit.toFixed(1), r.bandwidth.gbps.toFixed(1)]);
    for (const { shape, rows: cases } of r.attention) {
      const o1 = cases['ours-1'];
      const o2 = cases['ours-2'];
      const ort = cases['ort-web-1'];
      const rate = ok(o1) ? gflops(flops(shape), o1.medianMs) : null;
      rows.push([label, shapeName(shape),
        ok(o1) ? fmtMs(o1.medianMs) : o1?.status ?? '—',
        rate === null ? '—' : fmtRate(rate),
        rate === null ? '—' : fmtPct(rate / r.simd.limit1),
        rate === null || r.fma.limit === null ? '—' : fmtPct(rate / r.fma.limit),
        ok(o2) ? `${fmtMs(o2.medianMs)} (${fmtX(o1.medianMs / o2.medianMs)})` : o2?.status ?? '—',
        ok(ort) ? `${fmtMs(ort.medianMs)} (${fmtX(ort.medianMs / o1.medianMs)})` : ort ? `${ort.status}` : '—']);
    }
    const d = r.decode.rows;
    const vs = (key) => (ok(d[key]) && ok(d['float32-1'])
      ? `${fmtMs(d[key].medianMs)} (${(d[key].medianMs / d['float32-1'].medianMs).toFixed(2)}×)` : d[key]?.status ?? '—');
    decode.push([label, ok(d['float32-1']) ? fmtMs(d['float32-1'].medianMs) : d['float32-1']?.status ?? '—',
      vs('bfloat16-1'), vs('int8-1')]);
  }
  const lines = [
    'Limits per Node version (GFLOP/s; read bandwidth GB/s, one thread, cold 256 MiB):', '',
    table(['Node', 'version', 'GEMM/tile kernels', 'SIMD128 mul+add 1T / 2T', 'relaxed FMA 1T', 'read GB/s'], limits,
      ['l', 'l', 'l', 'r', 'r', 'r']), '',
    'Attention per Node version (ours against onnxruntime-web, one session per shape, interleaved):', '',
    table(['Node', 'shape [B,H,T,D]', 'ours 1T ms', 'GFLOP/s', '% SIMD128', '% relaxed FMA', 'ours 2T ms (scaling)',
      'ort-web 1T ms (ours faster)'], rows, ['l', 'l', 'r', 'r', 'r', 'r', 'r', 'r']), '',
    list.find((v) => v.results) ? `One decode step, ${shapeName(list.find((v) => v.results).results.decode.shape)}, ` +
      'resident KV cache per dtype, one thread (× of the float32 step):' : '', '',
    table(['Node', 'float32 ms', 'bfloat16 ms', 'int8 ms'], decode, ['l', 'r', 'r', 'r']),
    ...list.filter((v) => v.results?.int8).flatMap((v) => ['', `precision 'int8' against float32, ${v.label}, one thread, ` +
      `wasm ${v.results.int8.engine} (bench/lib/int8.mjs):`, '', renderInt8(v.results.int8)]),
    ...unavailable,
  ];
  return { text: lines.join('\n'), targets: nodeTargets(list, cpu) };
}

/**
 * The targets measured on the newest Node with relaxed SIMD, then the
 * float32 attention's share of the SIMD128 limit on this CPU per Node
 * version (every x86 kind the project runs on must hold it).
 */
function nodeTargets(list, cpu) {
  const out = relaxedTargets(list);
  for (const { label, results: r } of list) {
    if (!r) continue;
    const shares = r.attention.filter(({ rows }) => ok(rows['ours-1'])).map(({ shape, rows }) =>
      ({ shape, share: gflops(flops(shape), rows['ours-1'].medianMs) / r.simd.limit1 }));
    if (!shares.length) continue;
    out.push(targetLine(`${cpu}, ${label} (${r.gemmKernel} kernels): float32 attention one thread ≥ 60% of the ` +
      'SIMD128 limit', shares.every((x) => x.share >= 0.6),
      `${shares.map((x) => `${fmtPct(x.share)} at ${shapeName(x.shape)}`).join(', ')} of ${r.simd.limit1.toFixed(1)} GFLOP/s`, 34));
  }
  return out;
}

/** The targets measured on the newest Node with relaxed SIMD. */
function relaxedTargets(list) {
  const relaxed = list.find((v) => v.results?.fma.limit);
  if (!relaxed) return ['- relaxed-SIMD targets: no Node with relaxed SIMD ran (install Node 24: npm ci --prefix tests/clients)'];
  const out = [];
  const r = relaxed.results;
  const head = r.attention.find((a) => a.shape.heads === 12) ?? r.attention[0];
  const o1 = head.rows['ours-1'];
  if (ok(o1)) {
    const share = gflops(flops(head.shape), o1.medianMs) / r.fma.limit;
    out.push(targetLine(`${relaxed.label}: float32 attention ${shapeName(head.shape)} one thread ≥ 75% of the measured ` +
      'relaxed FMA limit', share >= 0.75, `${fmtPct(share)} of ${r.fma.limit.toFixed(1)} GFLOP/s`, 34));
  }
  const d = r.decode.rows;
  if (ok(d['int8-1']) && ok(d['float32-1'])) {
    const ratio = d['int8-1'].medianMs / d['float32-1'].medianMs;
    out.push(targetLine(`${relaxed.label}: the int8 KV cache's decode step ≤ 0.4× the float32 step`, ratio <= 0.4,
      `${ratio.toFixed(2)}× (${fmtMs(d['int8-1'].medianMs)} vs ${fmtMs(d['float32-1'].medianMs)} ms)`, 34));
  }
  return out;
}
