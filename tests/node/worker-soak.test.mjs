// The worker-mode soak, like longrun.test.mjs's local one:
// 100 000 mixed calls through init({ worker: true }) — attention, module
// forwards, KV-cache decodes, bad calls that reject, modules created and
// dropped — issued in concurrent batches; every result is bit-identical to
// the first call's, and the heaps stay flat on both sides: the calling
// thread's JS heap, the worker's JS heap (its isolate, array buffers
// included) and the worker's wasm memory. The worker is the package's own
// (remote-host.mjs's serve) in a script that can also report its heap.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
// The platform-neutral entry: the package's Node entry would install its own platform.
import { init } from '../../dist/index.mjs';
import { usePlatform } from '../../dist/engine/loader.mjs';
import { nodePlatform } from '../../dist/platform-node.mjs';
import { randomArray } from './js-reference.mjs';

// gc in this thread (a new context sees the flag) and in the worker (a new isolate).
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc');

const script = new URL('./soak-worker.mjs', import.meta.url);
let worker;
usePlatform(Object.assign(Object.create(nodePlatform), {
  apiWorker() {
    worker = new Worker(script, { execArgv: [] });
    return {
      where: fileURLToPath(script),
      post: (message, transfer) => worker.postMessage(message, transfer),
      onMessage: (handler) => worker.on('message', handler),
      onError: (handler) => {
        worker.on('error', (error) => handler(error.message));
        worker.on('exit', (code) => handler(`it exited (code ${code})`));
      },
      terminate: () => worker.terminate(),
      ref: () => worker.ref(),
      unref: () => worker.unref(),
    };
  },
}));

/** The worker's JS heap (used + external) after its own garbage collection. */
function workerHeap() {
  return new Promise((resolve) => {
    const listener = (message) => {
      if (message?.op !== 'heap') return;
      worker.off('message', listener);
      worker.unref();
      assert.ok(message.gc, 'gc is exposed in the worker');
      resolve(message.bytes);
    };
    worker.on('message', listener);
    worker.ref(); // the proxy unrefs an idle worker
    worker.postMessage({ op: 'heap' });
  });
}

/** This thread's JS heap after garbage collection, finalizers (handle releases) given a turn. */
async function pageHeap() {
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return process.memoryUsage().heapUsed;
}

const MiB = 2 ** 20;

describe('worker-mode soak', () => {
  it('100 000 mixed calls in concurrent batches: identical results, flat heaps on both sides', async () => {
    const ca = await init({ worker: true, build: 'single' });
    try {
      await ca.manualSeed(5);
      const mha = await new ca.MultiHeadAttention(8, 8, 32, 0.2, 2, true);
      const wrapper = await (await new ca.MultiHeadAttentionWrapper(4, 3, 16, 0.0, 2)).eval();
      const linear = await new ca.Linear(7, 5);
      const cache = await ca.createKVCache({ batch: 1, kvHeads: 2, headDim: 4, capacity: 64 });
      const a = { q: randomArray(2 * 3 * 9 * 5, 1), k: randomArray(2 * 3 * 11 * 5, 2), v: randomArray(2 * 3 * 11 * 4, 3) };
      const x1 = randomArray(2 * 20 * 8, 4);
      const x2 = randomArray(16 * 4, 5);
      const x3 = randomArray(6 * 7, 6);
      const kv = randomArray(2 * 4, 7);
      const dq = randomArray(4 * 4, 8);
      const out = new Float32Array(4 * 4);
      const state = await (await new ca.CausalAttention(7, 4, 6, 0.0)).stateDict();
      // Each call resolves to a list of arrays (compared bit for bit with
      // its first result) or to the message of the error it must reject with.
      const calls = [
        () => ca.attention(a.q, a.k, a.v, {
          batch: 2, heads: 3, queryLength: 9, keyLength: 11, headDim: 5, valueDim: 4,
          causal: 'bottom-right', returnWeights: true,
        }).then((r) => [r.output, r.weights]),
        () => ca.attention(a.q, a.k, a.v, {
          batch: 2, heads: 3, queryLength: 9, keyLength: 11, headDim: 5, valueDim: 4, training: true, dropout: 0.3, seed: 11,
        }).then((r) => [r.output]),
        () => mha.forward(x1, [2, 20, 8], { seed: 3, returnWeights: true }).then((r) => [r.output, r.weights]),
        () => wrapper.forward(x2, [16, 4]).then((r) => [r]),
        () => linear.forward(x3, [6, 7]).then((r) => [r]),
        // A decode on a cache that is filled to 8 tokens, then cut back to 4.
        async () => {
          for (let t = 0; t < 4; t++) await cache.append(kv, kv);
          const { output } = await cache.attention(dq, { heads: 4, queryLength: 1, out });
          assert.equal(output, out, 'written back into the caller\'s array');
          await cache.truncate(4);
          return [out.slice()];
        },
        // A module created, used once and dropped (released in the worker
        // once this thread collects its handle).
        async () => {
          const m = await new ca.CausalAttention(7, 4, 6, 0.0);
          await m.loadStateDict(state);
          return [await m.forward(x3, [6, 7])];
        },
        // The same submodule handle again and again, and a bad call.
        async () => [await (await mha.W_query).forward(x3.subarray(0, 8), [1, 8])],
        () => ca.attention(a.q, a.k, a.v, { batch: 2 }).then(() => 'resolved', (e) => `${e.name}: ${e.message}`),
      ];
      for (let t = 0; t < 4; t++) await cache.append(kv, kv);
      const first = [];
      for (const call of calls) first.push(await call());
      assert.match(first.at(-1), /^TypeError: options.heads must be an integer >= 1, got undefined$/);

      const batch = 50;
      const run = async (count) => {
        let mismatches = 0;
        for (let i = 0; i < count; i += batch) {
          const results = await Promise.all(Array.from({ length: batch }, (_, j) => {
            // Cache calls depend on order: one per batch, awaited alone below.
            const which = (i + j) % calls.length === 5 ? 0 : (i + j) % calls.length;
            return calls[which]().then((r) => [which, r]);
          }));
          results.push([5, await calls[5]()]);
          for (const [which, got] of results) {
            const want = first[which];
            if (typeof want === 'string') {
              if (got !== want) mismatches++;
            } else if (got.length !== want.length || !got.every((array, n) => array.length === want[n].length &&
              array.every((y, e) => Object.is(y, want[n][e])))) {
              mismatches++;
            }
          }
        }
        return mismatches;
      };
      // Warm up: the arenas reach their size, V8 settles on both sides.
      assert.equal(await run(5000), 0);
      const wasmBefore = ca.memoryBytes;
      const workerBefore = await workerHeap();
      const pageBefore = await pageHeap();
      const total = 100000;
      const started = performance.now();
      const mismatches = await run(total);
      const seconds = (performance.now() - started) / 1000;
      const pageAfter = await pageHeap();
      const workerAfter = await workerHeap();
      await ca.manualSeed(0); // a call through the runtime's handle refreshes its snapshot
      console.log(`# worker mode: ${total} calls (+ ${total / batch} decodes) in ${seconds.toFixed(1)} s; ` +
        `wasm ${ca.memoryBytes} bytes; page JS heap ${(pageBefore / MiB).toFixed(1)} -> ` +
        `${(pageAfter / MiB).toFixed(1)} MiB; worker JS heap ${(workerBefore / MiB).toFixed(1)} -> ` +
        `${(workerAfter / MiB).toFixed(1)} MiB`);
      assert.equal(mismatches, 0);
      assert.equal(ca.memoryBytes, wasmBefore, 'the worker\'s wasm memory did not grow');
      assert.ok(pageAfter - pageBefore < 8 * MiB, `the page's JS heap grew by ${pageAfter - pageBefore} bytes`);
      assert.ok(workerAfter - workerBefore < 8 * MiB, `the worker's JS heap grew by ${workerAfter - workerBefore} bytes`);
    } finally {
      await ca.dispose();
    }
  });
});
