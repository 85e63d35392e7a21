// One rule for non-finite scores, on every path: the score of a key a row
// sees is scale·q·k, then softcap, then an additive mask. A row that sees a
// NaN or ±∞ score before the mask, or gets NaN or +∞ from the mask, has NaN
// weights, output and logSumExp (as a softmax over such a row gives in
// PyTorch's SDPA and ONNX's reference); an additive -∞ hides its key, and
// large finite values are ordinary numbers. Property test: random additive
// masks holding NaN, ±∞ and ±1e30 among ordinary values, over shapes that
// reach the row kernels, the tiles, the transposed forward and the decode
// step, with every option that changes the route; every path's output,
// weights and logSumExp against the float64 JS reference (the rule written
// from the text above), the C++ reference, each other with and without
// returnWeights, the KV cache in its three dtypes, and the backward's NaN
// pattern against its C++ reference.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { init } from 'causal-attention';
import { problem } from './helpers.mjs';
import { randomArray, referenceAttention64, storedKv } from './js-reference.mjs';

const ca = await init();

/** An LCG in [0, 1), for the masks' special values. */
function lcg(seed) {
  let s = seed >>> 0;
  return () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32);
}

const SPECIALS = [NaN, Infinity, -Infinity, 1e30, -1e30, 50, -50];

/** An additive mask of `n` values: ordinary ones, and each special with probability `rate`. */
function mixedMask(n, seed, rate) {
  const r = lcg(seed);
  const base = randomArray(n, seed);
  return Float32Array.from(base, (x) => (r() < rate ? SPECIALS[Math.floor(r() * SPECIALS.length)] : x));
}

/**
 * a and b agree element by element: NaN where the other is NaN, the same
 * infinity, and finite values within tol·(1 + |b|).
 */
function agree(a, b, tol, what) {
  assert.equal(a.length, b.length, `${what}: length`);
  for (let i = 0; i < a.length; i++) {
    const x = a[i], y = b[i];
    if (Number.isNaN(y) || Number.isNaN(x)) {
      assert.ok(Number.isNaN(x) && Number.isNaN(y), `${what}[${i}]: got ${x}, expected ${y}`);
    } else if (!Number.isFinite(y) || !Number.isFinite(x)) {
      assert.equal(x, y, `${what}[${i}]`);
    } else {
      assert.ok(Math.abs(x - y) <= tol * (1 + Math.abs(y)), `${what}[${i}]: got ${x}, expected ${y}`);
    }
  }
}

const SHAPES = [
  // [name, shape, options]
  ['one query row', { batch: 1, heads: 2, queryLength: 1, keyLength: 9, headDim: 8 }, { causal: false }],
  ['a few rows', { batch: 2, heads: 2, queryLength: 5, keyLength: 5, headDim: 16 }, {}],
  ['tiles, causal', { batch: 1, heads: 2, queryLength: 70, keyLength: 70, headDim: 32 }, {}],
  ['tiles, GQA, bshd', { batch: 1, heads: 4, kvHeads: 1, queryLength: 40, keyLength: 130, headDim: 64 },
    { causal: 'bottom-right', layout: 'bshd' }],
  ['softcap, window, sinks', { batch: 1, heads: 2, queryLength: 33, keyLength: 33, headDim: 16 },
    { softcap: 30, window: { left: 12 }, sinks: new Float32Array([0.5, -1]) }],
  ['keyLengths, long rows', { batch: 2, heads: 1, queryLength: 3, keyLength: 300, headDim: 8 },
    { causal: false, keyLengths: [300, 170] }],
];

describe('non-finite scores: one rule on every path', () => {
  for (const [name, shape, extra] of SHAPES) {
    for (const perRow of [0.3, 3]) {
      it(`${name}, ${perRow} special mask values per row`, () => {
        const tq = shape.queryLength, tk = shape.keyLength;
        const rate = perRow / tk;
        const { q, k, v } = problem(shape, 3);
        const mask = mixedMask(shape.heads * tq * tk, 17 + tq + tk, rate);
        const o = { ...shape, ...extra, mask, maskShape: [shape.heads, tq, tk] };
        const want = referenceAttention64(q, k, v, o);
        const plain = ca.attention(q, k, v, { ...o, returnLogSumExp: true });
        const full = ca.attention(q, k, v, { ...o, returnWeights: true, returnLogSumExp: true });
        const ref = ca.attentionReference(q, k, v, { ...o, returnWeights: true, returnLogSumExp: true });
        for (const [path, got] of [['attention', plain], ['attention with weights', full], ['attentionReference', ref]]) {
          agree(got.output, want.output, 2e-5, `${path} output`);
          agree(got.logSumExp, want.logSumExp, 2e-5, `${path} logSumExp`);
          if (got.weights) agree(got.weights, want.weights, 2e-5, `${path} weights`);
        }
        // Asking for the weights never changes which rows are NaN, nor the values beyond rounding.
        agree(plain.output, full.output, 2e-5, 'output without and with weights');
        agree(plain.logSumExp, full.logSumExp, 2e-5, 'logSumExp without and with weights');
        // The rows the rule makes NaN are there, beside finite ones (the check can fail).
        if (perRow > 1 && want.logSumExp.length >= 8) {
          assert.ok(want.logSumExp.some(Number.isNaN), 'some row is NaN');
          assert.ok(want.logSumExp.some(Number.isFinite), 'some row is finite');
        }
      });
    }
  }

  it('the backward: NaN exactly where its C++ reference has NaN, the rest within 1e-4', () => {
    for (const [, shape, extra] of SHAPES) {
      const { q, k, v, dO } = problem(shape, 5);
      const o = { ...shape, ...extra, mask: mixedMask(shape.heads * shape.queryLength * shape.keyLength, 29, 0.05),
        maskShape: [shape.heads, shape.queryLength, shape.keyLength] };
      const f = ca.attention(q, k, v, { ...o, returnLogSumExp: true });
      const got = ca.attentionBackward(dO, q, k, v, f.output, f.logSumExp, o);
      const ref = ca.attentionBackwardReference(dO, q, k, v, f.output, f.logSumExp, o);
      for (const g of ['gradQ', 'gradK', 'gradV']) agree(got[g], ref[g], 1e-4, g);
      // A NaN row's gradQ row is NaN (the declarations' propagation rule).
      const dq = shape.headDim;
      f.logSumExp.forEach((lse, row) => {
        if (Number.isNaN(lse) && (shape.layout ?? extra.layout ?? 'bhsd') === 'bhsd') {
          assert.ok(Number.isNaN(got.gradQ[row * dq]), `gradQ row ${row}`);
        }
      });
    }
  });

  for (const dtype of ['float32', 'bfloat16', 'int8']) {
    it(`a ${dtype} KV cache's decode step and prefill chunk follow the same rule`, () => {
      const heads = 8, kvHeads = 2, headDim = 32, held = 90;
      const cache = ca.createKVCache({ batch: 1, kvHeads, headDim, capacity: 128, dtype });
      try {
        const k = Float32Array.from(randomArray(kvHeads * held * headDim, 41));
        const v = Float32Array.from(randomArray(kvHeads * held * headDim, 42));
        cache.append(k, v);
        for (const tq of [1, 4]) {
          const q = Float32Array.from(randomArray(heads * tq * headDim, 43 + tq));
          const mask = mixedMask(heads * tq * held, 50 + tq, 0.1);
          const o = { heads, queryLength: tq, mask, maskShape: [heads, tq, held] };
          const want = referenceAttention64(q, storedKv(k, headDim, dtype), storedKv(v, headDim, dtype),
            { ...o, batch: 1, kvHeads, keyLength: held, headDim, causal: 'bottom-right' });
          const plain = cache.attention(q, { ...o, returnLogSumExp: true });
          const full = cache.attention(q, { ...o, returnWeights: true, returnLogSumExp: true });
          for (const [path, got] of [['cache.attention', plain], ['cache.attention with weights', full]]) {
            agree(got.output, want.output, dtype === 'float32' ? 2e-5 : 1e-3, `${path} output (${tq} rows)`);
            agree(got.logSumExp, want.logSumExp, 2e-5, `${path} logSumExp (${tq} rows)`);
          }
          agree(plain.output, full.output, 2e-5, `output without and with weights (${tq} rows)`);
        }
      } finally {
        cache.dispose();
      }
    });
  }
});
