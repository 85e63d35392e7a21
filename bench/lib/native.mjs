// The native Google Benchmark (build/native/native_bench, written in
// bench/native/attention_bench.cc): one benchmark per compiled Highway target
// and shape, single thread (one shape also on 2 threads). Run one shape at a time (so that a peer timed
// right after it sees the same machine load) with a short min time and
// repetitions; the median repetition's real time is reported.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Parses "AVX2/B1_H12_T512_D64[_weights|_threads2]". */
export function parseName(name) {
  const m = /^([^/]+)\/(B(\d+)_H(\d+)_T(\d+)_D(\d+)(_weights)?(?:_threads(\d+))?)$/.exec(name);
  if (!m) return null;
  return {
    target: m[1],
    suffix: m[2],
    shape: { kind: 'attention', batch: +m[3], heads: +m[4], length: +m[5], headDim: +m[6] },
    weights: Boolean(m[7]),
    threads: m[8] ? +m[8] : 1,
  };
}

function checkBinary(binary) {
  if (!existsSync(binary)) throw new Error(`${binary} is missing (node scripts/build.mjs --native builds it)`);
}

/** The benchmark groups, one per shape (every target), in the binary's order. */
export async function listNativeShapes(binary) {
  checkBinary(binary);
  const { stdout } = await run(binary, ['--benchmark_list_tests=true']);
  const groups = new Map();
  for (const line of stdout.split('\n')) {
    const p = parseName(line.trim());
    if (p && !groups.has(p.suffix)) {
      groups.set(p.suffix, { suffix: p.suffix, shape: p.shape, weights: p.weights, threads: p.threads });
    }
  }
  return [...groups.values()];
}

export function nativeArgs({ minTime, repetitions }) {
  return [
    `--benchmark_min_time=${minTime}`,
    `--benchmark_repetitions=${repetitions}`,
    '--benchmark_report_aggregates_only=true',
    '--benchmark_format=json',
  ];
}

/** Runs every target on one shape group; resolves to [{ target, ms, cpuMs, error }]. */
export async function runNativeShape(binary, suffix, options) {
  checkBinary(binary);
  const args = [...nativeArgs(options), `--benchmark_filter=/${suffix}$`];
  const { stdout } = await run(binary, args, { maxBuffer: 64 * 2 ** 20 });
  const json = JSON.parse(stdout);
  const results = [];
  for (const b of json.benchmarks) {
    if (b.run_type === 'aggregate' && b.aggregate_name !== 'median') continue;
    const parsed = parseName(b.run_name ?? b.name);
    if (!parsed) continue;
    const toMs = { ns: 1e-6, us: 1e-3, ms: 1, s: 1e3 }[b.time_unit];
    results.push({
      target: parsed.target,
      ms: b.real_time * toMs,
      cpuMs: b.cpu_time * toMs,
      error: b.error_occurred ? b.error_message : null,
    });
  }
  return { context: json.context, results };
}
