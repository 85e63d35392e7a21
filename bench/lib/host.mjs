// Worker thread that runs one case: one implementation, thread count, shape
// and variant. A fresh worker per case keeps each library's process-wide
// state (onnxruntime-web's thread count, tfjs's backend) apart, and its wasm
// memory size is that case's own peak.
//
// workerData: { peer, config, shape, variant, seed, policy, reference?, returnOutput? }
// posts: { status: 'ok' | 'n/a' | 'mismatch' | 'error', ... }
import { parentPort, workerData } from 'node:worker_threads';
import { startOtherLoad } from './load.mjs';
import { installWasmMemoryTracker, startPeakRss, trackedWasmBytes } from './memory.mjs';
import { makeInputs } from './shapes.mjs';
import { measure } from './timing.mjs';
import { Unavailable } from './unavailable.mjs';

installWasmMemoryTracker(); // before any library compiles its wasm

const TOLERANCE = 1e-3;

function maxAbsDiff(a, b) {
  if (a.length !== b.length) return Infinity;
  let m = 0;
  for (let i = 0; i < a.length; ++i) {
    const d = Math.abs(a[i] - b[i]);
    if (!(d <= m)) m = d; // NaN propagates as a mismatch
  }
  return m;
}

async function main() {
  const { peer: peerPath, config, shape, variant, seed, policy, reference, returnOutput } = workerData;
  const mod = await import(peerPath);
  let impl;
  try {
    impl = await mod.create(config);
  } catch (e) {
    if (e instanceof Unavailable) return { status: 'n/a', reason: e.message, level: 'config' };
    throw e;
  }
  const inputs = makeInputs(shape, seed);
  const peak = startPeakRss();
  let prepared;
  try {
    prepared = await impl.prepare(variant, shape, inputs);
  } catch (e) {
    if (e instanceof Unavailable) return { status: 'n/a', reason: e.message };
    throw e;
  }
  const result = { threads: impl.threads, label: impl.label };
  // Correctness before timing: the first output against ours.
  const first = await prepared.run();
  if (reference) {
    const diff = maxAbsDiff(first, new Float32Array(reference));
    result.maxAbsDiff = diff;
    if (!(diff <= TOLERANCE)) return { ...result, status: 'mismatch' };
  }
  const otherLoad = startOtherLoad();
  const stats = await measure(() => prepared.run(), policy);
  Object.assign(result, stats, {
    otherLoad: otherLoad(),
    status: 'ok',
    wasmBytes: impl.memoryBytes?.() ?? trackedWasmBytes(),
    wasmBytesTracked: trackedWasmBytes(),
    peakRssDelta: peak(),
  });
  if (returnOutput) result.output = first.buffer.byteLength === first.byteLength ? first.buffer : first.slice().buffer;
  await prepared.release?.();
  await impl.dispose?.();
  return result;
}

main().then(
  (r) => parentPort.postMessage(r, r.output ? [r.output] : []),
  (e) => parentPort.postMessage({ status: 'error', reason: String(e?.message ?? e).split('\n')[0] }),
);
