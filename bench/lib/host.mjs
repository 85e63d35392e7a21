// Worker thread holding one case: one implementation, thread count, shape
// and variant. A fresh worker per case keeps each library's process-wide
// state (onnxruntime-web's thread count, tfjs's backend) apart, and its wasm
// memory size is that case's own peak. The main thread drives it run by run
// (bench/lib/runner.mjs), so that cases can be interleaved in time.
//
// Messages (one at a time):
//   open  { peer, config, shape, variant, seed, policy, reference?, returnOutput? }
//         → create, prepare, first run checked against the reference, warm-up
//         → { status: 'ready' | 'n/a' | 'mismatch' | 'error', ... }
//   run   { count } → { samples: ms[] }
//   close {} → { wasmBytes }  (then the worker is terminated)
import { parentPort } from 'node:worker_threads';
import { installWasmMemoryTracker, startPeakRss, trackedWasmBytes } from './memory.mjs';
import { makeInputs } from './shapes.mjs';
import { now, warmUp } from './timing.mjs';
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

let impl;
let prepared;

async function open({ peer, config, shape, variant, seed, policy, reference, returnOutput }) {
  const mod = await import(peer);
  // Cold start: loading the implementation (ours: import + init(), which
  // compiles the wasm; onnxruntime: backend start-up), session or module
  // creation, and the first run.
  const coldStart = now();
  try {
    impl = await mod.create(config);
  } catch (e) {
    if (e instanceof Unavailable) return { status: 'n/a', reason: e.message, level: 'config' };
    throw e;
  }
  const inputs = makeInputs(shape, seed);
  // Peak RSS from here to the end of the warm-up: the other cases' workers
  // are idle meanwhile, and later runs reuse what the warm-up touched.
  const peak = startPeakRss();
  try {
    prepared = await impl.prepare(variant, shape, inputs);
  } catch (e) {
    if (e instanceof Unavailable) return { status: 'n/a', reason: e.message };
    throw e;
  }
  const result = { threads: impl.threads, label: impl.label };
  // Correctness before timing: the first output against ours.
  const first = await prepared.run();
  result.coldMs = now() - coldStart;
  if (reference) {
    result.maxAbsDiff = maxAbsDiff(first, new Float32Array(reference));
    // A route that rounds on purpose (a bfloat16 or int8 KV cache) states its own.
    if (!(result.maxAbsDiff <= (prepared.tolerance ?? TOLERANCE))) return { ...result, status: 'mismatch' };
  }
  if (returnOutput) result.output = first.slice().buffer;
  Object.assign(result, await warmUp(() => prepared.run(), policy));
  result.peakRssDelta = peak();
  result.status = 'ready';
  return result;
}

async function run({ count }) {
  const samples = [];
  for (let i = 0; i < count; ++i) {
    prepared.before?.(); // untimed: e.g. the decode table's cold caches
    const t0 = now();
    await prepared.run();
    samples.push(now() - t0);
  }
  return { samples };
}

async function close() {
  const wasmBytes = impl?.memoryBytes?.() ?? trackedWasmBytes();
  await prepared?.release?.();
  await impl?.dispose?.();
  return { wasmBytes };
}

const handlers = { open, run, close };

parentPort.on('message', async (msg) => {
  let reply;
  try {
    reply = await handlers[msg.op](msg);
  } catch (e) {
    reply = { status: 'error', reason: String(e?.message ?? e).split('\n')[0] };
  }
  parentPort.postMessage(reply, reply.output ? [reply.output] : []);
});
