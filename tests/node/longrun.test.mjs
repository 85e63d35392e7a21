// Long runs and memory: 100 000 calls of mixed shapes keep the wasm heap
// and the JS heap flat and every result identical to the first call's; so
// do 100 000 KV-cache appends (per cache dtype) with truncates, decode steps and module
// caches; a call that grows wasm memory in the middle of other work leaves
// earlier results and later calls correct (heap views are re-read);
// non-finite inputs behave as documented.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { init } from 'causal-attention';
import { maxRelativeError, randomArray, referenceAttention } from './js-reference.mjs';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc');

function heapAfterGc() {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

/** A mix of calls covering every entry point; each returns its result arrays. */
function makeCalls(ca) {
  ca.manualSeed(5);
  const mha = new ca.MultiHeadAttention(8, 8, 32, 0.2, 2, true);
  const wrapper = new ca.MultiHeadAttentionWrapper(4, 3, 16, 0.0, 2);
  const linear = new ca.Linear(7, 5);
  const a = { q: randomArray(2 * 3 * 9 * 5, 1), k: randomArray(2 * 3 * 11 * 5, 2), v: randomArray(2 * 3 * 11 * 4, 3) };
  const x1 = randomArray(2 * 20 * 8, 4);
  const x2 = randomArray(16 * 4, 5);
  const x3 = randomArray(6 * 7, 6);
  const t = randomArray(64 * 16, 7);
  return [
    () => [ca.attention(a.q, a.k, a.v, {
      batch: 2, heads: 3, queryLength: 9, keyLength: 11, headDim: 5, valueDim: 4,
      causal: 'bottom-right', returnWeights: true,
    })],
    () => [ca.attention(t, t, t, { batch: 1, heads: 1, queryLength: 64, headDim: 16, training: true, dropout: 0.3, seed: 11 }).output],
    () => [ca.attention(a.q, a.k, a.v, {
      batch: 2, heads: 3, queryLength: 9, keyLength: 11, headDim: 5, valueDim: 4, maskStrategy: 'renormalize',
    }).output],
    () => [mha.forward(x1, [2, 20, 8], { seed: 3, returnWeights: true })],
    () => [wrapper.eval().forward(x2, [16, 4])],
    () => [linear.forward(x3, [6, 7])],
  ];
}

const flatten = (results) => results.flatMap((r) => (r instanceof Float32Array ? [r] : Object.values(r)));

for (const [build, initOptions] of [['single', { build: 'single' }], ['threads', { build: 'threads', threads: 2 }]]) {
  describe(`long run (${build} build)`, () => {
    const total = 100000;
    it(`${total} mixed calls: flat wasm and JS heaps, identical results`, async () => {
      const ca = await init(initOptions);
      const calls = makeCalls(ca);
      const first = calls.map((c) => flatten(c()));
      // Warm up: the arena reaches its size and V8 settles.
      for (let i = 0; i < 2000; i++) calls[i % calls.length]();
      const wasmBefore = ca.memoryBytes;
      const jsBefore = heapAfterGc();
      const started = performance.now();
      let mismatches = 0;
      for (let i = 0; i < total; i++) {
        const which = i % calls.length;
        const got = flatten(calls[which]());
        // Compare every call (cheap at these sizes), element by element.
        for (let j = 0; j < got.length; j++) {
          const want = first[which][j];
          const have = got[j];
          for (let e = 0; e < want.length; e++) {
            if (!Object.is(have[e], want[e])) { mismatches++; break; }
          }
        }
      }
      const seconds = (performance.now() - started) / 1000;
      const jsAfter = heapAfterGc();
      console.log(`# ${build}: ${total} calls in ${seconds.toFixed(1)} s; wasm ${ca.memoryBytes} bytes; ` +
        `JS heap ${(jsBefore / 2 ** 20).toFixed(1)} -> ${(jsAfter / 2 ** 20).toFixed(1)} MiB`);
      assert.equal(mismatches, 0);
      assert.equal(ca.memoryBytes, wasmBefore, 'wasm memory did not grow');
      assert.ok(jsAfter - jsBefore < 8 * 2 ** 20, `JS heap grew by ${jsAfter - jsBefore} bytes`);
    });
  });
}

for (const [build, initOptions] of [['single', { build: 'single' }], ['threads', { build: 'threads', threads: 2 }]]) {
  describe(`KV cache soak (${build} build)`, () => {
    for (const dtype of /** @type {const} */ (['float32', 'bfloat16', 'int8'])) it(`${dtype}: 100 000 appends with truncates, decode steps and module caches: flat heaps, the same results`, async () => {
      const ca = await init(initOptions);
      const KV = 2, H = 4, D = 16;
      // Position p always holds token p % 64, so a decode step's result
      // depends on the cache length only: equal lengths give equal bits.
      const keys = Array.from({ length: 64 }, (_, i) => randomArray(KV * D, 100 + i));
      const values = Array.from({ length: 64 }, (_, i) => randomArray(KV * D, 200 + i));
      const q = randomArray(H * D, 300);
      const out = new Float32Array(H * D);
      const cache = ca.createKVCache({ batch: 1, kvHeads: KV, headDim: D, capacity: 512, dtype });
      ca.manualSeed(4);
      const gqa = new ca.GroupedQueryAttention(8, 16, H, KV, { contextLength: 64 }).eval();
      const x = randomArray(40 * 8, 400);
      const firstAt = new Map();
      let mismatches = 0;
      let steps = 0;
      const step = (i) => {
        const p = cache.length;
        cache.append(keys[p % 64], values[p % 64]);
        if (cache.length === 500) cache.truncate(100);
        if (i % 7 === 0) {
          cache.attention(q, { heads: H, queryLength: 1, out });
          const first = firstAt.get(cache.length);
          if (!first) firstAt.set(cache.length, out.slice());
          else if (!first.every((y, j) => Object.is(y, out[j]))) mismatches++;
          steps++;
        }
        if (i % 5000 === 0) {
          // A module's cache: a prompt, tokens (growing past its first block), reset.
          gqa.forward(x.subarray(0, 8 * 8), [8, 8], { useCache: true, cacheDtype: dtype });
          for (let t = 8; t < 40; t++) {
            gqa.forward(x.subarray(t * 8, (t + 1) * 8), [1, 8], { useCache: true, cacheDtype: dtype });
          }
          gqa.resetCache();
        }
      };
      for (let i = 0; i < 2000; i++) step(i);
      const wasmBefore = ca.memoryBytes;
      const jsBefore = heapAfterGc();
      const total = 100000;
      const started = performance.now();
      for (let i = 0; i < total; i++) step(i);
      const seconds = (performance.now() - started) / 1000;
      const jsAfter = heapAfterGc();
      console.log(`# ${build}, ${dtype}: ${total} appends, ${steps} decode steps in ${seconds.toFixed(1)} s; ` +
        `wasm ${ca.memoryBytes} bytes; JS heap ${(jsBefore / 2 ** 20).toFixed(1)} -> ${(jsAfter / 2 ** 20).toFixed(1)} MiB`);
      assert.equal(mismatches, 0);
      assert.ok(firstAt.size > 300, `decode steps at ${firstAt.size} distinct lengths`);
      assert.equal(ca.memoryBytes, wasmBefore, 'wasm memory did not grow');
      assert.ok(jsAfter - jsBefore < 8 * 2 ** 20, `JS heap grew by ${jsAfter - jsBefore} bytes`);
      cache.dispose();
    });
  });
}

describe('memory growth in the middle of work', () => {
  for (const [build, initOptions] of [['single', { build: 'single' }], ['threads', { build: 'threads', threads: 3 }]]) {
    it(`${build}: a call that grows wasm memory leaves earlier and later results correct`, async () => {
      const ca = await init(initOptions);
      const small = { batch: 1, heads: 2, queryLength: 12, headDim: 8, returnWeights: true };
      const q = randomArray(2 * 12 * 8, 21);
      const before = ca.attention(q, q, q, small);
      const expected = referenceAttention(q, q, q, small);
      assert.ok(maxRelativeError(before.output, expected.output) <= 1e-5);
      const bytesBefore = ca.memoryBytes;

      // The module forward grows the heap from inside the wasm call (its C++
      // workspace), so the JS side must re-read its views after the call.
      // It comes first: after the large call below, its workspace would fit
      // in the room that call's scratch arena gives back.
      ca.manualSeed(9);
      // In eval mode: a training forward stages what it keeps for a backward
      // in the JS-side arena first, so less of its growth happens in wasm.
      const m = new ca.MultiHeadAttention(64, 64, 4096, 0, 4).eval();
      const x = randomArray(4 * 4096 * 64, 23);
      const y = m.forward(x, [4, 4096, 64]);
      assert.ok(ca.memoryBytes > bytesBefore, 'the forward grew the heap from inside wasm');
      assert.ok(y.every(Number.isFinite));

      // Weights of 8 × 1536² floats (72 MiB) grow the heap from the JS side.
      const T = 1536;
      const big = randomArray(8 * T * 4, 22);
      const memoryBeforeBig = ca.memoryBytes;
      const grown = ca.attention(big, big, big, { batch: 1, heads: 8, queryLength: T, headDim: 4, returnWeights: true });
      assert.ok(ca.memoryBytes > memoryBeforeBig, 'the heap grew');
      // Spot-check the big result against the JS reference on one head's last rows.
      const head = { batch: 1, heads: 1, queryLength: T, headDim: 4 };
      const ref = referenceAttention(big.subarray(7 * T * 4, 8 * T * 4), big.subarray(7 * T * 4, 8 * T * 4),
        big.subarray(7 * T * 4, 8 * T * 4), head);
      assert.ok(maxRelativeError(grown.output.subarray(7 * T * 4), ref.output) <= 1e-5);
      assert.ok(Math.abs(grown.weights.subarray(8 * T * T - T).reduce((s, w) => s + w, 0) - 1) < 1e-4);
      // The first result is untouched (a JS-owned copy) and a repeat matches it.
      assert.ok(maxRelativeError(before.output, expected.output) <= 1e-5);
      assert.deepEqual(ca.attention(q, q, q, small), before);
      // The module's first sequence alone gives the same rows.
      const one = m.forward(x.subarray(0, 4096 * 64), [1, 4096, 64]);
      assert.ok(maxRelativeError(y.subarray(0, 4096 * 64), one) <= 1e-6);
    });
  }
});

describe('non-finite inputs', async () => {
  const ca = await init({ build: 'single' });
  const shape = { batch: 1, heads: 1, queryLength: 8, headDim: 3, returnWeights: true };

  it('NaN or Infinity in q or k poisons exactly the rows that see it', () => {
    const q = randomArray(24, 31);
    const k = randomArray(24, 32);
    const v = randomArray(24, 33);
    q[2 * 3 + 1] = NaN;       // query 2
    k[5 * 3] = Infinity;      // key 5: queries 5, 6, 7 see it
    for (const returnWeights of [true, false]) {
      const r = ca.attention(q, k, v, { ...shape, returnWeights });
      for (let i = 0; i < 8; i++) {
        const poisoned = i === 2 || i >= 5;
        assert.equal(Number.isNaN(r.output[i * 3]), poisoned, `row ${i}`);
        if (returnWeights) assert.equal(Number.isNaN(r.weights[i * 8]), poisoned);
      }
    }
  });

  it('NaN in a value row reaches only the outputs of rows that see that key', () => {
    const q = randomArray(24, 41);
    const v = randomArray(24, 42);
    v[6 * 3 + 2] = NaN; // key 6, column 2
    const r = ca.attention(q, q, v, shape);
    for (let i = 0; i < 8; i++) {
      assert.equal(Number.isNaN(r.output[i * 3 + 2]), i >= 6, `row ${i}`);
      assert.ok(!Number.isNaN(r.output[i * 3]), 'other columns stay finite');
    }
  });

  it('a fully masked row is zeros even when its inputs are NaN', () => {
    const q = randomArray(4 * 2, 51);
    const k = randomArray(2 * 2, 52);
    q[0] = NaN; // query 0 sees no key under bottom-right with 4 queries, 2 keys
    const r = ca.attention(q, k, k, {
      batch: 1, heads: 1, queryLength: 4, keyLength: 2, headDim: 2, causal: 'bottom-right', returnWeights: true,
    });
    assert.deepEqual(Array.from(r.output.subarray(0, 2)), [0, 0]);
    assert.deepEqual(Array.from(r.weights.subarray(0, 2)), [0, 0]);
  });
});
