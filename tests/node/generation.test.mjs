// Generation: grouped-query attention (kvHeads), the resident KV cache and
// the modules' useCache, against the plain-JS reference and against the
// one-shot call they must equal. Tolerance |a - ref| <= 1e-5 (1 + |ref|)
// elementwise, as everywhere; "the same call" comparisons are bit for bit.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { init } from 'causal-attention';
import {
  maxRelativeError, randomArray, referenceAttention, ropeInverseFrequencies,
} from './js-reference.mjs';
import { linearJs } from './helpers.mjs';

const TOL = 1e-5;
const builds = [
  ['single', { build: 'single' }],
  ['threads', { build: 'threads', threads: 2 }],
];

/** Rows [from, to) of every head of a [heads, length, width] tensor, as [heads, to - from, width]. */
function tokenRows(a, heads, length, width, from, to) {
  const out = new Float32Array(heads * (to - from) * width);
  for (let h = 0; h < heads; h++) {
    out.set(a.subarray((h * length + from) * width, (h * length + to) * width), h * (to - from) * width);
  }
  return out;
}

/** [heads, T, width] with every KV head repeated `group` times (torch.repeat_interleave). */
function repeatHeads(a, heads, group) {
  const size = a.length / heads;
  const out = new Float32Array(a.length * group);
  for (let h = 0; h < heads; h++) {
    for (let g = 0; g < group; g++) out.set(a.subarray(h * size, (h + 1) * size), (h * group + g) * size);
  }
  return out;
}

for (const [name, initOptions] of builds) {
  describe(`grouped-query attention (${name} build)`, async () => {
    const ca = await init(initOptions);

    it('kvHeads with group sizes 1, 2, 4, 8 and MQA: the JS reference, and attention on repeated KV heads', () => {
      let cases = 0;
      for (let iter = 0; iter < 40; iter++) {
        const kvHeads = iter % 5 === 4 ? 1 : 1 + (iter % 2);
        const group = iter % 5 === 4 ? 3 + (iter % 4) : [1, 2, 4, 8][iter % 4];
        const o = {
          batch: 1 + (iter % 2), heads: kvHeads * group, kvHeads,
          queryLength: iter % 3 ? 1 + (iter % 4) : 5 + iter,
          keyLength: 1 + ((iter * 97) % 700), headDim: [1, 3, 4, 8, 16, 33][iter % 6],
          causal: ['bottom-right', true, false][iter % 3],
        };
        if (iter % 4 === 1) Object.assign(o, { training: true, dropout: 0.25, seed: iter });
        if (iter % 7 === 2) o.returnWeights = true;
        const dims = o.batch * kvHeads * o.keyLength * o.headDim;
        const q = randomArray(o.batch * o.heads * o.queryLength * o.headDim, 10 + iter);
        const k = randomArray(dims, 20 + iter);
        const v = randomArray(dims, 30 + iter);
        const got = ca.attention(q, k, v, o);
        const ref = referenceAttention(q, k, v, o);
        const tag = JSON.stringify(o);
        assert.ok(maxRelativeError(got.output, ref.output) <= TOL, `output ${tag}`);
        if (o.returnWeights) assert.ok(maxRelativeError(got.weights, ref.weights) <= TOL, `weights ${tag}`);
        const repeated = ca.attention(q, repeatHeads(k, o.batch * kvHeads, group),
          repeatHeads(v, o.batch * kvHeads, group), { ...o, kvHeads: undefined });
        assert.ok(maxRelativeError(got.output, repeated.output) <= TOL, `repeated ${tag}`);
        cases++;
      }
      assert.equal(cases, 40);
    });
  });

  describe(`KV cache (${name} build)`, async () => {
    const ca = await init(initOptions);
    const B = 2, H = 8, KV = 2, D = 12, DV = 10;

    it('decode steps after appends of varying lengths equal the last rows of one full causal call', () => {
      const cache = ca.createKVCache({ batch: B, kvHeads: KV, headDim: D, valueDim: DV, capacity: 1200 });
      const total = 1100;
      const kAll = randomArray(B * KV * total * D, 1);
      const vAll = randomArray(B * KV * total * DV, 2);
      const qAll = randomArray(B * H * total * D, 3);
      const full = ca.attention(qAll, kAll, vAll, {
        batch: B, heads: H, kvHeads: KV, queryLength: total, headDim: D, valueDim: DV,
      }).output;
      let at = 0;
      let steps = 0;
      for (const t of [1, 37, 1, 1, 300, 5, 1, 256, 2, 1, 300, 1, 194]) {
        cache.append(tokenRows(kAll, B * KV, total, D, at, at + t), tokenRows(vAll, B * KV, total, DV, at, at + t));
        at += t;
        assert.equal(cache.length, at);
        // This append's queries (a prompt when t > 1) against everything cached.
        const q = tokenRows(qAll, B * H, total, D, at - t, at);
        const { output } = cache.attention(q, { heads: H, queryLength: t });
        const want = tokenRows(full, B * H, total, DV, at - t, at);
        assert.ok(maxRelativeError(output, want) <= TOL, `after ${at} tokens`);
        steps++;
      }
      assert.equal(at, total);
      assert.equal(steps, 13);
      // And against the JS reference on the last step's single token.
      const q = tokenRows(qAll, B * H, total, D, total - 1, total);
      const ref = referenceAttention(q, kAll, vAll, {
        batch: B, heads: H, kvHeads: KV, queryLength: 1, keyLength: total, headDim: D, valueDim: DV,
        causal: 'bottom-right',
      });
      assert.ok(maxRelativeError(cache.attention(q, { heads: H, queryLength: 1 }).output, ref.output) <= TOL);
      cache.dispose();
    });

    it('every option as the one-shot call on the same keys: alignments, dropout, scale, weights, out', () => {
      const L = 700;
      const cache = ca.createKVCache({ batch: B, kvHeads: KV, headDim: D, valueDim: DV, capacity: 1000 });
      const k = randomArray(B * KV * L * D, 4);
      const v = randomArray(B * KV * L * DV, 5);
      cache.append(k, v);
      const variants = [
        {}, { causal: 'top-left' }, { causal: false }, { causal: true, maskStrategy: 'renormalize' },
        { scale: -0.4 }, { training: true, dropout: 0.3, seed: 77n }, { returnWeights: true },
        { returnWeights: true, training: true, dropout: 0.5, seed: 5 },
        { returnLogSumExp: true }, { returnLogSumExp: true, returnWeights: true, causal: 'top-left' },
        { returnLogSumExp: true, training: true, dropout: 0.3, seed: 9 },
      ];
      for (const tq of [1, 3]) {
        const q = randomArray(B * H * tq * D, 6 + tq);
        for (const extra of variants) {
          const options = { heads: H, queryLength: tq, ...extra };
          const got = cache.attention(q, options);
          const oneShot = ca.attention(q, k, v, {
            batch: B, kvHeads: KV, keyLength: L, headDim: D, valueDim: DV, causal: 'bottom-right', ...options,
          });
          assert.deepEqual(got, oneShot, JSON.stringify(options, (_, x) => (typeof x === 'bigint' ? `${x}` : x)));
        }
        // Into caller-supplied arrays.
        const out = new Float32Array(B * H * tq * DV);
        const weightsOut = new Float32Array(B * H * tq * L);
        const r = cache.attention(q, { heads: H, queryLength: tq, returnWeights: true, out, weightsOut });
        assert.equal(r.output, out);
        assert.equal(r.weights, weightsOut);
        assert.deepEqual(out, cache.attention(q, { heads: H, queryLength: tq, returnWeights: true }).output);
      }
      cache.dispose();
    });

    it('returnLogSumExp: one decode split over two caches merges into the one-cache result', () => {
      // Keys [0, 300) in one cache, [300, 700) in another: each gives its
      // output and log-sum-exp per row; weighted by e^(lse - max) they are
      // the output over all 700 keys.
      const L = 700;
      const split = 300;
      const k = randomArray(B * KV * L * D, 14);
      const v = randomArray(B * KV * L * DV, 15);
      const layout = { batch: B, kvHeads: KV, headDim: D, valueDim: DV, capacity: L };
      const whole = ca.createKVCache(layout).append(k, v);
      const first = ca.createKVCache(layout).append(tokenRows(k, B * KV, L, D, 0, split),
        tokenRows(v, B * KV, L, DV, 0, split));
      const second = ca.createKVCache(layout).append(tokenRows(k, B * KV, L, D, split, L),
        tokenRows(v, B * KV, L, DV, split, L));
      const q = randomArray(B * H * D, 16);
      const options = { heads: H, queryLength: 1, returnLogSumExp: true };
      const all = whole.attention(q, options);
      const [a, b] = [first.attention(q, options), second.attention(q, options)];
      assert.equal(all.logSumExp.length, B * H);
      const merged = new Float32Array(B * H * DV);
      const lse = new Float32Array(B * H);
      for (let row = 0; row < B * H; row++) {
        const m = Math.max(a.logSumExp[row], b.logSumExp[row]);
        const [wa, wb] = [Math.exp(a.logSumExp[row] - m), Math.exp(b.logSumExp[row] - m)];
        for (let d = 0; d < DV; d++) {
          merged[row * DV + d] = (wa * a.output[row * DV + d] + wb * b.output[row * DV + d]) / (wa + wb);
        }
        lse[row] = m + Math.log(wa + wb);
      }
      assert.ok(maxRelativeError(merged, all.output) <= TOL, `${maxRelativeError(merged, all.output)}`);
      assert.ok(maxRelativeError(lse, all.logSumExp) <= TOL);
      for (const c of [whole, first, second]) c.dispose();
    });

    it('truncate and reset: what is appended after them replaces the old tail', () => {
      const cache = ca.createKVCache({ batch: 1, kvHeads: 1, headDim: 4, capacity: 600 });
      const k = randomArray(500 * 4, 8);
      const v = randomArray(500 * 4, 9);
      const q = randomArray(3 * 4, 10);
      cache.append(k, v);
      assert.equal(cache.truncate(300), cache);
      assert.equal(cache.length, 300);
      const k2 = randomArray(150 * 4, 11);
      const v2 = randomArray(150 * 4, 12);
      cache.append(k2, v2);
      const kk = new Float32Array([...k.subarray(0, 1200), ...k2]);
      const vv = new Float32Array([...v.subarray(0, 1200), ...v2]);
      const shape = { batch: 1, heads: 3, kvHeads: 1, queryLength: 1, keyLength: 450, headDim: 4 };
      assert.deepEqual(cache.attention(q, { heads: 3, queryLength: 1 }),
        ca.attention(q, kk, vv, { ...shape, causal: 'bottom-right' }));
      assert.ok(maxRelativeError(cache.attention(q, { heads: 3, queryLength: 1 }).output,
        referenceAttention(q, kk, vv, { ...shape, causal: 'bottom-right' }).output) <= TOL);
      cache.reset();
      assert.equal(cache.length, 0);
      assert.throws(() => cache.attention(q, { heads: 3, queryLength: 1 }), RangeError);
      cache.append(k2.subarray(0, 8), v2.subarray(0, 8));
      assert.deepEqual(cache.attention(q, { heads: 3, queryLength: 1 }),
        ca.attention(q, k2.subarray(0, 8), v2.subarray(0, 8), { ...shape, keyLength: 2, causal: 'bottom-right' }));
      cache.dispose();
    });

    it('appending past capacity is a RangeError naming both numbers, and changes nothing', () => {
      const cache = ca.createKVCache({ batch: 1, kvHeads: 2, headDim: 3, capacity: 10 });
      const q = randomArray(2 * 3, 13);
      cache.append(randomArray(2 * 8 * 3, 14), randomArray(2 * 8 * 3, 15));
      const before = cache.attention(q, { heads: 2, queryLength: 1 });
      assert.throws(() => cache.append(randomArray(2 * 3 * 3, 16), randomArray(2 * 3 * 3, 17)), {
        name: 'RangeError',
        message: "append of 3 tokens would hold 11, past the cache's capacity 10 (it holds 8)",
      });
      assert.equal(cache.length, 8);
      assert.deepEqual(cache.attention(q, { heads: 2, queryLength: 1 }), before);
      cache.append(randomArray(2 * 2 * 3, 18), randomArray(2 * 2 * 3, 19)); // exactly full
      assert.equal(cache.length, 10);
      cache.dispose();
    });

    it('dispose: harmless twice, every later method and length a TypeError, the layout kept, its memory reused', () => {
      const layout = { batch: 1, kvHeads: 4, headDim: 64, capacity: 4096 }; // 8 MiB
      const first = ca.createKVCache(layout);
      first.dispose();
      const bytes = ca.memoryBytes;
      for (let i = 0; i < 50; i++) {
        const cache = ca.createKVCache(layout);
        cache.append(randomArray(4 * 64, i), randomArray(4 * 64, i + 1));
        cache.dispose();
        cache.dispose();
        assert.equal(cache.disposed, true);
        assert.throws(() => cache.length, { name: 'TypeError', message: /^this KV cache has been disposed/ });
        assert.throws(() => cache.append(new Float32Array(256), new Float32Array(256)), TypeError);
        assert.throws(() => cache.attention(new Float32Array(64), { heads: 1, queryLength: 1 }), TypeError);
        assert.throws(() => cache.truncate(0), TypeError);
        assert.throws(() => cache.reset(), TypeError);
        // The layout it was created with still answers (index.d.ts, dispose).
        assert.deepEqual([cache.batch, cache.kvHeads, cache.headDim, cache.valueDim, cache.capacity],
          [1, 4, 64, 64, 4096]);
      }
      assert.equal(ca.memoryBytes, bytes, 'the same block is reused after every dispose');
      // What `using` calls at the end of its block (Node 20 has no `using` yet).
      const scoped = ca.createKVCache(layout);
      scoped[Symbol.dispose]();
      assert.throws(() => scoped.length, TypeError);
      assert.equal(ca.memoryBytes, bytes);
    });
  });
}

describe('KV cache: bit-identical for any thread count and in both builds', () => {
  it('Llama- and GPT-2-shaped decode over several chunks, with dropout', async () => {
    const runtimes = [await init({ build: 'single' })];
    for (const threads of [1, 2, 4]) runtimes.push(await init({ build: 'threads', threads }));
    assert.deepEqual(runtimes.map((ca) => ca.threads), [1, 1, 2, 4]);
    for (const [H, KV, D, L] of [[16, 4, 32, 2500], [6, 6, 16, 1800], [8, 1, 8, 3000]]) {
      const k = randomArray(KV * L * D, H);
      const v = randomArray(KV * L * D, H + 1);
      const q = randomArray(H * 2 * D, H + 2);
      const results = runtimes.map((ca) => {
        const cache = ca.createKVCache({ batch: 1, kvHeads: KV, headDim: D, capacity: L });
        cache.append(k, v);
        const r = [1, 2].map((tq) => cache.attention(q.subarray(0, H * tq * D), {
          heads: H, queryLength: tq, training: true, dropout: 0.1, seed: 3,
        }).output);
        cache.dispose();
        return r;
      });
      for (const r of results.slice(1)) assert.deepEqual(r, results[0], `H ${H} KV ${KV} L ${L}`);
    }
  });
});

// ---------------------------------------------------------------------------
// Modules

/**
 * The book's compute_rope_params (float32 steps, as PyTorch computes them),
 * with its freq_config (Llama 3.1 / 3.2) when given, and apply_rope, on rows
 * [B, T, heads, hd] in place; positions from `start`.
 */
function applyRopeJs(x, B, T, heads, hd, base, freqConfig = null, start = 0) {
  const f = Math.fround;
  const half = hd / 2;
  const inv = ropeInverseFrequencies(base, hd, freqConfig);
  for (let b = 0; b < B; b++) for (let t = start; t < start + T; t++) for (let h = 0; h < heads; h++) {
    const row = ((b * T + t - start) * heads + h) * hd;
    for (let i = 0; i < half; i++) {
      const angle = f(t * inv[i]);
      const c = f(Math.cos(angle));
      const s = f(Math.sin(angle));
      const x1 = x[row + i];
      const x2 = x[row + i + half];
      x[row + i] = x1 * c - x2 * s;
      x[row + i + half] = x2 * c + x1 * s;
    }
  }
}

/** [B, T, heads, hd] -> [B, heads, T, hd] (the book's .transpose(1, 2)); `back` inverts. */
function transposeHeads(a, B, T, heads, hd, back = false) {
  const out = new Float64Array(a.length);
  for (let b = 0; b < B; b++) for (let t = 0; t < T; t++) for (let h = 0; h < heads; h++) {
    const bthd = ((b * T + t) * heads + h) * hd;
    const bhtd = ((b * heads + h) * T + t) * hd;
    for (let c = 0; c < hd; c++) {
      if (back) out[bthd + c] = a[bhtd + c];
      else out[bhtd + c] = a[bthd + c];
    }
  }
  return out;
}

/** The book's GroupedQueryAttention.forward on the module's state dict, in plain JS. */
function groupedQueryAttentionJs(m, x, B, T) {
  const sd = m.stateDict();
  const H = m.numHeads, KV = m.numKVGroups, hd = m.headDim, dOut = m.dOut;
  const q = linearJs(x, B * T, m.dIn, dOut, sd['W_query.weight']);
  const k = linearJs(x, B * T, m.dIn, KV * hd, sd['W_key.weight']);
  const v = linearJs(x, B * T, m.dIn, KV * hd, sd['W_value.weight']);
  applyRopeJs(q, B, T, H, hd, m.ropeBase, m.freqConfig);
  applyRopeJs(k, B, T, KV, hd, m.ropeBase, m.freqConfig);
  const { output } = referenceAttention(transposeHeads(q, B, T, H, hd), transposeHeads(k, B, T, KV, hd),
    transposeHeads(v, B, T, KV, hd), { batch: B, heads: H, kvHeads: KV, queryLength: T, headDim: hd });
  const merged = transposeHeads(output, B, T, H, hd, true);
  return linearJs(merged, B * T, dOut, dOut, sd['out_proj.weight']);
}

/** Runs `module` over x [B, total, dIn]: a prompt of `prompt` tokens, then one token per call. */
function promptThenTokens(module, x, B, total, prompt) {
  const dIn = module.dIn;
  const dOut = module.outputDim;
  const y = new Float32Array(B * total * dOut);
  for (let t0 = 0; t0 < total;) {
    const t = t0 === 0 ? prompt : 1;
    const xs = tokenRows(x, B, total, dIn, t0, t0 + t);
    const ys = module.forward(xs, [B, t, dIn], { useCache: true });
    for (let b = 0; b < B; b++) y.set(ys.subarray(b * t * dOut, (b + 1) * t * dOut), (b * total + t0) * dOut);
    t0 += t;
    assert.equal(module.cacheLength, t0);
  }
  return y;
}

describe('modules with a KV cache', async () => {
  const ca = await init({ build: 'threads', threads: 2 });

  it("MultiHeadAttention: a prompt, then token by token, equals one full forward (the book's ch04/03)", () => {
    ca.manualSeed(123);
    const m = new ca.MultiHeadAttention(16, 24, 600, 0.1, 4, true).eval();
    const B = 2, total = 520;
    const x = randomArray(B * total * 16, 40);
    const full = m.forward(x, [B, total, 16]);
    const steps = promptThenTokens(m, x, B, total, 100);
    assert.ok(maxRelativeError(steps, full) <= TOL, String(maxRelativeError(steps, full)));
    // Past its first capacity (256 tokens) the cache grew, keeping its rows.
    assert.equal(m.cacheLength, total);
    // After resetCache the positions start over.
    assert.equal(m.resetCache(), m);
    assert.equal(m.cacheLength, 0);
    const x30 = tokenRows(x, B, total, 16, 0, 30);
    assert.ok(maxRelativeError(promptThenTokens(m, x30, B, 30, 7), m.forward(x30, [B, 30, 16])) <= TOL);
    m.dispose();
    m.dispose();
    assert.equal(m.cacheLength, 0);
  });

  it('GroupedQueryAttention matches a plain-JS port of the book class (RoPE in float32), MQA included', () => {
    ca.manualSeed(7);
    for (const [dIn, dOut, H, KV, base, T] of [[8, 8, 4, 2, 10000, 9], [12, 32, 8, 1, 500000, 40],
      [6, 12, 2, 2, 10000, 70], [16, 64, 8, 2, 500000, 130]]) {
      const m = new ca.GroupedQueryAttention(dIn, dOut, H, KV, { contextLength: 256, ropeBase: base });
      const B = 2;
      const x = randomArray(B * T * dIn, dIn + T);
      const got = m.forward(x, [B, T, dIn]);
      const want = groupedQueryAttentionJs(m, x, B, T);
      assert.ok(maxRelativeError(got, want) <= TOL, `(${dIn}, ${dOut}, ${H}, ${KV}): ${maxRelativeError(got, want)}`);
    }
  });

  it("GroupedQueryAttention with Llama 3.2's freqConfig: the port of compute_rope_params' freq_config, at far positions too", () => {
    ca.manualSeed(11);
    // head size 16, base 500 000: wavelengths below 2048 (kept), one between
    // 2048 and 8192 (interpolated) and three above (divided by 32).
    const freqConfig = { factor: 32, lowFreqFactor: 1, highFreqFactor: 4, originalContextLength: 8192 };
    const m = new ca.GroupedQueryAttention(16, 64, 4, 2, { contextLength: 8192, ropeBase: 500000, freqConfig });
    assert.deepEqual(m.freqConfig, freqConfig);
    assert.ok(Object.isFrozen(m.freqConfig));
    const B = 2, T = 50;
    const x = randomArray(B * T * 16, 45);
    const got = m.forward(x, [B, T, 16]);
    const want = groupedQueryAttentionJs(m, x, B, T);
    assert.ok(maxRelativeError(got, want) <= TOL, String(maxRelativeError(got, want)));
    // Far positions magnify an error in a frequency 6000-fold in the angle
    // position · inv_freq: the rotated queries of tokens 6000..6002 (cached
    // after 6000 tokens) against the port (without the adjustment the angles
    // there differ by up to 1.6 rad).
    const far = new ca.GroupedQueryAttention(16, 64, 4, 2, { contextLength: 8192, ropeBase: 500000, freqConfig });
    const plain = new ca.GroupedQueryAttention(16, 64, 4, 2, { contextLength: 8192, ropeBase: 500000 });
    plain.loadStateDict(far.stateDict());
    const prompt = randomArray(6000 * 16, 46);
    const tail = randomArray(3 * 16, 47);
    const rotated = (module) => {
      module.forward(prompt, [1, 6000, 16], { useCache: true });
      return module.forward(tail, [1, 3, 16], { useCache: true, returnQKV: true }).queries;
    };
    const q = linearJs(tail, 3, 16, 64, far.stateDict()['W_query.weight']);
    applyRopeJs(q, 1, 3, 4, 16, 500000, freqConfig, 6000);
    const wantQ = transposeHeads(q, 1, 3, 4, 16);
    const gotQ = rotated(far);
    assert.ok(maxRelativeError(gotQ, wantQ) <= 2e-5, `scaled: ${maxRelativeError(gotQ, wantQ)}`);
    // Without the adjustment the same weights rotate differently.
    assert.ok(maxRelativeError(rotated(plain), wantQ) > 1e-2);
    far.dispose();
    plain.dispose();
  });

  it('GroupedQueryAttention: a prompt, then token by token, equals one full forward (RoPE positions continue)', () => {
    ca.manualSeed(3);
    const m = new ca.GroupedQueryAttention(32, 64, 8, 2, { contextLength: 1024, ropeBase: 500000 });
    const B = 1, total = 400;
    const x = randomArray(B * total * 32, 41);
    const full = m.forward(x, [B, total, 32]);
    const steps = promptThenTokens(m, x, B, total, 33);
    assert.ok(maxRelativeError(steps, full) <= TOL, String(maxRelativeError(steps, full)));
    // One more token with everything returned: weights over all 401 cached
    // keys (rows sum to 1), this call's rotated queries and its KV heads.
    const r = m.forward(randomArray(32, 44), [1, 1, 32], { useCache: true, returnWeights: true, returnQKV: true });
    assert.equal(r.weights.length, 8 * 401);
    for (let h = 0; h < 8; h++) {
      const sum = r.weights.subarray(h * 401, (h + 1) * 401).reduce((a, w) => a + w, 0);
      assert.ok(Math.abs(sum - 1) < 1e-5, `head ${h} sums to ${sum}`);
    }
    assert.deepEqual([r.queries.length, r.keys.length, r.values.length], [8 * 8, 2 * 8, 2 * 8]);
    m.resetCache();
  });

  it("GroupedQueryAttention initialises in the book's __init__ order and loads state dicts 1:1", () => {
    ca.manualSeed(123);
    const m = new ca.GroupedQueryAttention(6, 8, 4, 2);
    assert.equal(m.contextLength, 4096);
    assert.equal(m.ropeBase, 10000);
    assert.equal(m.groupSize, 2);
    assert.equal(m.headDim, 2);
    ca.manualSeed(123);
    // W_key, W_value (2 KV heads of size 2), W_query, out_proj; no biases.
    const order = [['W_key.weight', 4], ['W_value.weight', 4], ['W_query.weight', 8], ['out_proj.weight', 8]];
    const expected = Object.fromEntries(order.map(([key, out]) => {
      const l = new ca.Linear(key === 'out_proj.weight' ? 8 : 6, out, false);
      return [key, l.weight];
    }));
    const sd = m.stateDict();
    assert.deepEqual(Object.keys(sd), order.map(([key]) => key));
    assert.deepEqual(sd, expected);
    // A state dict from the book's class (here: nested arrays, as tolist()) loads as it is.
    const other = new ca.GroupedQueryAttention(6, 8, 4, 2);
    const tolist = (w, cols) => Array.from({ length: w.length / cols }, (_, r) => Array.from(w.subarray(r * cols, (r + 1) * cols)));
    other.loadStateDict(Object.fromEntries(Object.entries(sd).map(([key, w]) => [key, tolist(w, key === 'out_proj.weight' ? 8 : 6)])));
    const x = randomArray(2 * 5 * 6, 42);
    assert.deepEqual(other.forward(x, [2, 5, 6]), m.forward(x, [2, 5, 6]));
  });

  it('useCache misuse is a RangeError that leaves the cache as it was', () => {
    ca.manualSeed(1);
    const m = new ca.GroupedQueryAttention(4, 8, 4, 2, { contextLength: 10 });
    const x = randomArray(2 * 10 * 4, 43);
    m.forward(x.subarray(0, 2 * 6 * 4), [2, 6, 4], { useCache: true });
    assert.throws(() => m.forward(x.subarray(0, 6 * 4), [1, 6, 4], { useCache: true }), {
      name: 'RangeError', message: 'useCache: the cache holds sequences of batch 2, got batch 1; call resetCache() first',
    });
    assert.throws(() => m.forward(x.subarray(0, 2 * 5 * 4), [2, 5, 4], { useCache: true }), {
      name: 'RangeError', message: 'useCache: the cache would hold 11 tokens, past contextLength 10 (it holds 6); call resetCache() first',
    });
    assert.equal(m.cacheLength, 6);
    m.forward(x.subarray(0, 2 * 4 * 4), [2, 4, 4], { useCache: true });
    assert.equal(m.cacheLength, 10);
    m.resetCache();
  });
});

describe('generation in worker mode', () => {
  it('a KV cache and a module cache work through the worker like locally', async () => {
    const local = await init({ build: 'single' });
    const remote = await init({ worker: true, build: 'single' });
    try {
      const k = randomArray(2 * 30 * 8, 60);
      const v = randomArray(2 * 30 * 8, 61);
      const q = randomArray(6 * 8, 62);
      const layout = { batch: 1, kvHeads: 2, headDim: 8, capacity: 40 };
      const mine = local.createKVCache(layout).append(k, v);
      const cache = await remote.createKVCache(layout);
      assert.equal(await cache.append(k, v), cache);
      assert.equal(cache.length, 30);
      assert.deepEqual(await cache.attention(q, { heads: 6, queryLength: 1 }), mine.attention(q, { heads: 6, queryLength: 1 }));
      await assert.rejects(cache.append(randomArray(2 * 11 * 8, 63), randomArray(2 * 11 * 8, 64)), RangeError);
      assert.equal(cache.length, 30);
      await cache.dispose();
      await assert.rejects(cache.truncate(0), TypeError);
      mine.dispose();

      local.manualSeed(9);
      await remote.manualSeed(9);
      const gqaLocal = new local.GroupedQueryAttention(8, 16, 4, 2);
      const gqa = await new remote.GroupedQueryAttention(8, 16, 4, 2);
      const x = randomArray(5 * 8, 65);
      assert.deepEqual(await gqa.forward(x, [5, 8], { useCache: true }), gqaLocal.forward(x, [5, 8], { useCache: true }));
      assert.equal(gqa.cacheLength, 5);
      await gqa.resetCache();
      assert.equal(gqa.cacheLength, 0);
      gqaLocal.dispose();
    } finally {
      await remote.dispose();
    }
  });
});
