// Memory a finished call no longer needs is reusable: after one
// call that needed most of a wasm32 heap, a KV cache of most of the rest
// fits, as in a fresh runtime; and when memory does run out, the message
// says what holds it and what to do. Its own file: a fresh process, so the
// heap starts empty.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { init } from 'causal-attention';
import { randomArray } from './js-reference.mjs';

const GiB = 2 ** 30;

describe('scratch memory after a large call', () => {
  it('two 1.50 GiB KV caches fit after a call whose weights took 0.84 GiB; out of memory says what holds it', async () => {
    const ca = await init({ build: 'single' });
    // q, k, v of 15 000 floats, weights 15 000² floats (0.84 GiB) staged in
    // the scratch arena and copied out.
    const T = 15000;
    const t = randomArray(T, 1);
    let r = ca.attention(t, t, t, { batch: 1, heads: 1, queryLength: T, headDim: 1, returnWeights: true });
    assert.equal(r.weights.length, T * T);
    assert.ok(ca.memoryBytes > 0.84 * GiB, `the heap grew to ${ca.memoryBytes}`);
    r = null;
    // 1 × 8 × 196 608 × (128 + 128) × 4 bytes = 1.50 GiB (one block stays
    // below 2 GiB): two fit beside the arena's 0.84 GiB in a 4 GiB heap, a
    // third cannot.
    const layout = { batch: 1, kvHeads: 8, headDim: 128, capacity: 196608 };
    const other = ca.createKVCache(layout);
    const cache = ca.createKVCache(layout);
    try {
      const k = randomArray(8 * 128, 2);
      const v = randomArray(8 * 128, 3);
      cache.append(k, v);
      const q = randomArray(8 * 128, 4);
      const { output } = cache.attention(q, { heads: 8, queryLength: 1 });
      // One key per head: the output is that key's value row.
      assert.deepEqual(output, v);
      // A third one cannot fit: the message names what holds the memory and what to do.
      assert.throws(() => ca.createKVCache(layout), (error) => {
        assert.equal(error.constructor, RangeError);
        assert.match(error.message, /^a KV cache needs 1\.50 GiB of wasm memory and the module could not allocate it \(heap now [\d.]+ GiB, limit 4\.00 GiB; 2 live KV caches \(yours or the modules' useCache\) hold 3\.00 GiB; no scratch memory is held between calls\)\. Dispose the KV caches you no longer need/);
        assert.match(error.message, /a fresh runtime \(dispose\(\) this one, then init\(\)\) starts with all of it free$/);
        return true;
      });
      // Stored weights are named apart from the caches.
      const linear = new ca.Linear(64, 32).quantize('int8');
      assert.throws(() => ca.createKVCache(layout), (error) => /2 live KV caches \(yours or the modules' useCache\) hold 3\.00 GiB; the stored weights of 1 Linear layer \(quantize\(\); free with dispose\(\) or quantize\('float32'\)\) hold 2\.3 KiB;/.test(error.message));
      linear.dispose();
      // And the runtime still computes.
      assert.deepEqual(cache.attention(q, { heads: 8, queryLength: 1 }).output, output);
    } finally {
      cache.dispose();
      other.dispose();
    }
    // The caches' room is reusable in turn: the large call runs again.
    r = ca.attention(t, t, t, { batch: 1, heads: 1, queryLength: T, headDim: 1, returnWeights: true });
    assert.equal(r.weights.length, T * T);
  });
});

describe('the heap past 2 GiB', () => {
  for (const build of ['single', 'threads']) {
    it(`${build} build: a cache lying above 2^31 attends as a small one; one block stays below 2 GiB`, async () => {
      const ca = await init({ build, threads: build === 'threads' ? 2 : undefined });
      try {
        // Two caches of 1.2 GiB: the second one's values start past 1.8 GiB,
        // its last KV heads' past 2 GiB.
        const layout = { batch: 1, kvHeads: 8, headDim: 128, capacity: 157000 };
        const first = ca.createKVCache(layout);
        const big = ca.createKVCache(layout);
        const small = ca.createKVCache({ ...layout, capacity: 3 });
        assert.ok(ca.memoryBytes > 2.4 * GiB, `heap ${ca.memoryBytes}`);
        assert.throws(() => ca.createKVCache({ ...layout, capacity: 300000 }),
          { name: 'RangeError', message: /^a KV cache needs 2\.29 GiB of wasm memory .*; a wasm32 module holds at most 4\.00 GiB, in blocks below 2\.00 GiB each$/ });
        assert.equal(first.length, 0);
        const k = randomArray(3 * 8 * 128, 5);
        const v = randomArray(3 * 8 * 128, 6);
        const q = randomArray(32 * 128, 7);
        const want = small.append(k, v).attention(q, { heads: 32, queryLength: 1 }).output;
        assert.deepEqual(big.append(k, v).attention(q, { heads: 32, queryLength: 1 }).output, want);
      } finally {
        ca.dispose();
      }
    });
  }
});
