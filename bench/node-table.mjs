#!/usr/bin/env node
// One Node version's table, run in that version's own process (by
// bench/lib/node-versions.mjs, or by hand: `<node> bench/node-table.mjs
// --out=FILE [--quick]`): this engine's measured limits (the SIMD128
// mul+add loop, the relaxed-SIMD FMA loop where it validates, the
// single-thread read bandwidth), then the headline attention shapes — ours
// single and threads against onnxruntime-web, interleaved in one session per
// shape — one decode step per KV cache dtype at the Llama-3-8B layer, and
// precision 'int8' against float32 (bench/lib/int8.mjs).
// Writes the results as JSON to --out (stdout without it); progress on stderr.
import { writeFileSync } from 'node:fs';
import { runInt8Table } from './lib/int8.mjs';
import { measureReadBandwidth } from './lib/read-bandwidth.mjs';
import { interleave, openCase } from './lib/runner.mjs';
import { benchPolicy } from './lib/timing.mjs';
import {
  ATTENTION_SHAPES, DECODE_SHAPES, decodeBytes, shapeName,
} from './lib/shapes.mjs';
import {
  bestChains, measureFmaLimit, measureSimdLimit, measureSimdLimitThreads, withEndReading,
} from './lib/simd-limit.mjs';

const argv = process.argv.slice(2);
const option = (name) => argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
const quick = argv.includes('--quick');
const log = (...a) => console.error(...a);
const SEED = 1234;

/** The headline shapes: the README's (1,12,1024,64) and one long head. */
const NODE_TABLE_SHAPES = ATTENTION_SHAPES.filter((s) => s.batch === 1 && s.headDim === 64 &&
  ((s.heads === 12 && s.length === 1024) || (s.heads === 1 && s.length === 4096)));
/** The decode row: one step of a Llama-3-8B layer against 4096 cached tokens, per cache dtype. */
const NODE_TABLE_DECODE = DECODE_SHAPES.find((s) => s.model === 'Llama-3-8B' && s.cacheLength === 4096);

const peer = (file) => new URL(`./peers/${file}`, import.meta.url);

/**
 * The attention cases of a shape: ours single and threads (the reference
 * output), then the peers and ours' other variants, all in one interleaved
 * session. A case whose peer does not list its variant for the shape is left out.
 */
const ATTENTION_CASES = [
  { key: 'ours-1', peer: 'ours.mjs', threads: 1 },
  { key: 'ours-2', peer: 'ours.mjs', threads: 2 },
  { key: 'ort-web-1', peer: 'ort-web.mjs', threads: 1 },
];
const DECODE_CASES = [
  { key: 'float32-1', peer: 'ours.mjs', variant: 'resident KV cache', threads: 1 },
  { key: 'bfloat16-1', peer: 'ours.mjs', variant: 'resident KV cache, bfloat16', threads: 1 },
  { key: 'int8-1', peer: 'ours.mjs', variant: 'resident KV cache, int8', threads: 1 },
];

const policy = benchPolicy(quick);

/** Opens every case of `cases` that applies to `shape`, checked against the first; times them interleaved. */
async function runSession(shape, cases) {
  const rows = {};
  const open = [];
  let reference;
  for (const c of cases) {
    const module = await import(peer(c.peer));
    const variants = module.variants(shape);
    const variant = c.variant ?? variants[0];
    if (!variants.includes(variant)) continue;
    const r = await openCase({
      peer: peer(c.peer), config: { threads: c.threads }, shape, variant, seed: SEED, policy,
      returnOutput: !reference, reference,
    });
    if (r.output) reference = r.output;
    delete r.output;
    if (r.status !== 'ready') {
      log(`  ${c.key} ${variant}: ${r.status} ${r.reason ?? ''}`);
      rows[c.key] = { status: r.status, reason: r.reason, variant };
      continue;
    }
    open.push({ c, r, variant });
  }
  if (!open.length) return rows;
  const { stats, otherLoad } = await interleave(open.map((o) => o.r), policy);
  for (const [i, { c, r, variant }] of open.entries()) {
    const { wasmBytes } = await r.close();
    rows[c.key] = {
      status: 'ok', label: r.label, variant, threads: r.threads, maxAbsDiff: r.maxAbsDiff, wasmBytes, ...stats[i], otherLoad,
    };
    log(`  ${c.key}: ${rows[c.key].medianMs.toFixed(2)} ms (${rows[c.key].runs} runs)`);
  }
  return rows;
}

const { init } = await import('causal-attention');
const probe = await init({ build: 'single' });
const gemmKernel = probe.gemmKernel;
probe.dispose();

log(`Node ${process.version}: limits...`);
const simdStart = measureSimdLimit();
const chains = bestChains(simdStart.byChains);
const simd2 = await measureSimdLimitThreads(2, chains);
const fmaStart = measureFmaLimit();
const bandwidthBytes = 256 * 2 ** 20;
const bandwidth = measureReadBandwidth(bandwidthBytes, { cold: true });

const attention = [];
for (const shape of quick ? NODE_TABLE_SHAPES.slice(0, 1) : NODE_TABLE_SHAPES) {
  log(shapeName(shape));
  attention.push({ shape, rows: await runSession(shape, ATTENTION_CASES) });
}
log(`decode: ${shapeName(NODE_TABLE_DECODE)}`);
const decode = { shape: NODE_TABLE_DECODE, bytes: decodeBytes(NODE_TABLE_DECODE), rows: await runSession(NODE_TABLE_DECODE, DECODE_CASES) };

log('precision \'int8\' against float32 (bench/lib/int8.mjs)');
const int8 = await runInt8Table({ policy, log, quick, seed: SEED });

// Other load only lowers a reading: the higher of start and end is the limit.
const simdEnd = measureSimdLimit({}, [chains]);
const results = {
  node: process.version,
  v8: process.versions.v8,
  gemmKernel,
  simd: { limit1: Math.max(simdStart.gflops, simdEnd.gflops), limit2: simd2, chains },
  fma: withEndReading(fmaStart,
    fmaStart.gflops === null ? undefined : measureFmaLimit({}, [bestChains(fmaStart.byChains)]).gflops),
  bandwidth: { bytes: bandwidthBytes, gbps: Math.max(bandwidth, measureReadBandwidth(bandwidthBytes, { cold: true })) },
  attention,
  decode,
  int8,
};
const out = option('out');
if (out) writeFileSync(out, JSON.stringify(results, null, 2));
else console.log(JSON.stringify(results, null, 2));
