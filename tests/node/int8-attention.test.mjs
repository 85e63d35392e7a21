// precision: 'int8' (src/attention/attention.h's Precision::kInt8) through the
// public API against the float64 reference (js-reference.mjs) with the
// bound the declarations state: largest |out − ref| ≤ 1e-3 × the reference
// output's largest |value| on N(0, 1) inputs, keys with large per-channel
// offsets and keys with outlier channels ×50 (measured up to 4.5e-4). Every option
// of ca.attention (masks, windows, keyLengths, softcap, sinks, GQA, both
// layouts, odd shapes, the weights it returns), a KV cache's attention
// (float32 and int8 caches), the modules' forward, and the refusals of what
// a backward would need. The checker must reject a result past the bound.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { init } from 'causal-attention';
import { errorOfLargest, referenceAttention64, storedKv } from './js-reference.mjs';

const BOUND = 1e-3;

/** N(0, 1) values from a seeded LCG (Box–Muller). */
function normal(n, seed) {
  let s = seed >>> 0;
  const u = () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return (s + 0.5) / 2 ** 32;
  };
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.sqrt(-2 * Math.log(u())) * Math.cos(2 * Math.PI * u());
  return out;
}

function assertWithin(got, want, bound, what) {
  const e = errorOfLargest(got, want);
  assert.ok(e <= bound, `${what}: error ${e} of the largest |ref| > ${bound}`);
}

/** q, k, v of N(0, 1) values; keys with a per-channel offset in [-20, 20] or four channels ×50. */
function data(o, keys = 'normal', seed = 1) {
  const kvH = o.kvHeads ?? o.heads, tk = o.keyLength ?? o.queryLength, dv = o.valueDim ?? o.headDim;
  const q = normal(o.batch * o.heads * o.queryLength * o.headDim, seed);
  const k = normal(o.batch * kvH * tk * o.headDim, seed + 1);
  const v = normal(o.batch * kvH * tk * dv, seed + 2);
  const offsets = normal(o.headDim, seed + 3).map((x) => 8 * x);
  // Channel c of a key: the last axis in both layouts.
  for (let i = 0; i < k.length; i++) {
    const c = i % o.headDim;
    if (keys === 'offset') k[i] += Math.max(-20, Math.min(20, offsets[c]));
    if (keys === 'outliers' && c % 17 === 3 && c < 68) k[i] *= 50;
  }
  return { q, k, v };
}

const base = { batch: 2, heads: 4, queryLength: 37, headDim: 24 };
const CASES = [
  ['causal, T not a multiple of the block, d 24', {}],
  ['d 64, T 64, GQA', { headDim: 64, queryLength: 64, kvHeads: 2 }],
  ['not causal, dv 40', { causal: false, valueDim: 40 }],
  ['bottom-right, fewer queries than keys (a prefill chunk)', { causal: 'bottom-right', queryLength: 9, keyLength: 70, headDim: 32 }],
  ['T = 1 (a decode step), multi-query', { causal: 'bottom-right', queryLength: 1, keyLength: 300, headDim: 64, kvHeads: 1 }],
  ['bshd layout', { layout: 'bshd', headDim: 32 }],
  ['window', { window: { left: 5 }, headDim: 16 }],
  ['keyLengths', { causal: false, keyLengths: [20, 37], headDim: 48 }],
  ['softcap', { softcap: 2, headDim: 32 }],
  ['sinks', { sinks: new Float32Array([0.5, -1, 2, 0]), headDim: 32 }],
  ['boolean mask', { causal: false, mask: new Uint8Array(37 * 37).map((_, i) => (i * 7) % 5 !== 0), maskShape: [37, 37] }],
  ['additive mask', { mask: normal(4 * 37 * 37, 9), maskShape: [4, 37, 37], headDim: 32 }],
  ['renormalize', { maskStrategy: 'renormalize', headDim: 64 }],
  ['odd sizes: d 3, dv 5', { headDim: 3, valueDim: 5, queryLength: 5, keyLength: 9, causal: 'bottom-right' }],
];

describe('precision: int8', () => {
  let ca;
  before(async () => { ca = await init({ build: 'single' }); });
  after(() => ca?.dispose?.());

  for (const [name, extra] of CASES) {
    for (const keys of ['normal', 'offset', 'outliers']) {
      it(`${name}, ${keys} keys: within the bound of the float64 reference`, () => {
        const o = { ...base, ...extra };
        const { q, k, v } = data(o, keys);
        const want = referenceAttention64(q, k, v, o);
        const got = ca.attention(q, k, v, { ...o, precision: 'int8', returnWeights: true });
        assertWithin(got.output, want.output, BOUND, 'output');
        assertWithin(got.weights, want.weights, BOUND, 'weights');
        // The weights it returns are its own softmax: the tiled call (no
        // weights) gives the same output but for P·V's rounding (int16
        // weights, 2^-16 of a tile's largest, there; float32 here).
        const tiled = ca.attention(q, k, v, { ...o, precision: 'int8' }).output;
        assertWithin(tiled, got.output, 1e-3, 'tiled vs weights path');
      });
    }
  }

  it('smoothing is what keeps offset keys accurate: float32 unaffected, int8 within the bound', () => {
    const o = { ...base, headDim: 64, queryLength: 64 };
    const { q, k, v } = data(o, 'offset', 5);
    const want = referenceAttention64(q, k, v, o).output;
    assertWithin(ca.attention(q, k, v, o).output, want, 1e-4, 'float32');
    assertWithin(ca.attention(q, k, v, { ...o, precision: 'int8' }).output, want, BOUND, 'int8');
  });

  it('the checker rejects a result past the bound', () => {
    const want = Float64Array.from([0.5, -2, 1, NaN]);
    const got = Float32Array.from(want);
    assert.ok(errorOfLargest(got, want) <= BOUND);
    got[2] += 2 * 1.025 * BOUND; // 1.025 × BOUND of 2
    assert.ok(!(errorOfLargest(got, want) <= BOUND));
    got[2] = 1;
    got[3] = 0;
    assert.equal(errorOfLargest(got, want), Infinity);
    // And a real int8 output, perturbed by 1.25 × BOUND of its largest value.
    const o = { ...base, headDim: 32 };
    const { q, k, v } = data(o);
    const ref = referenceAttention64(q, k, v, o).output;
    const out = ca.attention(q, k, v, { ...o, precision: 'int8' }).output;
    assert.ok(errorOfLargest(out, ref) <= BOUND);
    const largest = ref.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
    out[7] = ref[7] + 1.25 * BOUND * largest;
    assert.ok(!(errorOfLargest(out, ref) <= BOUND));
  });

  for (const dtype of ['float32', 'bfloat16', 'int8']) {
    it(`a ${dtype} KV cache's attention (prefill chunk and decode step)`, () => {
      const H = 8, KV = 2, D = 64, L = 150;
      const layout = { batch: 1, kvHeads: KV, headDim: D, capacity: 200 };
      // An int8 cache is read as it is stored (no smoothing: N(0, 1) keys).
      const keys = dtype === 'int8' ? 'normal' : 'offset';
      const { k, v } = data({ batch: 1, heads: KV, queryLength: L, headDim: D }, keys, 7);
      const cache = ca.createKVCache({ ...layout, dtype }).append(k, v);
      // The reference (float32, within 1e-5) on the values the cache holds.
      const plain = ca.createKVCache(layout).append(storedKv(k, D, dtype), storedKv(v, D, dtype));
      for (const tq of [1, 12]) {
        const q = normal(H * tq * D, 11 + tq);
        const want = plain.attention(q, { heads: H, queryLength: tq }).output;
        const got = cache.attention(q, { heads: H, queryLength: tq, precision: 'int8' }).output;
        assertWithin(got, want, BOUND, `${dtype} cache, ${tq} queries`);
      }
      cache.dispose();
      plain.dispose();
    });
  }

  it('the modules: MultiHeadAttention and GroupedQueryAttention (sliding window, softcap) in eval mode', () => {
    const x = normal(2 * 40 * 64, 3);
    const mha = new ca.MultiHeadAttention(64, 64, 64, 0.0, 4).eval();
    const gqa = new ca.GroupedQueryAttention(64, 64, 4, 2, { contextLength: 64, slidingWindow: 9, softcap: 20 }).eval();
    for (const m of [mha, gqa]) {
      const want = m.forward(x, [2, 40, 64]);
      const got = m.forward(x, [2, 40, 64], { precision: 'int8' });
      assertWithin(got, want, BOUND, m.constructor.name);
      // The cached path too: a prompt, then one token.
      m.resetCache();
      m.forward(x.subarray(0, 39 * 64), [1, 39, 64], { useCache: true, precision: 'int8' });
      const step = m.forward(x.subarray(39 * 64, 40 * 64), [1, 1, 64], { useCache: true, precision: 'int8' });
      assertWithin(step, want.subarray(39 * 64, 40 * 64), BOUND, `${m.constructor.name} cached`);
      m.resetCache();
    }
    mha.train();
    assert.throws(() => mha.forward(x, [2, 40, 64], { precision: 'int8' }), {
      name: 'RangeError', message: /options\.precision 'int8' is for inference/,
    });
  });

  it('a model\'s forward passes it to every layer (eval mode)', () => {
    ca.manualSeed(3);
    const model = new ca.GPTModel({ vocab_size: 50, context_length: 32, emb_dim: 64, n_heads: 4, n_layers: 2, drop_rate: 0, qkv_bias: false }).eval();
    const ids = Int32Array.from({ length: 2 * 24 }, (_, i) => (i * 7) % 50);
    const want = model.forward(ids, [2, 24]);
    const got = model.forward(ids, [2, 24], { precision: 'int8' });
    assertWithin(got, want, BOUND, 'GPTModel logits');
    assert.ok(errorOfLargest(got, want) > 0, 'int8 ran (the logits differ from float32)');
  });

  it('refuses a precision it does not know, and what the backward needs', () => {
    const o = { batch: 1, heads: 2, queryLength: 8, headDim: 16 };
    const { q, k, v } = data(o);
    assert.throws(() => ca.attention(q, k, v, { ...o, precision: 'int4' }), {
      name: 'RangeError', message: /options\.precision/,
    });
    assert.throws(() => ca.attention(q, k, v, { ...o, precision: 'int8', training: true }), {
      name: 'RangeError', message: /options\.precision 'int8' is for inference/,
    });
    assert.throws(() => ca.attention(q, k, v, { ...o, precision: 'int8', returnLogSumExp: true }), {
      name: 'RangeError', message: /precision: int8 gives no log-sum-exp/,
    });
    const cache = ca.createKVCache({ batch: 1, kvHeads: 2, headDim: 16, capacity: 8 }).append(k, v);
    assert.throws(() => cache.attention(q, { heads: 2, queryLength: 8, precision: 'int8', returnLogSumExp: true }), {
      name: 'RangeError', message: /precision/,
    });
    cache.dispose();
    const out = ca.attention(q, k, v, { ...o, returnLogSumExp: true });
    assert.throws(() => ca.attentionBackward(out.output, q, k, v, out.output, out.logSumExp, { ...o, precision: 'int8' }), {
      name: 'TypeError', message: /precision/,
    });
  });
});
