// Issue 20's sequences: a KV cache whose batch sequences each have their own
// length (appends to some of them, truncations, forks) and the window cache,
// against a plain-JS float64 reference over each sequence's whole history
// (js-reference.mjs: referenceAttention64, written from the rules' text).
// Tolerance |a - ref| <= 1e-5 (1 + |ref|) elementwise, as everywhere.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { init } from 'causal-attention';
import { maxRelativeError, randomArray, referenceAttention64, storedKv } from './js-reference.mjs';
import { nodeResult } from './node-child.mjs';

const TOL = 1e-5;

/** A deterministic generator in [0, 1) (mulberry32). */
function random(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

/**
 * Every token ever appended to each sequence, per KV head: what the cache's
 * attention must equal attention over.
 */
class History {
  /**
   * @param {number} batch
   * @param {number} kvHeads
   * @param {number} headDim
   * @param {number} valueDim
   */
  constructor(batch, kvHeads, headDim, valueDim) {
    Object.assign(this, { kvHeads, headDim, valueDim });
    /** @type {{ k: Float32Array[][], v: Float32Array[][] }[]} per sequence, per KV head, per token */
    this.seqs = Array.from({ length: batch }, () => ({
      k: Array.from({ length: kvHeads }, () => []), v: Array.from({ length: kvHeads }, () => []),
    }));
  }

  lengths() {
    return Int32Array.from(this.seqs, (s) => s.k[0].length);
  }

  /** k [sequences.length, kvHeads, t, headDim] and v likewise, as the cache takes them. */
  append(k, v, sequences) {
    const { kvHeads, headDim, valueDim } = this;
    const t = k.length / (sequences.length * kvHeads * headDim);
    sequences.forEach((s, n) => {
      for (let h = 0; h < kvHeads; h++) {
        for (let j = 0; j < t; j++) {
          const row = (n * kvHeads + h) * t + j;
          this.seqs[s].k[h].push(k.slice(row * headDim, (row + 1) * headDim));
          this.seqs[s].v[h].push(v.slice(row * valueDim, (row + 1) * valueDim));
        }
      }
    });
  }

  truncate(n, sequences) {
    for (const s of sequences) {
      for (const part of ['k', 'v']) this.seqs[s][part] = this.seqs[s][part].map((rows) => rows.slice(0, n));
    }
  }

  copy(from, to, length) {
    for (const part of ['k', 'v']) this.seqs[to][part] = this.seqs[from][part].map((rows) => rows.slice(0, length));
  }

  /**
   * The float64 reference of cache.attention(q, { heads, queryLength, ... }):
   * each sequence's queries against its whole history, bottom-right.
   */
  attention(q, heads, queryLength, extra = {}) {
    const { kvHeads, headDim, valueDim } = this;
    const out = new Float64Array(this.seqs.length * heads * queryLength * valueDim);
    this.seqs.forEach((seq, b) => {
      const tk = seq.k[0].length;
      const flat = (part, w) => {
        const a = new Float32Array(kvHeads * tk * w);
        seq[part].forEach((rows, h) => rows.forEach((row, j) => a.set(row, (h * tk + j) * w)));
        return a;
      };
      const per = heads * queryLength;
      const r = referenceAttention64(q.subarray(b * per * headDim, (b + 1) * per * headDim), flat('k', headDim),
        flat('v', valueDim), {
          batch: 1, heads, kvHeads, queryLength, keyLength: tk, headDim, valueDim, causal: 'bottom-right', ...extra,
        });
      out.set(r.output, b * per * valueDim);
    });
    return out;
  }
}

/** Distinct sequences in [0, batch), in a random order, at least one. */
function someSequences(rand, batch) {
  const all = Array.from({ length: batch }, (_, b) => b).sort(() => rand() - 0.5);
  return all.slice(0, 1 + Math.floor(rand() * batch));
}

describe('KV cache sequences of their own lengths (issue 20)', async () => {
  const ca = await init({ build: 'single' });
  const threaded = await init({ build: 'threads', threads: 2 });

  // A bfloat16 or int8 cache (issue 20's dtype) against the reference on its rounded values.
  for (const dtype of /** @type {const} */ (['float32', 'bfloat16', 'int8'])) it(`${dtype}: ragged appends, truncations and forks, each step against the float64 reference (GQA, both builds)`, () => {
    const B = 4, KV = 2, H = 6, D = 5, DV = 3, C = 40;
    const rand = random(7);
    const caches = [ca, threaded].map((rt) => rt.createKVCache({ batch: B, kvHeads: KV, headDim: D, valueDim: DV, capacity: C, dtype }));
    const history = new History(B, KV, D, DV);
    let checks = 0, appends = 0, truncations = 0, forks = 0;
    for (let step = 0; step < 120; step++) {
      const lengths = history.lengths();
      const op = rand();
      if (op < 0.6) {
        const sequences = someSequences(rand, B);
        const room = Math.min(...sequences.map((s) => C - lengths[s]));
        if (room === 0) { history.truncate(0, sequences); caches.forEach((c) => c.truncate(0, { sequences })); continue; }
        const t = 1 + Math.floor(rand() * Math.min(room, 4));
        const k = randomArray(sequences.length * KV * t * D, 100 + step);
        const v = randomArray(sequences.length * KV * t * DV, 200 + step);
        history.append(storedKv(k, D, dtype), storedKv(v, DV, dtype), sequences);
        // Listed in a random order, as an Array or an Int32Array.
        caches.forEach((c, i) => c.append(k, v, { sequences: i ? Int32Array.from(sequences) : sequences }));
        appends++;
      } else if (op < 0.75) {
        const sequences = someSequences(rand, B);
        const n = Math.floor(rand() * (Math.min(...sequences.map((s) => lengths[s])) + 1));
        history.truncate(n, sequences);
        caches.forEach((c) => c.truncate(n, { sequences }));
        truncations++;
      } else {
        const [from, to] = someSequences(rand, B).length > 1 ? [0, 1].map(() => Math.floor(rand() * B)) : [0, 0];
        if (from === to) continue;
        const length = rand() < 0.5 ? undefined : Math.floor(rand() * (lengths[from] + 1));
        history.copy(from, to, length ?? lengths[from]);
        caches.forEach((c) => c.copySequence(from, to, length === undefined ? undefined : { length }));
        forks++;
      }
      const want = history.lengths();
      for (const c of caches) {
        assert.deepEqual(c.lengths, want, `lengths after step ${step}`);
        assert.equal(c.length, Math.max(...want));
      }
      if (Math.max(...want) === 0) continue;
      const queryLength = 1 + Math.floor(rand() * 3);
      const q = randomArray(B * H * queryLength * D, 300 + step);
      const ref = history.attention(q, H, queryLength);
      const [single, threads] = caches.map((c) => c.attention(q, { heads: H, queryLength }).output);
      assert.ok(maxRelativeError(single, ref) <= TOL, `step ${step}: ${maxRelativeError(single, ref)}`);
      assert.deepEqual(threads, single, `step ${step}: bit-identical for any thread count`);
      checks++;
    }
    assert.ok(checks > 80 && appends > 50 && truncations > 10 && forks > 10, `${checks} ${appends} ${truncations} ${forks}`);
    caches.forEach((c) => c.dispose());
  });

  it('a batch of prompts of different lengths decoded together equals each decoded alone', () => {
    const KV = 1, H = 2, D = 8, lengths = [7, 1, 300];
    const batched = ca.createKVCache({ batch: 3, kvHeads: KV, headDim: D, capacity: 320 });
    const alone = lengths.map(() => ca.createKVCache({ batch: 1, kvHeads: KV, headDim: D, capacity: 320 }));
    lengths.forEach((n, s) => {
      const k = randomArray(n * KV * D, 10 + s), v = randomArray(n * KV * D, 20 + s);
      batched.append(k, v, { sequences: [s] });
      alone[s].append(k, v);
    });
    for (let step = 0; step < 5; step++) {
      const k = randomArray(3 * KV * D, 30 + step), v = randomArray(3 * KV * D, 40 + step);
      batched.append(k, v);
      alone.forEach((c, s) => c.append(k.subarray(s * KV * D, (s + 1) * KV * D), v.subarray(s * KV * D, (s + 1) * KV * D)));
      const q = randomArray(3 * H * D, 50 + step);
      const got = batched.attention(q, { heads: H, queryLength: 1 }).output;
      alone.forEach((c, s) => {
        const want = c.attention(q.subarray(s * H * D, (s + 1) * H * D), { heads: H, queryLength: 1 }).output;
        assert.ok(maxRelativeError(got.subarray(s * H * D, (s + 1) * H * D), want) <= TOL, `sequence ${s} step ${step}`);
      });
    }
    assert.deepEqual(batched.lengths, Int32Array.of(12, 6, 305));
    [batched, ...alone].forEach((c) => c.dispose());
  });
});

describe('soak (issue 20)', async () => {
  const ca = await init({ build: 'single' });

  for (const dtype of /** @type {const} */ (['float32', 'bfloat16', 'int8'])) it(`${dtype}: 100 000 mixed appends, forks and truncations over a ragged and a window cache: lengths as modelled, a flat heap`, () => {
    const B = 4, D = 4;
    const rand = random(11);
    const k = randomArray(B * 3 * D, 1), v = randomArray(B * 3 * D, 2), q = randomArray(B * 2 * D, 3);
    let heap = 0, attended = 0;
    for (const layout of [{ capacity: 64 }, { capacity: 12, window: 6 }]) {
      const cache = ca.createKVCache({ batch: B, kvHeads: 1, headDim: D, ...layout, dtype });
      const lengths = new Array(B).fill(0);
      // In the window cache, a sequence may be cut by one token right after an append to it.
      const appended = new Array(B).fill(false);
      for (let op = 0; op < 50000; op++) {
        const r = rand();
        const sequences = someSequences(rand, B);
        if (r < 0.7) {
          const t = 1 + Math.floor(rand() * 3);
          if (!layout.window && sequences.some((s) => lengths[s] + t > layout.capacity)) {
            cache.truncate(0, { sequences });
            sequences.forEach((s) => { lengths[s] = 0; appended[s] = false; });
            continue;
          }
          const n = sequences.length * t * D;
          cache.append(k.subarray(0, n), v.subarray(0, n), { sequences });
          sequences.forEach((s) => { lengths[s] += t; appended[s] = true; });
        } else if (r < 0.85) {
          const [from, to] = sequences.length > 1 ? sequences : [0, 1];
          cache.copySequence(from, to);
          lengths[to] = lengths[from];
          appended[to] = appended[from];
        } else {
          const s = sequences[0];
          const n = layout.window ? (appended[s] ? Math.max(0, lengths[s] - 1) : 0) : Math.floor(rand() * (lengths[s] + 1));
          cache.truncate(n, { sequences: [s] });
          lengths[s] = n;
          appended[s] = false;
        }
        if (op % 97 === 0 && lengths.every((n, s) => n > 0 && (!layout.window || appended[s]))) {
          const { output } = cache.attention(q, { heads: 2, queryLength: 1 });
          assert.ok(output.every(Number.isFinite));
          attended++;
        }
        if (op % 1000 === 0) assert.deepEqual(cache.lengths, Int32Array.from(lengths), `op ${op}`);
        if (op === 5000 && !heap) heap = ca.memoryBytes;
      }
      assert.deepEqual(cache.lengths, Int32Array.from(lengths));
      assert.equal(cache.capacity, layout.capacity);
      cache.dispose();
    }
    assert.equal(ca.memoryBytes, heap, 'the heap did not grow after the first 5000 operations');
    assert.ok(attended > 100, `${attended}`);
  });
});

describe('the window cache (issue 20)', async () => {
  const ca = await init({ build: 'single' });

  for (const [W, C, maxChunk] of [[5, 7, 3], [5, 10, 3], [1, 3, 3], [16, 40, 8]]) {
    it(`W ${W}, capacity ${C}: many appends of chunks up to ${maxChunk} equal full-history attention with window ${W}`, () => {
      const B = 3, KV = 2, H = 4, D = 6, DV = 4;
      const rand = random(W * 100 + C);
      const cache = ca.createKVCache({ batch: B, kvHeads: KV, headDim: D, valueDim: DV, capacity: C, window: W });
      assert.equal(cache.window, W);
      const history = new History(B, KV, D, DV);
      const window = { left: W - 1 };
      for (let step = 0; step < 150; step++) {
        // Some steps append to every sequence (queried with the whole chunk), others to a few.
        const all = rand() < 0.5;
        const sequences = all ? [0, 1, 2] : someSequences(rand, B);
        const t = 1 + Math.floor(rand() * maxChunk);
        const k = randomArray(sequences.length * KV * t * D, 1000 + step);
        const v = randomArray(sequences.length * KV * t * DV, 2000 + step);
        history.append(k, v, sequences);
        cache.append(k, v, all ? undefined : { sequences });
        assert.deepEqual(cache.lengths, history.lengths());
        assert.equal(cache.capacity, C);
        const queryLength = all ? t : 1;
        const q = randomArray(B * H * queryLength * D, 3000 + step);
        const got = cache.attention(q, { heads: H, queryLength, softcap: 3 }).output;
        const ref = history.attention(q, H, queryLength, { window, softcap: 3 });
        assert.ok(maxRelativeError(got, ref) <= TOL, `step ${step}: ${maxRelativeError(got, ref)}`);
      }
      assert.ok(Math.min(...cache.lengths) > 2 * C, 'the sequences went far past the capacity');
      // Truncate where the window's keys are still held, fork, then diverge.
      const n = cache.lengths[0] - 1;
      cache.truncate(n, { sequences: [0] });
      history.truncate(n, [0]);
      cache.copySequence(0, 2);
      history.copy(0, 2, n);
      for (let step = 0; step < 20; step++) {
        const k = randomArray(B * KV * D, 4000 + step), v = randomArray(B * KV * DV, 5000 + step);
        cache.append(k, v);
        history.append(k, v, [0, 1, 2]);
        const q = randomArray(B * H * D, 6000 + step);
        const ref = history.attention(q, H, 1, { window });
        assert.ok(maxRelativeError(cache.attention(q, { heads: H, queryLength: 1 }).output, ref) <= TOL, `fork ${step}`);
      }
      cache.reset();
      assert.deepEqual(cache.lengths, new Int32Array(B));
      cache.dispose();
    });
  }

  it('GroupedQueryAttention with slidingWindow under useCache: prompt, chunks and single tokens equal the no-cache forward', () => {
    // Past the first cache's 256 rows: the window's rows move to the front, several times.
    const rand = random(3);
    const long = [7, ...Array.from({ length: 400 }, () => (rand() < 0.7 ? 1 : 2 + Math.floor(rand() * 4)))];
    for (const [W, chunks] of [[4, long], [1, [3, 1, 2, 1, 1]], [9, [1, 1, 30, 1, 1, 2]], [200, [...long, 250, 1, 1]]]) {
      ca.manualSeed(W);
      const gqa = new ca.GroupedQueryAttention(16, 16, 4, 2, { contextLength: 4096, slidingWindow: W }).eval();
      const T = chunks.reduce((a, b) => a + b), B = 2;
      const x = randomArray(B * T * 16, 70 + W);
      const full = gqa.forward(x, [B, T, 16]);
      const got = new Float32Array(B * T * 16);
      let at = 0;
      for (const t of chunks) {
        const part = new Float32Array(B * t * 16);
        for (let b = 0; b < B; b++) part.set(x.subarray((b * T + at) * 16, (b * T + at + t) * 16), b * t * 16);
        const y = gqa.forward(part, [B, t, 16], { useCache: true });
        for (let b = 0; b < B; b++) got.set(y.subarray(b * t * 16, (b + 1) * t * 16), (b * T + at) * 16);
        at += t;
        assert.equal(gqa.cacheLength, at);
      }
      assert.ok(maxRelativeError(got, full) <= TOL, `W ${W}: ${maxRelativeError(got, full)}`);
      gqa.resetCache();
    }
  });

  // The heap stays flat here too, but at this size a check of it could not
  // fail (100 000 tokens of 2 KV heads of 2 values fit the heap an earlier
  // test left): the next test checks it where keeping every token could not fit.
  it('GroupedQueryAttention generating 100 000 tokens with slidingWindow under useCache: every output as one forward\'s', () => {
    const W = 8, dIn = 4;
    ca.manualSeed(5);
    const gqa = new ca.GroupedQueryAttention(dIn, dIn, 2, 1, { contextLength: 200000, slidingWindow: W }).eval();
    const N = 100000;
    const x = randomArray(N * dIn, 9);
    const got = new Float32Array(N * dIn);
    for (let t = 0; t < N; t++) {
      got.set(gqa.forward(x.subarray(t * dIn, (t + 1) * dIn), [1, dIn], { useCache: true }), t * dIn);
    }
    assert.equal(gqa.cacheLength, N);
    // Every token against one no-cache forward over all of them (the kernel
    // skips the keys outside the window: O(N · W) work); the tokens right
    // after each move of the window's rows to the front included.
    const want = gqa.forward(x, [N, dIn]);
    assert.ok(maxRelativeError(got, want) <= TOL, `${maxRelativeError(got, want)}`);
    gqa.resetCache();
  });

  it('GroupedQueryAttention generating 20 000 tokens with slidingWindow under useCache: a flat heap where keeping every token could not fit', async () => {
    // A fresh process (a fresh heap) and 2 KV heads of 128 values:
    // 20 000 tokens' keys and values are 39 MiB, more than the whole heap
    // after the first 1000, so a cache that kept them all would grow it.
    const code = `
      import { init } from 'causal-attention';
      const ca = await init({ build: 'single' });
      const [N, W, dIn, dOut, heads, groups] = [20000, 16, 4, 512, 4, 2];
      ca.manualSeed(7);
      const gqa = new ca.GroupedQueryAttention(dIn, dOut, heads, groups, { contextLength: N, slidingWindow: W }).eval();
      const x = ca.rand([N, dIn]);
      const got = new Float32Array(N * dOut);
      let heapAt1000 = 0;
      for (let t = 0; t < N; t++) {
        got.set(gqa.forward(x.subarray(t * dIn, (t + 1) * dIn), [1, dIn], { useCache: true }), t * dOut);
        if (t === 999) heapAt1000 = ca.memoryBytes;
      }
      const heapEnd = ca.memoryBytes;
      const length = gqa.cacheLength;
      const want = gqa.forward(x, [N, dIn]);
      let error = 0;
      for (let i = 0; i < want.length; i++) error = Math.max(error, Math.abs(got[i] - want[i]) / (1 + Math.abs(want[i])));
      const everyToken = N * groups * (dOut / heads) * 2 * 4;
      console.log(JSON.stringify({ heapAt1000, heapEnd, length, error, everyToken }));
    `;
    const r = await nodeResult(['--input-type=module', '-e', code], { cwd: new URL('../..', import.meta.url) });
    assert.equal(r.length, 20000);
    assert.ok(r.everyToken > r.heapAt1000,
      `the check can fail: every token's keys and values (${r.everyToken} bytes) exceed the heap (${r.heapAt1000})`);
    assert.equal(r.heapEnd, r.heapAt1000, 'the heap stays flat from token 1000 to 20 000');
    assert.ok(r.error <= TOL, `every token's output as one no-cache forward's: ${r.error}`);
  });
});
