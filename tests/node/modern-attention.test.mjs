// The visibility options (layout, queryOffset, keyLengths, window, mask +
// maskShape, softcap, sinks): first the JS reference against itself (each
// rule written two ways that must agree), then ca.attention,
// ca.attentionReference and the backward against it and against float64
// finite differences, odd shapes, and the builds bit-identical. The core
// tests run where the loaded core has the options; a core before them
// refuses each by name (asserted) and they are skipped.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { init } from 'causal-attention';
import { problem } from './helpers.mjs';
import { maxRelativeError, randomArray, referenceAttention64 } from './js-reference.mjs';

const base = { batch: 2, heads: 4, kvHeads: 2, queryLength: 7, keyLength: 9, headDim: 5, valueDim: 3 };

/** [B, H, S, W] as [B, S, H, W]. */
function toBshd(x, B, H, S, W) {
  const out = new /** @type {any} */ (x.constructor)(x.length);
  for (let b = 0; b < B; b++) {
    for (let h = 0; h < H; h++) {
      for (let s = 0; s < S; s++) {
        for (let w = 0; w < W; w++) out[((b * S + s) * H + h) * W + w] = x[((b * H + h) * S + s) * W + w];
      }
    }
  }
  return out;
}

/** A boolean [B, 1, Tq, Tk] mask from a rule (b, i, j) => visible. */
function boolMask(o, rule) {
  const m = new Uint8Array(o.batch * o.queryLength * o.keyLength);
  for (let b = 0; b < o.batch; b++) {
    for (let i = 0; i < o.queryLength; i++) {
      for (let j = 0; j < o.keyLength; j++) m[(b * o.queryLength + i) * o.keyLength + j] = rule(b, i, j) ? 1 : 0;
    }
  }
  return { mask: m, maskShape: [o.batch, 1, o.queryLength, o.keyLength] };
}

const same = (a, b, tol = 1e-12) => assert.ok(maxRelativeError(a, b) < tol, `off by ${maxRelativeError(a, b)}`);

describe('the JS reference: each rule two ways', () => {
  const { q, k, v } = problem(base, 3);
  it('a causal window { left: W − 1 } is the band mask', () => {
    const o = { ...base, causal: true, queryOffset: 2 };
    const got = referenceAttention64(q, k, v, { ...o, window: { left: 2 } });
    const want = referenceAttention64(q, k, v, { ...o, causal: false, ...boolMask(o, (b, i, j) => j <= i + 2 && j >= i) });
    same(got.output, want.output);
    same(got.weights, want.weights);
  });
  it('keyLengths are a [B, 1, 1, Tk] mask, and bottom-right follows them', () => {
    const keyLengths = [5, 9];
    const got = referenceAttention64(q, k, v, { ...base, causal: 'bottom-right', keyLengths });
    const want = referenceAttention64(q, k, v, {
      ...base, causal: false, ...boolMask(base, (b, i, j) => j < keyLengths[b] && j <= i + keyLengths[b] - base.queryLength),
    });
    same(got.output, want.output);
    const finite = (a) => Float64Array.from(a, (x) => (x === -Infinity ? -1e300 : x));
    same(finite(got.logSumExp), finite(want.logSumExp));
  });
  it('a row that sees no key is zero with logSumExp -Infinity', () => {
    const r = referenceAttention64(q, k, v, { ...base, causal: true, queryOffset: -2, sinks: new Float32Array(4) });
    for (let bh = 0; bh < 8; bh++) {
      assert.equal(r.logSumExp[bh * 7], -Infinity);
      assert.equal(r.logSumExp[bh * 7 + 1], -Infinity);
      assert.ok(r.output.subarray(bh * 21, bh * 21 + 6).every((x) => x === 0));
      assert.ok(Number.isFinite(r.logSumExp[bh * 7 + 2]));
    }
  });
  it("'bshd' is 'bhsd' transposed", () => {
    const o = { ...base, causal: 'bottom-right', window: { left: 3, right: 1 } };
    const want = referenceAttention64(q, k, v, o);
    const got = referenceAttention64(toBshd(q, 2, 4, 7, 5), toBshd(k, 2, 2, 9, 5), toBshd(v, 2, 2, 9, 3), { ...o, layout: 'bshd' });
    same(got.output, toBshd(want.output, 2, 4, 7, 3));
    same(got.weights, want.weights);
  });
  it('sinks: a -Infinity sink is none; a sink takes exp(sink − logSumExp) of each row', () => {
    const sinks = Float32Array.from([-Infinity, 0.5, -1, 2]);
    const none = referenceAttention64(q, k, v, base);
    const r = referenceAttention64(q, k, v, { ...base, sinks });
    for (let b = 0; b < 2; b++) {
      for (let h = 0; h < 4; h++) {
        for (let i = 0; i < 7; i++) {
          const row = (b * 4 + h) * 7 + i;
          let sum = 0;
          for (let j = 0; j < 9; j++) sum += r.weights[row * 9 + j];
          assert.ok(Math.abs(sum + Math.exp(sinks[h] - r.logSumExp[row]) - 1) < 1e-12);
          if (h === 0) assert.ok(Math.abs(r.output[row * 3] - none.output[row * 3]) < 1e-15);
        }
      }
    }
  });
  it('an additive mask of 0 and -Infinity is the boolean mask; softcap bounds each score', () => {
    const { mask, maskShape } = boolMask(base, (b, i, j) => (i * 3 + j + b) % 4 !== 0);
    const additive = Float32Array.from(mask, (x) => (x ? 0 : -Infinity));
    same(referenceAttention64(q, k, v, { ...base, causal: false, mask, maskShape }).output,
      referenceAttention64(q, k, v, { ...base, causal: false, mask: additive, maskShape }).output);
    // With scale 100 the raw scores spread widely; softcap 1 keeps every
    // weight at least e^-2 of the row's largest.
    const r = referenceAttention64(q, k, v, { ...base, causal: false, scale: 100, softcap: 1 });
    for (let row = 0; row < 56; row++) {
      const w = r.weights.subarray(row * 9, row * 9 + 9);
      assert.ok(Math.min(...w) >= Math.max(...w) * Math.exp(-2) * (1 - 1e-12));
    }
  });
});

// The core's checks: each case's options over `base` (or its own shape).
const CASES = [
  ['layout bshd', { layout: 'bshd' }],
  ['queryOffset 3, causal', { causal: true, queryOffset: 3 }],
  ['queryOffset -2 (empty rows)', { causal: true, queryOffset: -2 }],
  ['keyLengths, bottom-right', { causal: 'bottom-right', keyLengths: [4, 9] }],
  ['keyLengths with a 0', { causal: false, keyLengths: new Int32Array([0, 6]) }],
  ['window left (Mistral)', { causal: true, window: { left: 2 } }],
  ['window left and right, not causal', { causal: false, window: { left: 1, right: 2 } }],
  ['boolean mask [Tq, Tk]', { causal: false, mask: 'bool', maskShape: [7, 9] }],
  ['additive mask [H, Tq, Tk] with -Infinity', { causal: true, mask: 'float', maskShape: [4, 7, 9] }],
  ['boolean mask [B, 1, 1, Tk]', { causal: false, mask: 'bool', maskShape: [2, 1, 1, 9] }],
  ['additive mask rank 1 [Tk]', { causal: false, mask: 'float', maskShape: [9] }],
  ['softcap 0.5', { causal: true, softcap: 0.5, scale: 4 }],
  ['sinks', { causal: true, sinks: 'sinks' }],
  ['everything at once', {
    causal: 'bottom-right', layout: 'bshd', keyLengths: [6, 8], window: { left: 3, right: 1 }, mask: 'float',
    maskShape: [4, 1, 9], softcap: 2, sinks: 'sinks',
  }],
  ['head size 1, T not a tile multiple', { causal: true, window: { left: 30 }, sinks: 'sinks' },
    { batch: 1, heads: 2, queryLength: 70, keyLength: 70, headDim: 1 }],
  ['head size 3, keyLengths', { causal: 'bottom-right', keyLengths: [65] }, { batch: 1, heads: 2, queryLength: 65, keyLength: 130, headDim: 3 }],
  ['head size 96, softcap and mask', { causal: true, softcap: 20, mask: 'bool', maskShape: [67, 67] },
    { batch: 1, heads: 1, queryLength: 67, keyLength: 67, headDim: 96 }],
  ['head size 256, sinks and window', { causal: true, window: { left: 40 }, sinks: 'sinks', layout: 'bshd' },
    { batch: 1, heads: 2, kvHeads: 1, queryLength: 100, keyLength: 100, headDim: 256 }],
];

/** A case's concrete options: masks and sinks made for its shape. */
function optionsOf(shape, extra, seed) {
  const o = { ...shape, ...extra };
  const tk = shape.keyLength ?? shape.queryLength;
  if (extra.mask) {
    const n = extra.maskShape.reduce((a, b) => a * b, 1);
    const r = randomArray(n, seed);
    o.mask = extra.mask === 'bool' ? Uint8Array.from(r, (x, i) => (x > -0.6 || i % tk === 0 ? 1 : 0))
      : Float32Array.from(r, (x) => (x < -0.8 ? -Infinity : x));
  }
  if (extra.sinks) o.sinks = Float32Array.from(randomArray(shape.heads, seed + 7), (x) => 2 * x);
  return o;
}

describe('the core against the JS reference', () => {
  let ca;
  before(async () => {
    ca = await init();
  });
  after(() => ca?.dispose());

  for (const fn of ['attention', 'attentionReference']) {
    for (const [name, extra, shape = base] of CASES) {
      it(`${fn}: ${name}`, () => {
        const o = optionsOf(shape, extra, 11);
        const { q, k, v } = problem(shape, 21);
        const want = referenceAttention64(q, k, v, o);
        const got = ca[fn](q, k, v, { ...o, returnWeights: true, returnLogSumExp: true });
        assert.ok(maxRelativeError(got.output, want.output) < 2e-5, `output off by ${maxRelativeError(got.output, want.output)}`);
        assert.ok(maxRelativeError(got.weights, want.weights) < 2e-5, 'weights');
        const finite = (a) => Float64Array.from(a, (x) => (x === -Infinity ? -1e30 : x));
        assert.ok(maxRelativeError(finite(got.logSumExp), finite(want.logSumExp)) < 2e-5, 'logSumExp');
      });
    }
  }

  // returnScores: every stage of every case, scores and output, against the
  // JS reference's scores (computed in double from the rules' text).
  for (const fn of ['attention', 'attentionReference']) {
    for (const stage of ['scaled', 'softcapped', 'masked']) {
      it(`${fn}: returnScores '${stage}' on every case`, () => {
        for (const [name, extra, shape = base] of CASES) {
          const o = optionsOf(shape, extra, 11);
          const { q, k, v } = problem(shape, 21);
          const want = referenceAttention64(q, k, v, { ...o, returnScores: stage });
          const got = ca[fn](q, k, v, { ...o, returnScores: stage, returnLogSumExp: true });
          const tk = shape.keyLength ?? shape.queryLength;
          assert.equal(got.scores.length, shape.batch * shape.heads * shape.queryLength * tk);
          assert.ok(maxRelativeError(got.scores, want.scores) < 2e-5,
            `${name}: scores off by ${maxRelativeError(got.scores, want.scores)}`);
          assert.ok(maxRelativeError(got.output, want.output) < 2e-5, `${name}: output`);
          assert.equal(got.weights, undefined);
          if (stage === 'masked') {
            // The masked scores are the softmax's logits: the log-sum-exp of a row is theirs (with its sink).
            for (let row = 0; row < got.logSumExp.length; row++) {
              const r = Array.from(got.scores.subarray(row * tk, (row + 1) * tk));
              if (o.sinks) r.push(o.sinks[Math.floor(row / shape.queryLength) % shape.heads]);
              const m = Math.max(...r);
              const lse = m === -Infinity ? -Infinity : m + Math.log(r.reduce((a, x) => a + Math.exp(x - m), 0));
              if (got.logSumExp[row] === -Infinity) assert.ok(r.slice(0, tk).every((x) => x === -Infinity), name);
              else assert.ok(Math.abs(lse - got.logSumExp[row]) < 1e-4 * (1 + Math.abs(lse)), `${name}: row ${row}`);
            }
          }
        }
      });
    }
  }

  it('attentionBackward (and its reference) against float64 finite differences, with gradSinks', () => {
    const shape = { batch: 2, heads: 2, kvHeads: 1, queryLength: 4, keyLength: 6, headDim: 3, valueDim: 2 };
    for (const extra of [
      { causal: 'bottom-right', keyLengths: [3, 6], sinks: 'sinks' },
      { causal: true, queryOffset: 2, window: { left: 2 }, softcap: 1.5, mask: 'float', maskShape: [4, 6] },
      { causal: false, layout: 'bshd', mask: 'bool', maskShape: [2, 1, 4, 6], sinks: 'sinks' },
    ]) {
      const o = optionsOf(shape, extra, 31);
      const { q, k, v, dO } = problem(shape, 41);
      const loss = (qq, kk, vv, ss) => {
        const out = referenceAttention64(qq, kk, vv, { ...o, sinks: ss }).output;
        let sum = 0;
        for (let i = 0; i < out.length; i++) sum += out[i] * dO[i];
        return sum;
      };
      const fd = (arrays, which) => {
        const x = Float64Array.from(arrays[which]);
        const g = new Float64Array(x.length);
        for (let i = 0; i < x.length; i++) {
          const at = (dx) => {
            const a = arrays.map((y, n) => (n === which ? Float64Array.from(x, (z, m) => (m === i ? z + dx : z)) : y));
            return loss(a[0], a[1], a[2], a[3]);
          };
          g[i] = (at(1e-6) - at(-1e-6)) / 2e-6;
        }
        return g;
      };
      const fwd = ca.attention(q, k, v, { ...o, returnLogSumExp: true });
      for (const fn of ['attentionBackward', 'attentionBackwardReference']) {
        const g = ca[fn](dO, q, k, v, fwd.output, fwd.logSumExp, o);
        const inputs = [q, k, v, o.sinks];
        [['gradQ', 0], ['gradK', 1], ['gradV', 2], ...(o.sinks ? [['gradSinks', 3]] : [])].forEach(([key, n]) => {
          const want = fd(inputs, n);
          const err = maxRelativeError(g[key], want);
          assert.ok(err < 1e-4, `${fn} ${key} off by ${err} (${JSON.stringify(extra)})`);
        });
        assert.equal(g.gradSinks === undefined, o.sinks === undefined);
      }
    }
  });

  it('single, 2 and 3 threads are bit-identical with every option', async () => {
    const shape = { batch: 2, heads: 4, kvHeads: 2, queryLength: 130, keyLength: 200, headDim: 16 };
    const o = optionsOf(shape, {
      causal: 'bottom-right', keyLengths: [150, 200], window: { left: 64 }, mask: 'float', maskShape: [130, 200],
      softcap: 5, sinks: 'sinks', layout: 'bshd',
    }, 51);
    const { q, k, v, dO } = problem(shape, 61);
    const results = [];
    for (const options of [{ build: 'single' }, { build: 'threads', threads: 2 }, { build: 'threads', threads: 3 }]) {
      const rt = await init(options);
      try {
        const f = rt.attention(q, k, v, { ...o, returnWeights: true, returnLogSumExp: true });
        const g = rt.attentionBackward(dO, q, k, v, f.output, f.logSumExp, o);
        results.push([f.output, f.weights, f.logSumExp, g.gradQ, g.gradK, g.gradV, g.gradSinks]);
      } finally {
        rt.dispose();
      }
    }
    for (const r of results.slice(1)) r.forEach((a, i) => assert.deepEqual(a, results[0][i]));
  });
});

// A key a row does not see by a rule (causal, window, keyLengths, a boolean
// mask) plays no part in it, whatever its values: NaN or Infinity in such a
// key's k or v reaches neither the row's output nor any gradient through
// it, in the forward's two paths and the backward (partial tiles included).
// An additive mask is arithmetic, as in ONNX: -Infinity there is a score,
// not a rule (a NaN score stays NaN).
describe('non-finite keys and values that a row does not see never reach it', () => {
  let ca;
  before(async () => { ca = await init(); });
  after(() => ca?.dispose());

  // T not a multiple of any tile, so that the poisoned keys sit in partial
  // tiles next to keys the same rows see.
  const shape = { batch: 2, heads: 2, kvHeads: 1, queryLength: 70, keyLength: 90, headDim: 8, valueDim: 4 };
  // Decode-shaped (the forward's split path): 3 queries after 297 keys.
  const decode = { ...shape, queryLength: 3, keyLength: 300 };
  // [name, options, shape, the poisoned key, the poisoned query]
  const RULES = [
    ['keyLengths', { causal: false, keyLengths: [50, 90] }],
    ['causal bottom-right', { causal: 'bottom-right' }],
    ['a causal window (left)', { causal: true, queryOffset: 20, window: { left: 10 } }],
    ['a window, not causal', { causal: false, window: { left: 5, right: 3 } }],
    ['a boolean mask', { causal: false, mask: 'bool', maskShape: [70, 90] }],
    ['everything, bshd', {
      causal: 'bottom-right', layout: 'bshd', keyLengths: [80, 60], window: { left: 30 }, mask: 'bool',
      maskShape: [70, 90], softcap: 3, sinks: 'sinks',
    }],
    ['decode-shaped, a window and a mask', {
      causal: 'bottom-right', window: { left: 150 }, mask: 'bool', maskShape: [2, 1, 3, 300],
    }, decode, 148, 1],
  ];
  // Both finite and close, or both not finite (NaN and ±Infinity alike).
  const sameFinite = (got, want, what, tol = 2e-5) => {
    for (let i = 0; i < want.length; i++) {
      const a = got[i], b = want[i];
      if (!Number.isFinite(b) || !Number.isFinite(a)) {
        assert.equal(Number.isFinite(a), Number.isFinite(b), `${what}[${i}]: ${a} vs ${b}`);
        continue;
      }
      assert.ok(Math.abs(a - b) <= tol * (1 + Math.abs(b)), `${what}[${i}]: ${a} vs ${b}`);
    }
  };
  for (const [name, extra, sh = shape, key = 61, query = 30] of RULES) {
    it(`${name}: forward (both paths) and backward as the references, poison in k, v, q or dO`, () => {
      const shape = sh, tq = sh.queryLength, tk = sh.keyLength;
      const o = optionsOf(shape, extra, 71);
      for (const poison of [NaN, Infinity]) {
        // ±Infinity in a query makes ±Infinity scores, which the references
        // treat as their own case: queries and dO get NaN only.
        for (const tensor of Number.isNaN(poison) ? ['k', 'v', 'q', 'dO'] : ['k', 'v']) {
          const data = problem(shape, 81);
          const width = tensor === 'k' || tensor === 'q' ? shape.headDim : shape.valueDim;
          for (const b of [0, 1]) {
            if (tensor === 'k' || tensor === 'v') {
              // The key of each batch item (one KV head: the same offset in both layouts).
              data[tensor].fill(poison, (b * tk + key) * width, (b * tk + key + 1) * width);
            } else {
              // The query of head 1: the keys it does not see keep finite gradients.
              const row = o.layout === 'bshd' ? (b * tq + query) * 2 + 1 : (b * 2 + 1) * tq + query;
              data[tensor].fill(poison, row * width, (row + 1) * width);
            }
          }
          const { q, k, v, dO } = data;
          const want = referenceAttention64(q, k, v, o);
          const what = `${tensor} = ${poison}`;
          const tiled = ca.attention(q, k, v, { ...o, returnLogSumExp: true });
          sameFinite(tiled.output, want.output, `${what}: output`);
          const rows = ca.attention(q, k, v, { ...o, returnWeights: true });
          sameFinite(rows.output, want.output, `${what}: output with weights`);
          sameFinite(rows.weights, want.weights, `${what}: weights`);
          // Some rows see a poisoned key and some do not: both kinds are tested.
          if (tensor !== 'dO') assert.ok(want.output.some((x) => !Number.isFinite(x)), `${what}: no row sees the poison`);
          assert.ok(want.output.some((x) => Number.isFinite(x)), `${what}: every row sees the poison`);
          const wantG = ca.attentionBackwardReference(dO, q, k, v, tiled.output, tiled.logSumExp, o);
          const got = ca.attentionBackward(dO, q, k, v, tiled.output, tiled.logSumExp, o);
          for (const key of ['gradQ', 'gradK', 'gradV']) sameFinite(got[key], wantG[key], `${what}: ${key}`);
          // The rows away from the poison have finite gradients.
          assert.ok(got.gradQ.some((x) => Number.isFinite(x)), `${what}: gradQ all non-finite`);
        }
      }
    });
  }
});

describe('the modules: padded batches, sliding windows, softcap, sinks', () => {
  let ca;
  before(async () => {
    ca = await init();
  });
  after(() => ca?.dispose());

  it('a padded batch: each sequence\'s valid rows are its own forward\'s', () => {
    ca.manualSeed(1);
    for (const module of [new ca.MultiHeadAttention(6, 8, 10, 0, 2), new ca.CausalAttention(6, 4, 10, 0),
      new ca.MultiHeadAttentionWrapper(6, 4, 10, 0, 2), new ca.GroupedQueryAttention(6, 8, 2, 1, { contextLength: 10 })]) {
      module.eval();
      const T = 7, lengths = [7, 4];
      const x = randomArray(2 * T * 6, 9);
      const padded = module.forward(x, [2, T, 6], { keyLengths: lengths });
      const width = padded.length / (2 * T);
      for (let b = 0; b < 2; b++) {
        const alone = module.forward(x.slice(b * T * 6, (b * T + lengths[b]) * 6), [lengths[b], 6]);
        const rows = padded.subarray(b * T * width, (b * T + lengths[b]) * width);
        assert.ok(maxRelativeError(rows, alone) < 1e-5, `${module.constructor.name} item ${b}`);
      }
    }
  });

  it('GroupedQueryAttention slidingWindow W: each token sees itself and the W − 1 before, also through useCache', () => {
    ca.manualSeed(2);
    const W = 3, T = 9;
    const gqa = new ca.GroupedQueryAttention(8, 8, 2, 1, { contextLength: 16, slidingWindow: W, softcap: 2 });
    gqa.eval();
    const x = randomArray(T * 8, 4);
    const full = gqa.forward(x, [T, 8], { returnWeights: true, returnQKV: true });
    const want = referenceAttention64(full.queries, full.keys, full.values,
      { batch: 1, heads: 2, kvHeads: 1, queryLength: T, headDim: 4, window: { left: W - 1 }, softcap: 2 });
    assert.ok(maxRelativeError(full.weights, want.weights) < 1e-5);
    for (let i = 0; i < T; i++) {
      for (let j = 0; j < T; j++) assert.equal(full.weights[i * T + j] > 0, j <= i && j > i - W, `(${i}, ${j})`);
    }
    const steps = [];
    for (let i = 0; i < T; i++) steps.push(...gqa.forward(x.subarray(i * 8, (i + 1) * 8), [1, 8], { useCache: true }));
    assert.ok(maxRelativeError(Float32Array.from(steps), full.output) < 1e-5);
  });

  it('GroupedQueryAttention sinks: a parameter named sinks, trained by backward (against finite differences)', () => {
    ca.manualSeed(3);
    const gqa = new ca.GroupedQueryAttention(8, 8, 2, 1, { contextLength: 8, sinks: true });
    assert.deepEqual(Object.keys(gqa.stateDict()).slice(0, 1), ['sinks']);
    assert.deepEqual(Array.from(gqa.sinks), [0, 0]);
    gqa.sinks.set([0.5, -0.3]);
    const x = randomArray(2 * 5 * 8, 5), g = randomArray(2 * 5 * 8, 6);
    const loss = () => {
      const y = gqa.forward(x, [2, 5, 8]);
      let s = 0;
      for (let i = 0; i < y.length; i++) s += y[i] * g[i];
      return s;
    };
    gqa.train();
    gqa.forward(x, [2, 5, 8]);
    gqa.backward(g);
    const grad = Float32Array.from(gqa.sinksGrad);
    gqa.eval();
    for (let h = 0; h < 2; h++) {
      const s0 = gqa.sinks[h];
      gqa.sinks[h] = s0 + 1e-2;
      const up = loss();
      gqa.sinks[h] = s0 - 1e-2;
      const down = loss();
      gqa.sinks[h] = s0;
      const fd = (up - down) / 2e-2;
      assert.ok(Math.abs(grad[h] - fd) < 2e-3 * (1 + Math.abs(fd)), `head ${h}: ${grad[h]} vs ${fd}`);
    }
  });
});

describe("a KV cache's attention: window, softcap, sinks, mask", () => {
  let ca;
  before(async () => { ca = await init(); });
  after(() => ca?.dispose());

  it('matches ca.attention over the same keys (bottom-right) and the JS reference', () => {
    const shape = { batch: 2, heads: 4, kvHeads: 2, queryLength: 3, keyLength: 11, headDim: 8 };
    const { q, k, v } = problem(shape, 71);
    const cache = ca.createKVCache({ batch: 2, kvHeads: 2, headDim: 8, capacity: 16 });
    try {
      cache.append(k, v);
      for (const extra of [
        { window: { left: 4 } }, { softcap: 1.5 }, { sinks: 'sinks' }, { mask: 'float', maskShape: [3, 11] },
        { window: { left: 2, right: 0 }, softcap: 3, sinks: 'sinks', mask: 'bool', maskShape: [2, 1, 1, 11] },
      ]) {
        const o = optionsOf(shape, { causal: 'bottom-right', ...extra }, 81);
        const { batch, kvHeads, keyLength, headDim, ...rest } = o;
        const got = cache.attention(q, { ...rest, returnWeights: true });
        const want = referenceAttention64(q, k, v, o);
        assert.ok(maxRelativeError(got.output, want.output) < 2e-5, `output ${JSON.stringify(extra)}`);
        assert.ok(maxRelativeError(got.weights, want.weights) < 2e-5, `weights ${JSON.stringify(extra)}`);
        // The cache's route (few query rows) differs from the tiled one: close, not bit-equal.
        assert.ok(maxRelativeError(got.output, ca.attention(q, k, v, o).output) < 1e-5);
      }
    } finally {
      cache.dispose();
    }
  });
});

describe('long contexts: no limit from a tensor that is not allocated', () => {
  it('(1, 4, 16384, 8) and (1, 32, 8192, 4) run forward and backward without weights; weights of 4 GiB are refused', async () => {
    const ca = await init();
    try {
      const s = { batch: 1, heads: 32, queryLength: 8192, headDim: 4, window: { left: 3 } };
      const q = Float32Array.from(randomArray(32 * 8192 * 4, 91), (x) => x * 3);
      const f = ca.attention(q, q, q, { ...s, returnLogSumExp: true });
      // Row 8191 of head 31 sees keys 8188..8191 only.
      const row = 31 * 8192 + 8191;
      const want = referenceAttention64(q.subarray(row * 4, row * 4 + 4),
        q.subarray((31 * 8192 + 8188) * 4, (row + 1) * 4), q.subarray((31 * 8192 + 8188) * 4, (row + 1) * 4),
        { batch: 1, heads: 1, queryLength: 1, keyLength: 4, headDim: 4, causal: false });
      assert.ok(maxRelativeError(f.output.subarray(row * 4, row * 4 + 4), want.output) < 1e-5);
      const g = ca.attentionBackward(q, q, q, q, f.output, f.logSumExp, s);
      assert.ok(g.gradQ.every(Number.isFinite));
      const long = { batch: 1, heads: 4, queryLength: 16384, headDim: 8 };
      const q4 = randomArray(4 * 16384 * 8, 92);
      assert.equal(ca.attention(q4, q4, q4, { ...long, window: { left: 0 } }).output.length, q4.length);
      assert.throws(() => ca.attention(q4, q4, q4, { ...long, returnWeights: true }), RangeError);
    } finally {
      ca.dispose();
    }
  });
});
