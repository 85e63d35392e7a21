// Memory a finished call no longer needs is reusable (issue 23): after one
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
  it('a 1.07 GiB KV cache fits after a call whose weights took 0.84 GiB; out of memory says what holds it', async () => {
    const ca = await init({ build: 'single' });
    // q, k, v of 15 000 floats, weights 15 000² floats (0.84 GiB) staged in
    // the scratch arena and copied out.
    const T = 15000;
    const t = randomArray(T, 1);
    let r = ca.attention(t, t, t, { batch: 1, heads: 1, queryLength: T, headDim: 1, returnWeights: true });
    assert.equal(r.weights.length, T * T);
    assert.ok(ca.memoryBytes > 0.84 * GiB, `the heap grew to ${ca.memoryBytes}`);
    r = null;
    // 1 × 8 × 140 000 × (128 + 128) × 4 bytes = 1.07 GiB: with the arena
    // still held, the heap would need 1.9 GiB plus; it must reuse the arena's room.
    const layout = { batch: 1, kvHeads: 8, headDim: 128, capacity: 140000 };
    const cache = ca.createKVCache(layout);
    try {
      const k = randomArray(8 * 128, 2);
      const v = randomArray(8 * 128, 3);
      cache.append(k, v);
      const q = randomArray(8 * 128, 4);
      const { output } = cache.attention(q, { heads: 8, queryLength: 1 });
      // One key per head: the output is that key's value row.
      assert.deepEqual(output, v);
      // A second one cannot fit: the message names what holds the memory and what to do.
      assert.throws(() => ca.createKVCache(layout), (error) => {
        assert.equal(error.constructor, RangeError);
        assert.match(error.message, /^a KV cache needs 1\.07 GiB of wasm memory and the module could not allocate it \(heap now [\d.]+ GiB, limit 2\.00 GiB; 1 live KV cache \(yours or the modules' useCache\) holds 1\.07 GiB; no scratch memory is held between calls\)\. Dispose the KV caches you no longer need/);
        assert.match(error.message, /a fresh runtime \(dispose\(\) this one, then init\(\)\) starts with all of it free$/);
        return true;
      });
      // And the runtime still computes.
      assert.deepEqual(cache.attention(q, { heads: 8, queryLength: 1 }).output, output);
    } finally {
      cache.dispose();
    }
    // The cache's room is reusable in turn: the large call runs again.
    r = ca.attention(t, t, t, { batch: 1, heads: 1, queryLength: T, headDim: 1, returnWeights: true });
    assert.equal(r.weights.length, T * T);
  });
});
