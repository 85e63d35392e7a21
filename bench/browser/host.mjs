// One benchmark case inside Chromium, on the page's thread or in a worker
// (bench/browser/worker.mjs): the browser side of bench/lib/host.mjs, with
// the same open / run / close steps, plus a cold start.
import { makeInputs } from '../lib/shapes.mjs';
import { CHAIN_COUNTS, measureFmaLimit, measureSimdLimit } from '../lib/simd-limit.mjs';
import { warmUp } from '../lib/timing.mjs';
import { PEERS } from './peers.mjs';

let impl;
let prepared;

export async function open({ peer, config, shape, variant, seed, policy }) {
  impl = await PEERS[peer].create(config);
  const inputs = makeInputs(shape, seed);
  prepared = await impl.prepare(variant, shape, inputs);
  const first = await prepared.run();
  const warm = await warmUp(() => prepared.run(), policy);
  // A checksum of the first output, compared across implementations.
  let sum = 0;
  for (let i = 0; i < first.length; i += 97) sum += first[i];
  return { status: 'ready', label: impl.label, threads: impl.threads, checksum: sum, ...warm };
}

export async function run({ count }) {
  const samples = [];
  for (let i = 0; i < count; ++i) {
    prepared.before?.(); // untimed: e.g. the decode step's cold caches
    const t0 = performance.now();
    await prepared.run();
    samples.push(performance.now() - t0);
  }
  return { samples };
}

export async function close() {
  await prepared?.release?.();
  await impl?.dispose?.();
  return {};
}

/**
 * Cold start: from loading the implementation (ours: init(), which fetches
 * and compiles the wasm; onnxruntime-web: backend start-up and session
 * creation) to the first output, in a fresh page with an empty cache.
 */
export async function coldStart({ peer, config, shape, variant, seed }) {
  const inputs = makeInputs(shape, seed);
  const t0 = performance.now();
  impl = await PEERS[peer].create(config);
  prepared = await impl.prepare(variant, shape, inputs);
  await prepared.run();
  return { ms: performance.now() - t0 };
}

/**
 * The wasm SIMD128 mul+add limit in this thread over the given accumulator
 * counts, or with `fma` the relaxed-SIMD FMA limit (bench/lib/simd-limit.mjs).
 */
export function simdLimit({ fma = false, chainCounts = CHAIN_COUNTS, callMs = 40, repeats = 5 } = {}) {
  return (fma ? measureFmaLimit : measureSimdLimit)({ callMs, repeats }, chainCounts);
}

export const handlers = { open, run, close, coldStart, simdLimit };
