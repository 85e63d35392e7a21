// The native Google Benchmark (build/native/native_bench, written in
// bench/native/attention_bench.cc): one benchmark per compiled Highway target
// and shape, single thread. Run with a short min time and 3 repetitions; the
// median repetition's real time is reported.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Parses "AVX2/B1_H12_T512_D64[_weights]". */
export function parseName(name) {
  const m = /^([^/]+)\/B(\d+)_H(\d+)_T(\d+)_D(\d+)(_weights)?$/.exec(name);
  if (!m) return null;
  return {
    target: m[1],
    shape: { kind: 'attention', batch: +m[2], heads: +m[3], length: +m[4], headDim: +m[5] },
    weights: Boolean(m[6]),
  };
}

export async function runNativeBench(binary, { minTime = 0.1, repetitions = 3 } = {}) {
  if (!existsSync(binary)) throw new Error(`${binary} is missing (node scripts/build.mjs --native builds it)`);
  const args = [
    `--benchmark_min_time=${minTime}`,
    `--benchmark_repetitions=${repetitions}`,
    '--benchmark_report_aggregates_only=true',
    '--benchmark_format=json',
  ];
  const { stdout } = await run(binary, args, { maxBuffer: 64 * 2 ** 20 });
  const json = JSON.parse(stdout);
  const results = [];
  for (const b of json.benchmarks) {
    if (b.run_type === 'aggregate' && b.aggregate_name !== 'median') continue;
    const parsed = parseName(b.run_name ?? b.name);
    if (!parsed) continue;
    const toMs = { ns: 1e-6, us: 1e-3, ms: 1, s: 1e3 }[b.time_unit];
    results.push({ ...parsed, ms: b.real_time * toMs, error: b.error_occurred ? b.error_message : null });
  }
  return { args, context: json.context, results };
}
