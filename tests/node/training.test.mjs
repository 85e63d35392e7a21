// Training: the attention backward, the modules' backward, Embedding,
// crossEntropy, randint and the optimizers, through the built package.
// Tolerances (stated where used, the largest errors measured are printed):
//   wasm kernel vs its wasm scalar oracle (same inputs):  2e-5·(1 + |ref|)
//   vs a float64 JS backward written from the definitions: 1e-5·(1 + |ref|)
//   modules vs float64 central finite differences:        1e-5·(1 + |fd|)
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { init } from 'causal-attention';
import {
  dropoutKeeps, maxRelativeError, randomArray, referenceAttentionBackward, repeatKv, ropeInverseFrequencies,
  visibleEnd,
} from './js-reference.mjs';
import { linearJs, problem } from './helpers.mjs';
import { trainTinyModel } from './tiny-model.mjs';

const ORACLE_TOL = 2e-5;
const FLOAT64_TOL = 1e-5;
const FD_TOL = 1e-5;

const builds = [
  ['single', { build: 'single' }],
  ['threads', { build: 'threads', threads: 2 }],
];

/** The forward (with its log-sum-exp) and the backward. */
function forwardBackward(ca, o, { q, k, v, dO }, fn = 'attentionBackward') {
  const fw = ca.attention(q, k, v, { ...o, returnLogSumExp: true });
  const seed = fw.seed ?? o.seed;
  const options = seed === undefined ? o : { ...o, seed };
  return { fw, grads: ca[fn](dO, q, k, v, fw.output, fw.logSumExp, options), options };
}

const DIMS = [1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 33, 64];
/** Shapes: T = 1, head size 1, odd sizes, Tq ≠ Tk both ways, GQA, dropout, custom scale. */
function shapes(count) {
  const out = [];
  for (let iter = 0; iter < count; iter++) {
    const heads = [1, 2, 4, 6][iter % 4];
    const kvHeads = [heads, 1, heads / 2, heads][(iter >> 2) % 4] || 1;
    out.push({
      batch: 1 + (iter % 2),
      heads,
      kvHeads: Number.isInteger(kvHeads) ? kvHeads : heads,
      queryLength: iter % 9 === 0 ? 1 : 1 + ((iter * 37) % 70),
      keyLength: iter % 3 === 0 ? undefined : 1 + ((iter * 53) % 70),
      headDim: DIMS[iter % DIMS.length],
      valueDim: iter % 2 ? undefined : DIMS[(iter * 5) % DIMS.length],
      causal: [true, false, 'top-left', 'bottom-right'][iter % 4],
      maskStrategy: iter % 5 === 1 ? 'renormalize' : 'neg-inf',
      ...(iter % 6 === 2 ? { scale: -0.7 + (iter % 5) * 0.4 } : {}),
      ...(iter % 4 === 3 ? { training: true, dropout: 0.3, seed: 1000 + iter } : {}),
    });
  }
  return out;
}

for (const [name, initOptions] of builds) {
  describe(`attention backward (${name} build)`, async () => {
    const ca = await init(initOptions);

    it('returns the log-sum-exp of each row (−∞ for rows that see no key) and the dropout seed it drew', () => {
      const o = { batch: 1, heads: 2, queryLength: 7, keyLength: 4, headDim: 3, causal: 'bottom-right' };
      const { q, k, v } = problem(o, 5);
      const fw = ca.attention(q, k, v, { ...o, returnLogSumExp: true });
      const ref = referenceAttentionBackward(new Float32Array(2 * 7 * 3), q, k, v, o).logSumExp;
      // Bottom-right, 7 queries over 4 keys: rows 0-2 of each head see none.
      for (let r = 0; r < 14; r++) {
        if (r % 7 < 3) assert.equal(fw.logSumExp[r], -Infinity);
        else assert.ok(Math.abs(fw.logSumExp[r] - ref[r]) <= 1e-5 * (1 + Math.abs(ref[r])), `row ${r}`);
      }
      assert.equal(fw.seed, undefined);
      ca.manualSeed(9);
      const a = ca.attention(q, k, v, { ...o, training: true, dropout: 0.5, returnLogSumExp: true });
      assert.equal(typeof a.seed, 'bigint');
      const b = ca.attention(q, k, v, { ...o, training: true, dropout: 0.5, seed: a.seed });
      assert.deepEqual(b.output, a.output);
      assert.deepEqual(a.logSumExp, fw.logSumExp); // dropout does not change L
    });

    it('matches its scalar oracle and a float64 JS backward on many shapes', () => {
      let worstOracle = 0;
      let worst64 = 0;
      for (const [i, o] of shapes(48).entries()) {
        const inputs = problem(o, 10 + i);
        const { fw, grads, options } = forwardBackward(ca, o, inputs);
        const oracle = ca.attentionBackwardReference(inputs.dO, inputs.q, inputs.k, inputs.v,
          fw.output, fw.logSumExp, options);
        const ref = referenceAttentionBackward(inputs.dO, inputs.q, inputs.k, inputs.v, options);
        for (const key of ['gradQ', 'gradK', 'gradV']) {
          const e1 = maxRelativeError(grads[key], oracle[key]);
          const e2 = maxRelativeError(grads[key], ref[key]);
          assert.ok(e1 <= ORACLE_TOL, `${key} vs oracle ${e1} for ${JSON.stringify(o)}`);
          assert.ok(e2 <= FLOAT64_TOL, `${key} vs float64 ${e2} for ${JSON.stringify(o)}`);
          worstOracle = Math.max(worstOracle, e1);
          worst64 = Math.max(worst64, e2);
        }
      }
      console.log(`  ${name}: worst error vs the wasm oracle ${worstOracle.toExponential(2)}, ` +
        `vs float64 JS ${worst64.toExponential(2)}`);
    });

    it('sums the gradients of shared key/value heads over their group (GQA, MQA)', () => {
      for (const kvHeads of [1, 2]) {
        const o = { batch: 2, heads: 4, kvHeads, queryLength: 20, headDim: 8 };
        const inputs = problem(o, 77);
        const { grads } = forwardBackward(ca, o, inputs);
        // The same computation with every head's own copy of k and v.
        const full = { ...o, kvHeads: 4 };
        const kr = repeatKv(inputs.k, 2, 4, kvHeads);
        const vr = repeatKv(inputs.v, 2, 4, kvHeads);
        const separate = forwardBackward(ca, full, { ...inputs, k: kr, v: vr }).grads;
        assert.ok(maxRelativeError(grads.gradQ, separate.gradQ) <= ORACLE_TOL);
        const summed = new Float64Array(inputs.k.length);
        const per = inputs.k.length / (2 * kvHeads);
        for (let b = 0; b < 2; b++) {
          for (let h = 0; h < 4; h++) {
            const dst = (b * kvHeads + Math.floor(h / (4 / kvHeads))) * per;
            for (let e = 0; e < per; e++) summed[dst + e] += separate.gradK[(b * 4 + h) * per + e];
          }
        }
        assert.ok(maxRelativeError(grads.gradK, summed) <= ORACLE_TOL, `kvHeads ${kvHeads}`);
      }
    });

    it('gives both mask strategies the same gradient', () => {
      const o = { batch: 1, heads: 2, queryLength: 30, keyLength: 41, headDim: 8, causal: 'bottom-right' };
      const inputs = problem(o, 3);
      const { fw, grads } = forwardBackward(ca, o, inputs);
      const again = ca.attentionBackward(inputs.dO, inputs.q, inputs.k, inputs.v, fw.output, fw.logSumExp,
        { ...o, maskStrategy: 'renormalize' });
      assert.deepEqual(again, grads);
      const own = forwardBackward(ca, { ...o, maskStrategy: 'renormalize' }, inputs).grads;
      for (const key of ['gradQ', 'gradK', 'gradV']) assert.ok(maxRelativeError(own[key], grads[key]) <= ORACLE_TOL);
    });

    it('NaN in gradOutput row i reaches gradQ row i and the gradK/gradV rows of the keys row i sees, nothing else', () => {
      const o = { batch: 1, heads: 1, queryLength: 12, headDim: 4 };
      const inputs = problem(o, 8);
      inputs.dO[5 * 4 + 1] = NaN;
      const { grads } = forwardBackward(ca, o, inputs);
      for (let i = 0; i < 12; i++) {
        assert.equal(Number.isNaN(grads.gradQ[i * 4]), i === 5, `gradQ row ${i}`);
        assert.equal(Number.isNaN(grads.gradK[i * 4]), i <= 5, `gradK row ${i}`);
        // dV_j = sum_i P_ij dO_i: only column 1 of dO row 5 is NaN.
        assert.equal(Number.isNaN(grads.gradV[i * 4 + 1]), i <= 5, `gradV row ${i}`);
        assert.ok(Number.isFinite(grads.gradV[i * 4]), `gradV row ${i} column 0`);
      }
    });
  });
}

describe('bit-identical gradients for any build and thread count', () => {
  it('attention backward and a module backward: single, threads 1, 2 and 4', async () => {
    const o = { batch: 1, heads: 3, queryLength: 300, headDim: 16, training: true, dropout: 0.2, seed: 5 };
    const inputs = problem(o, 21);
    const results = [];
    for (const opts of [{ build: 'single' }, { build: 'threads', threads: 1 },
      { build: 'threads', threads: 2 }, { build: 'threads', threads: 4 }]) {
      const ca = await init(opts);
      const { grads } = forwardBackward(ca, o, inputs);
      ca.manualSeed(3);
      const mha = new ca.MultiHeadAttention(24, 24, 64, 0.1, 4);
      const x = randomArray(2 * 64 * 24, 4);
      mha.forward(x, [2, 64, 24]);
      const gradX = mha.backward(randomArray(2 * 64 * 24, 6));
      results.push({ grads, gradX, w: mha.gradients()['W_query.weight'] });
    }
    for (const r of results.slice(1)) assert.deepEqual(r, results[0]);
  });
});

// ---------------------------------------------------------------------------
// Modules against float64 finite differences.

/**
 * RoPE as the Llama chapter's apply_rope in float64 on [B, T, heads, hd]
 * rows in place: pairs (i, i + hd/2) rotated by position · inv_freq[i], the
 * angles' float32 steps as compute_rope_params (src/model/rope.h).
 */
function rope64(y, B, T, heads, hd, base, freqConfig) {
  const f = Math.fround;
  const half = hd / 2;
  const invFreq = ropeInverseFrequencies(base, hd, freqConfig);
  for (let i = 0; i < half; i++) {
    const inv = invFreq[i];
    for (let t = 0; t < T; t++) {
      const angle = f(t * inv);
      const c = f(Math.cos(angle)), s = f(Math.sin(angle));
      for (let b = 0; b < B; b++) {
        for (let h = 0; h < heads; h++) {
          const at = ((b * T + t) * heads + h) * hd;
          const x1 = y[at + i], x2 = y[at + i + half];
          y[at + i] = x1 * c - x2 * s;
          y[at + i + half] = x2 * c + x1 * s;
        }
      }
    }
  }
}

/**
 * The attention layer of the modules in float64, from the book's
 * definitions: p = { wq, bq, wk, bk, wv, bv, wo, bo } (stacked heads, as
 * layerParams), x [B, T, dIn] → y [B, T, out]; with kvHeads (grouped-query
 * attention: K and V projections of kvHeads heads, query head h reading
 * h / (numHeads / kvHeads)) and ropeBase (RoPE on Q and K) for the Llama
 * chapter's GroupedQueryAttention; with headMask ([numHeads] or [B,
 * numHeads], Hugging Face's head_mask) each head's context times its factor
 * before the output projection.
 */
function layerForward64(p, x, [B, T, dIn], {
  numHeads, headDim, causal, dropout = 0, seed, kvHeads = numHeads, ropeBase = 0, freqConfig = null, headMask,
}) {
  const dm = numHeads * headDim;
  const dkv = kvHeads * headDim;
  const project = (w, b, width) => linearJs(x, B * T, dIn, width, w, b);
  const Q = project(p.wq, p.bq, dm), K = project(p.wk, p.bk, dkv), V = project(p.wv, p.bv, dkv);
  if (ropeBase) {
    rope64(Q, B, T, numHeads, headDim, ropeBase, freqConfig);
    rope64(K, B, T, kvHeads, headDim, ropeBase, freqConfig);
  }
  const ctx = new Float64Array(B * T * dm);
  const scale = Math.fround(1 / Math.sqrt(headDim));
  const keep = Math.fround(1 / (1 - Math.fround(dropout)));
  for (let b = 0; b < B; b++) {
    for (let h = 0; h < numHeads; h++) {
      const kh = Math.floor(h / (numHeads / kvHeads)) * headDim;
      for (let i = 0; i < T; i++) {
        const ve = visibleEnd(causal, i, T, T);
        const s = new Float64Array(ve);
        let m = -Infinity;
        for (let j = 0; j < ve; j++) {
          for (let c = 0; c < headDim; c++) {
            s[j] += Q[(b * T + i) * dm + h * headDim + c] * K[(b * T + j) * dkv + kh + c];
          }
          s[j] *= scale;
          m = Math.max(m, s[j]);
        }
        let sum = 0;
        for (let j = 0; j < ve; j++) sum += (s[j] = Math.exp(s[j] - m));
        for (let j = 0; j < ve; j++) {
          let w = s[j] / sum;
          if (dropout > 0) w *= dropoutKeeps(seed, (b * numHeads + h) * T + i, j, dropout) ? keep : 0;
          for (let c = 0; c < headDim; c++) {
            ctx[(b * T + i) * dm + h * headDim + c] += w * V[(b * T + j) * dkv + kh + c];
          }
        }
        const factor = headMask ? headMask[(headMask.length === numHeads ? 0 : b * numHeads) + h] : 1;
        for (let c = 0; c < headDim; c++) ctx[(b * T + i) * dm + h * headDim + c] *= factor;
      }
    }
  }
  return p.wo ? linearJs(ctx, B * T, dm, dm, p.wo, p.bo) : ctx;
}

/** A module's state dict (float64 copies) as layerForward64's stacked parameters. */
function stackedParams(kind, sd, numHeads) {
  const f64 = (a) => (a ? Float64Array.from(a) : null);
  const pick = (n) => {
    if (kind !== 'MultiHeadAttentionWrapper') return f64(sd[n]);
    if (!sd[`heads.0.${n}`]) return null;
    const parts = Array.from({ length: numHeads }, (_, h) => sd[`heads.${h}.${n}`]);
    return Float64Array.from(parts.flatMap((a) => Array.from(a)));
  };
  return {
    wq: pick('W_query.weight'), bq: pick('W_query.bias'), wk: pick('W_key.weight'), bk: pick('W_key.bias'),
    wv: pick('W_value.weight'), bv: pick('W_value.bias'),
    wo: f64(sd['out_proj.weight']), bo: f64(sd['out_proj.bias']),
  };
}

/** Central differences of sum(forward(θ) ∘ g) for every element of every named array. */
function finiteDifferences(arrays, loss, step = 1e-6) {
  const grads = {};
  for (const [name, a] of Object.entries(arrays)) {
    grads[name] = new Float64Array(a.length);
    for (let e = 0; e < a.length; e++) {
      const saved = a[e];
      a[e] = saved + step;
      const up = loss();
      a[e] = saved - step;
      const down = loss();
      a[e] = saved;
      grads[name][e] = (up - down) / (2 * step);
    }
  }
  return grads;
}

const dot = (a, b) => a.reduce((s, x, i) => s + x * b[i], 0);

const ROPE_FREQ_CONFIG = { factor: 4, lowFreqFactor: 1, highFreqFactor: 4, originalContextLength: 1000 };

describe('modules: parameter and input gradients against float64 finite differences', async () => {
  const ca = await init({ build: 'single' });
  const B = 2, T = 5, dIn = 3;
  const cases = [
    ['SelfAttention', () => new ca.SelfAttention(dIn, 4, true), { numHeads: 1, headDim: 4, causal: false }],
    ['CausalAttention', () => new ca.CausalAttention(dIn, 4, T, 0.0), { numHeads: 1, headDim: 4, causal: true }],
    ['CausalAttention with dropout', () => new ca.CausalAttention(dIn, 4, T, 0.3, true),
      { numHeads: 1, headDim: 4, causal: true, dropout: 0.3, seed: 11 }],
    ['MultiHeadAttentionWrapper', () => new ca.MultiHeadAttentionWrapper(dIn, 2, T, 0.0, 2, true),
      { numHeads: 2, headDim: 2, causal: true }],
    ['MultiHeadAttention', () => new ca.MultiHeadAttention(dIn, 4, T, 0.0, 2),
      { numHeads: 2, headDim: 2, causal: true }],
    ['GroupedQueryAttention', () => new ca.GroupedQueryAttention(dIn, 8, 4, 2, { contextLength: T, ropeBase: 10000 }),
      { numHeads: 4, headDim: 2, causal: true, kvHeads: 2, ropeBase: 10000 }],
    // Head size 8: wavelengths 6.3 and 63 kept (< 250), 628 interpolated,
    // 6283 divided (> 1000).
    ['GroupedQueryAttention with freqConfig', () => new ca.GroupedQueryAttention(dIn, 16, 2, 1,
      { contextLength: T, ropeBase: 10000, freqConfig: ROPE_FREQ_CONFIG }),
    { numHeads: 2, headDim: 8, causal: true, kvHeads: 1, ropeBase: 10000, freqConfig: ROPE_FREQ_CONFIG }],
  ];
  let worst = 0;

  // Each case also with a head mask (one head knocked out, the others
  // scaled), shared ([heads]) and per sequence ([batch, heads]).
  const masks = (heads) => [
    ['', undefined],
    [', headMask [heads]', Float32Array.from({ length: heads }, (_, h) => (h === 0 ? 0 : 1.5 - 0.25 * h))],
    [', headMask [batch, heads]', Float32Array.from({ length: B * heads }, (_, k) => [1, 0, 0.5, -2, 0.75][k % 5])],
  ];
  for (const [kind, make, base] of cases) for (const [named, headMask] of masks(base.numHeads)) {
    const cfg = { ...base, headMask };
    it(`${kind}${named}: every parameter and x`, () => {
      ca.manualSeed(42);
      const m = make();
      const x = randomArray(B * T * dIn, 7);
      const g = randomArray(B * T * m.outputDim, 8);
      const y = m.forward(x, [B, T, dIn], { headMask, ...(cfg.seed === undefined ? {} : { seed: cfg.seed }) });
      const gradX = m.backward(g);
      const grads = m.gradients();
      assert.deepEqual(Object.keys(grads), Object.keys(m.stateDict()));

      const sd = Object.fromEntries(Object.entries(m.stateDict()).map(([k, a]) => [k, Float64Array.from(a)]));
      const x64 = Float64Array.from(x);
      const loss = () => dot(layerForward64(stackedParams(kind.split(' ')[0], sd, cfg.numHeads), x64,
        [B, T, dIn], cfg), g);
      const y64 = layerForward64(stackedParams(kind.split(' ')[0], sd, cfg.numHeads), x64, [B, T, dIn], cfg);
      assert.ok(maxRelativeError(y, y64) <= FLOAT64_TOL, `${kind}${named}: forward`);
      const fd = finiteDifferences({ ...sd, x: x64 }, loss);
      for (const [n, expected] of Object.entries(fd)) {
        const got = n === 'x' ? gradX : grads[n];
        const e = maxRelativeError(got, expected);
        assert.ok(e <= FD_TOL, `${kind} ${n}: error ${e}`);
        worst = Math.max(worst, e);
      }
    });
  }

  it('Linear: weight, bias and x', () => {
    ca.manualSeed(1);
    const lin = new ca.Linear(3, 4);
    const x = randomArray(2 * 5 * 3, 3);
    const g = randomArray(2 * 5 * 4, 4);
    lin.forward(x, [2, 5, 3]);
    const gradX = lin.backward(g);
    const p = { weight: Float64Array.from(lin.weight), bias: Float64Array.from(lin.bias), x: Float64Array.from(x) };
    const loss = () => dot(linearJs(p.x, 10, 3, 4, p.weight, p.bias), g);
    const fd = finiteDifferences(p, loss);
    for (const [n, got] of [['weight', lin.weightGrad], ['bias', lin.biasGrad], ['x', gradX]]) {
      const e = maxRelativeError(got, fd[n]);
      assert.ok(e <= FD_TOL, `Linear ${n}: error ${e}`);
      worst = Math.max(worst, e);
    }
  });

  it('Embedding: repeated indices accumulate their rows of gradOutput', () => {
    ca.manualSeed(2);
    const emb = new ca.Embedding(5, 3);
    const ids = [4, 1, 4, 0, 4];
    const g = randomArray(5 * 3, 9);
    assert.deepEqual(emb.forward(ids, [1, 5]), Float32Array.from(ids.flatMap((i) => Array.from(emb.weight.subarray(i * 3, i * 3 + 3)))));
    assert.equal(emb.backward(g), null);
    const w = { weight: Float64Array.from(emb.weight) };
    const loss = () => ids.reduce((s, id, n) => s + [0, 1, 2].reduce((t, c) => t + w.weight[id * 3 + c] * g[n * 3 + c], 0), 0);
    const e = maxRelativeError(emb.weightGrad, finiteDifferences(w, loss).weight);
    assert.ok(e <= FD_TOL, `Embedding: error ${e}`);
    assert.deepEqual(Array.from(emb.weightGrad.slice(6, 9)), [0, 0, 0]); // index 2 never used
  });

  it(`(worst error over all modules below ${FD_TOL})`, () => {
    console.log(`  modules vs float64 finite differences: worst error ${worst.toExponential(2)}`);
    assert.ok(worst > 0 && worst <= FD_TOL);
  });
});

describe('modules: the training contract', async () => {
  const ca = await init({ build: 'single' });

  it('gradients accumulate over backward calls until zeroGrad; gradients() are the live arrays by state-dict name', () => {
    ca.manualSeed(5);
    const m = new ca.MultiHeadAttention(6, 4, 8, 0.0, 2, true);
    const x = randomArray(2 * 8 * 6, 1);
    const g = randomArray(2 * 8 * 4, 2);
    assert.deepEqual(Object.values(m.gradients()), Array(8).fill(null));
    m.forward(x, [2, 8, 6]);
    const first = m.backward(g);
    const once = Object.fromEntries(Object.entries(m.gradients()).map(([k, a]) => [k, a.slice()]));
    m.forward(x, [2, 8, 6]);
    assert.deepEqual(m.backward(g), first);
    for (const [k, a] of Object.entries(m.gradients())) {
      assert.ok(maxRelativeError(a, once[k].map((v) => 2 * v)) <= 1e-6, k);
    }
    assert.equal(m.gradients()['out_proj.weight'], m.outProj.weightGrad);
    assert.deepEqual(m.parameters().map((p) => p.name), Object.keys(m.stateDict()));
    assert.equal(m.parameters()[0].data, m.W_query.weight);
    m.zeroGrad(false);
    assert.ok(Object.values(m.gradients()).every((a) => a.every((v) => v === 0)));
    m.zeroGrad();
    assert.ok(Object.values(m.gradients()).every((a) => a === null));
  });

  it('the wrapper spreads its gradients over its heads (the same as each head alone)', () => {
    ca.manualSeed(6);
    const wrapper = new ca.MultiHeadAttentionWrapper(3, 2, 6, 0.0, 2, true);
    const x = randomArray(2 * 6 * 3, 3);
    const g = randomArray(2 * 6 * 4, 4);
    wrapper.forward(x, [2, 6, 3]);
    const gradX = wrapper.backward(g);
    const sumX = new Float32Array(x.length);
    wrapper.heads.forEach((head, h) => {
      const solo = new ca.CausalAttention(3, 2, 6, 0.0, true).loadStateDict(head.stateDict());
      solo.forward(x, [2, 6, 3]);
      const gh = new Float32Array(2 * 6 * 2);
      for (let r = 0; r < 12; r++) gh.set(g.subarray(r * 4 + h * 2, r * 4 + h * 2 + 2), r * 2);
      solo.backward(gh).forEach((v, i) => { sumX[i] += v; });
      for (const [k, a] of Object.entries(solo.gradients())) {
        assert.ok(maxRelativeError(head.gradients()[k], a) <= 1e-5, `head ${h} ${k}`);
      }
    });
    assert.ok(maxRelativeError(gradX, sumX) <= 1e-5);
  });

  // Every module kind: [name, make, input of one forward, its shape].
  const kinds = (x3) => [
    ['Linear', () => new ca.Linear(3, 4), x3, [2, 6, 3]],
    ['Embedding', () => new ca.Embedding(5, 3), [4, 1, 4, 0, 2, 4], [2, 3]],
    ['CausalAttention', () => new ca.CausalAttention(3, 4, 6, 0.0, true), x3, [2, 6, 3]],
    ['MultiHeadAttentionWrapper', () => new ca.MultiHeadAttentionWrapper(3, 2, 6, 0.0, 2, true), x3, [2, 6, 3]],
    ['MultiHeadAttention', () => new ca.MultiHeadAttention(3, 4, 6, 0.0, 2, true), x3, [2, 6, 3]],
    ['GroupedQueryAttention', () => new ca.GroupedQueryAttention(3, 8, 4, 2, { contextLength: 6 }), x3, [2, 6, 3]],
  ];
  const outputLength = (m, x, shape) => (m.embeddingDim ? x.length * m.embeddingDim
    : (shape.slice(0, -1).reduce((a, b) => a * b, 1) * (m.outputDim ?? m.outFeatures)));

  it('a second backward accumulates into the same gradient arrays (a fix: each backward used to allocate new ones)', () => {
    const x3 = randomArray(2 * 6 * 3, 5);
    for (const [kind, make, x, shape] of kinds(x3)) {
      ca.manualSeed(7);
      const m = make();
      const g = randomArray(outputLength(m, x, shape), 6);
      m.forward(x, shape);
      m.backward(g);
      const arrays = m.gradients();
      const once = Object.fromEntries(Object.entries(arrays).map(([k, a]) => [k, a.slice()]));
      m.forward(x, shape);
      m.backward(g);
      for (const [k, a] of Object.entries(m.gradients())) {
        assert.equal(a, arrays[k], `${kind} ${k}: the same Float32Array`);
        assert.ok(maxRelativeError(a, once[k].map((v) => 2 * v)) <= 1e-6, `${kind} ${k}: summed`);
      }
      m.zeroGrad(false);
      for (const [k, a] of Object.entries(m.gradients())) {
        assert.equal(a, arrays[k], `${kind} ${k}: zeroGrad(false) zeros in place`);
        assert.ok(a.every((v) => v === 0));
      }
      m.zeroGrad();
      assert.ok(Object.values(m.gradients()).every((a) => a === null), `${kind}: zeroGrad() sets null`);
    }
    ca.manualSeed(8);
    const lin = new ca.Linear(3, 4);
    lin.forward(x3, [2, 6, 3]);
    lin.backward(randomArray(2 * 6 * 4, 9));
    const weightGrad = lin.weightGrad;
    const first = weightGrad.slice();
    lin.forward(x3, [2, 6, 3]);
    lin.backward(randomArray(2 * 6 * 4, 10));
    assert.equal(lin.weightGrad, weightGrad);
    const solo = new ca.Linear(3, 4).loadStateDict(lin.stateDict());
    solo.forward(x3, [2, 6, 3]);
    solo.backward(randomArray(2 * 6 * 4, 10));
    assert.ok(maxRelativeError(weightGrad, first.map((v, i) => v + solo.weightGrad[i])) <= 1e-6,
      'the sum of two different backwards');
  });

  it('a rejected backward() leaves its forward for a valid one, every module kind', () => {
    const x3 = randomArray(2 * 6 * 3, 11);
    for (const [kind, make, x, shape] of kinds(x3)) {
      ca.manualSeed(12);
      const m = make();
      const length = outputLength(m, x, shape);
      m.forward(x, shape);
      assert.throws(() => m.backward(new Float32Array(length + 1)),
        (e) => e instanceof RangeError && e.message.startsWith(`gradOutput must have length ${length} `), kind);
      assert.throws(() => m.backward(Array(length).fill(0)),
        (e) => e instanceof TypeError && /^gradOutput must be a Float32Array, got an Array/.test(e.message), kind);
      assert.deepEqual(Object.values(m.gradients()).filter((a) => a !== null), [], `${kind}: nothing accumulated`);
      m.backward(randomArray(length, 13));
      assert.ok(Object.values(m.gradients()).every((a) => a instanceof Float32Array), `${kind}: the forward was kept`);
      assert.throws(() => m.backward(randomArray(length, 13)), /each forward\(\) allows one backward\(\)/, kind);
    }
  });
});

// ---------------------------------------------------------------------------
// PyTorch's numbers and rules.

describe("PyTorch's numbers: Embedding, randint, crossEntropy, SGD, AdamW", async () => {
  const ca = await init({ build: 'single' });

  it("Embedding(6, 3) after manualSeed(123) is the book's chapter-2 table", () => {
    ca.manualSeed(123);
    const emb = new ca.Embedding(6, 3);
    // Build a Large Language Model (From Scratch), section 2.7, print(embedding_layer.weight).
    const book = [0.3374, -0.1778, -0.1690, 0.9178, 1.5810, 1.3010, 1.2753, -0.2010, -0.1606,
      -0.4015, 0.9666, -1.1481, -1.1589, 0.3255, -0.6315, -2.8400, -0.7849, -1.4096];
    book.forEach((v, i) => assert.ok(Math.abs(emb.weight[i] - v) <= 5e-5, `${i}: ${emb.weight[i]} vs ${v}`));
  });

  it('randint(0, 10, [10]) after manualSeed(0) is torch.randint(0, 10, (10,))', () => {
    ca.manualSeed(0);
    // torch.manual_seed(0); torch.randint(0, 10, (10,)): mt19937(0)'s first
    // outputs modulo 10, the CPU generator's rule (random() % range + low).
    assert.deepEqual(Array.from(ca.randint(0, 10, [10])), [4, 9, 3, 0, 3, 9, 7, 3, 7, 3]);
    const r = ca.randint(-3, 4, [2, 500]);
    assert.ok(r.every((v) => v >= -3 && v < 4) && new Set(r).size === 7);
  });

  it("crossEntropy: the formula of PyTorch's CrossEntropyLoss docs, mean over rows not ignored", () => {
    // loss_n = -log(exp(x[n, y_n]) / sum_c exp(x[n, c])), averaged over the
    // rows whose target is not ignore_index (-100). Row 0: logits [1, 2, 3],
    // target 2: log(1 + e^-1 + e^-2) = 0.40760596. Row 1: [0, ln 3, -1],
    // target 1: log(4 + e^-1) - ln 3 = 0.375665. Row 2: ignored.
    const ln3 = Math.fround(Math.log(3));
    const logits = new Float32Array([1, 2, 3, 0, ln3, -1, 7, 7, 7]);
    const { loss, gradLogits } = ca.crossEntropy(logits, [2, 1, -100]);
    const row0 = Math.log(1 + Math.exp(-1) + Math.exp(-2));
    const row1 = Math.log(1 + Math.exp(ln3) + Math.exp(-1)) - ln3;
    assert.ok(Math.abs(row0 - 0.40760596) <= 1e-8 && Math.abs(row1 - 0.375665) <= 1e-6);
    assert.equal(loss, Math.fround((row0 + row1) / 2));
    // The gradient of the mean: (softmax - onehot) / 2 per counted row.
    const z = Math.exp(1) + Math.exp(2) + Math.exp(3);
    [Math.exp(1) / z / 2, Math.exp(2) / z / 2, (Math.exp(3) / z - 1) / 2]
      .forEach((v, c) => assert.equal(gradLogits[c], Math.fround(v)));
    assert.deepEqual(Array.from(gradLogits.slice(6)), [0, 0, 0]);
    // Uniform logits: log C; every row ignored: NaN; another ignoreIndex.
    assert.equal(ca.crossEntropy(new Float32Array(8), [3, 0]).loss, Math.fround(Math.log(4)));
    assert.ok(Number.isNaN(ca.crossEntropy(new Float32Array(4), [-100, -100]).loss));
    const two = new Float32Array([0, ln3]);
    assert.ok(Math.abs(ca.crossEntropy(two, [1], { ignoreIndex: 0 }).loss - Math.log(4 / 3)) <= 1e-7);
    assert.ok(Number.isNaN(ca.crossEntropy(two, [0], { ignoreIndex: 0 }).loss));
  });

  it('SGD: lr, momentum, dampening, weight decay, nesterov on a hand-computed two-step example', () => {
    // p0 = 1, grads g1 = 0.5, g2 = -0.25, lr 0.1, momentum 0.9, weight decay 0.01:
    //   d1 = 0.5 + 0.01·1 = 0.51; b1 = d1; p1 = 1 - 0.1·0.51 = 0.949
    //   d2 = -0.25 + 0.01·0.949 = -0.24051; b2 = 0.9·0.51 - 0.24051 = 0.21849
    //   p2 = 0.949 - 0.1·0.21849 = 0.927151
    // nesterov: step 1 uses d1 + 0.9·b1 = 0.969 → p1 = 0.9031;
    //   d2 = -0.25 + 0.009031 = -0.240969, b2 = 0.459 - 0.240969 = 0.218031,
    //   p2 = 0.9031 - 0.1·(d2 + 0.9·b2) = 0.9031 - 0.1·(-0.0447411) = 0.90757411
    // dampening 0.5 (no decay): b1 = 0.5, p1 = 0.95; b2 = 0.45 - 0.125 = 0.325, p2 = 0.9175
    const run = (opts) => {
      const p = { data: new Float32Array([1]), grad: new Float32Array([0.5]) };
      const sgd = new ca.optim.SGD([p], opts);
      sgd.step();
      const p1 = p.data[0];
      p.grad[0] = -0.25;
      sgd.step();
      return [p1, p.data[0]];
    };
    const near = ([a, b], [x, y]) => assert.ok(Math.abs(a - x) <= 1e-6 && Math.abs(b - y) <= 1e-6, `${a}, ${b} vs ${x}, ${y}`);
    near(run({ lr: 0.1, momentum: 0.9, weightDecay: 0.01 }), [0.949, 0.927151]);
    near(run({ lr: 0.1, momentum: 0.9, weightDecay: 0.01, nesterov: true }), [0.9031, 0.90757411]);
    near(run({ lr: 0.1, momentum: 0.9, dampening: 0.5 }), [0.95, 0.9175]);
    near(run({ lr: 0.1 }), [0.95, 0.975]);
    assert.equal(new ca.optim.SGD([{ data: new Float32Array(1), grad: null }]).lr, 1e-3);
  });

  it('AdamW: decoupled weight decay and bias corrections on a hand-computed two-step example', () => {
    // p0 = 1, g1 = 0.5, g2 = -0.25; lr 0.1, betas (0.9, 0.999), eps 1e-8, weight decay 0.1.
    // Step 1: p = 1·(1 - 0.01) = 0.99; m = 0.05, v = 0.00025;
    //   m̂ = 0.05 / 0.1 = 0.5, √v̂ = √(0.00025 / 0.001) = 0.5;
    //   p1 = 0.99 - 0.1·0.5 / (0.5 + 1e-8) = 0.89000000200
    // Step 2: p = 0.89·0.99 = 0.8811000020; m = 0.045 - 0.025 = 0.02,
    //   v = 0.00024975 + 0.0000625 = 0.00031225; bc1 = 0.19, bc2 = 0.001999;
    //   p2 = 0.8811 - (0.1 / 0.19)·0.02 / (√(0.00031225 / 0.001999) + 1e-8)
    //      = 0.8811000020 - 0.0105263158 / 0.3952261 = 0.8544665
    const p = { data: new Float32Array([1]), grad: new Float32Array([0.5]) };
    const adamw = new ca.optim.AdamW([p], { lr: 0.1, weightDecay: 0.1 });
    adamw.step();
    assert.ok(Math.abs(p.data[0] - 0.890000002) <= 1e-6, `${p.data[0]}`);
    p.grad[0] = -0.25;
    adamw.step();
    const expected = 0.99 * 0.890000002 - (0.1 / 0.19) * 0.02 / (Math.sqrt(0.00031225 / 0.001999) + 1e-8);
    assert.ok(Math.abs(expected - 0.8544665) <= 1e-6);
    assert.ok(Math.abs(p.data[0] - expected) <= 1e-6, `${p.data[0]} vs ${expected}`);
    // PyTorch's defaults; parameters without a gradient are left alone.
    const idle = { data: new Float32Array([2]), grad: null };
    const d = new ca.optim.AdamW([idle]);
    assert.deepEqual([d.lr, [...d.betas], d.eps, d.weightDecay], [1e-3, [0.9, 0.999], 1e-8, 1e-2]);
    d.step();
    assert.equal(idle.data[0], 2);
  });

  it("AdamW's wasm update gives the float32 loop's bits: odd lengths, tensors at different steps, many steps", () => {
    // The loop AdamW.step ran in JS before its update moved to wasm
    // (src/model/optim.h): each op rounded to float32 as PyTorch's tensors round it.
    const f = Math.fround;
    const loop = ({ lr, betas: [beta1, beta2], eps, weightDecay }, p, g, s) => {
      s.step += 1;
      const decay = f(1 - lr * weightDecay), w1 = f(1 - beta1), b2 = f(beta2), c2 = f(1 - beta2), e = f(eps);
      const minusStep = f(-(lr / (1 - beta1 ** s.step)));
      const correction2 = f(Math.sqrt(1 - beta2 ** s.step));
      for (let i = 0; i < p.length; i++) {
        p[i] = f(p[i] * decay);
        s.m[i] = f(s.m[i] + w1 * f(g[i] - s.m[i]));
        s.v[i] = f(f(s.v[i] * b2) + f(f(c2 * g[i]) * g[i]));
        const denom = f(f(f(Math.sqrt(s.v[i])) / correction2) + e);
        p[i] = f(p[i] + f(f(minusStep * s.m[i]) / denom));
      }
    };
    const sizes = [1, 3, 7, 64, 129, 1000];
    const wave = (n, k) => Float32Array.from({ length: n }, (_, i) => Math.sin(i * 1.7 + k) * 10 ** ((i % 7) - 4));
    const params = sizes.map((n, k) => ({ data: wave(n, k), grad: null }));
    const copies = params.map((p) => ({ data: p.data.slice(), state: { step: 0, m: new Float32Array(p.data.length), v: new Float32Array(p.data.length) } }));
    const options = { lr: 3e-3, betas: [0.85, 0.995], eps: 1e-6, weightDecay: 0.05 };
    const adamw = new ca.optim.AdamW(params, options);
    for (let step = 0; step < 25; step++) {
      params.forEach((p, k) => {
        // Tensor 2 skips every third step (no gradient): its own step count lags.
        p.grad = k === 2 && step % 3 === 0 ? null : wave(p.data.length, step * 11 + k);
        if (p.grad) loop(options, copies[k].data, p.grad, copies[k].state);
      });
      adamw.step();
    }
    params.forEach((p, k) => {
      assert.ok(p.data.every((x, i) => Object.is(x, copies[k].data[i])), `tensor ${k} (${p.data.length} values)`);
      const { state } = adamw.stateDict();
      assert.equal(state[k].step, copies[k].state.step);
      assert.ok(state[k].exp_avg_sq.every((x, i) => Object.is(x, copies[k].state.v[i])));
    });
  });

  it('a step with one bad gradient throws before it updates anything: all or nothing', () => {
    for (const make of [(ps) => new ca.optim.SGD(ps, { lr: 0.1, momentum: 0.9 }), (ps) => new ca.optim.AdamW(ps, { lr: 0.1 })]) {
      ca.manualSeed(3);
      const first = new ca.Linear(3, 2);
      const last = new ca.Linear(2, 2);
      const optimizer = make([first, last]);
      for (const p of [...first.parameters(), ...last.parameters()]) p.grad = new Float32Array(p.data.length).fill(0.5);
      const good = last.weightGrad;
      const before = [first.weight.slice(), first.bias.slice(), last.weight.slice(), last.bias.slice()];
      for (const [bad, Err, got] of [[new Float32Array(3), RangeError, 'a Float32Array of length 3'],
        [Array(4).fill(0.5), TypeError, 'an Array of length 4']]) {
        last.weightGrad = bad;
        assert.throws(() => optimizer.step(), (e) => e instanceof Err &&
          e.message === `the gradient of a parameter 'weight' must be a Float32Array of length 4, got ${got}`);
        assert.deepEqual([first.weight, first.bias, last.weight, last.bias], before, 'no parameter moved');
      }
      // The corrected step is the first one: the same as a fresh optimizer's.
      last.weightGrad = good;
      optimizer.step();
      const moved = [first.weight.slice(), first.bias.slice(), last.weight.slice(), last.bias.slice()];
      [first.weight, first.bias, last.weight, last.bias].forEach((a, i) => a.set(before[i]));
      make([first, last]).step();
      assert.deepEqual([first.weight, first.bias, last.weight, last.bias], moved);
    }
  });

  it('stateDict / loadStateDict: PyTorch\'s layout; through JSON, training continues bit for bit; a refused dict changes nothing', () => {
    const makes = [(m) => new ca.optim.SGD(m, { lr: 0.05, momentum: 0.9, weightDecay: 0.01 }),
      (m) => new ca.optim.AdamW(m, { lr: 0.05, betas: [0.8, 0.99] })];
    for (const make of makes) {
      const setup = () => {
        ca.manualSeed(11);
        const layer = new ca.Linear(3, 2);
        return { layer, optimizer: make(layer) };
      };
      const x = Float32Array.from({ length: 12 }, (_, i) => Math.sin(i));
      const train = ({ layer, optimizer }) => {
        optimizer.zeroGrad();
        const y = layer.forward(x, [4, 3]);
        layer.backward(y.map((v) => 2 * v));
        optimizer.step();
      };
      const a = setup();
      for (let k = 0; k < 3; k++) train(a);
      const dict = a.optimizer.stateDict();
      assert.deepEqual(Object.keys(dict.state), ['0', '1']);
      assert.deepEqual(dict.param_groups[0].params, [0, 1]);
      const json = JSON.parse(JSON.stringify({ model: a.layer.stateDict(), optimizer: dict },
        (k, v) => (v instanceof Float32Array ? [...v] : v)));
      if (a.optimizer instanceof ca.optim.AdamW) {
        assert.equal(dict.state[0].step, 3);
        assert.deepEqual(dict.param_groups[0], { lr: 0.05, betas: [0.8, 0.99], eps: 1e-8, weight_decay: 1e-2, params: [0, 1] });
      } else {
        assert.deepEqual(dict.param_groups[0], { lr: 0.05, momentum: 0.9, dampening: 0, weight_decay: 0.01, nesterov: false, params: [0, 1] });
      }
      // A fresh model and optimizer (other hyperparameters) loaded from JSON
      // go on exactly as the original.
      ca.manualSeed(99);
      const layer = new ca.Linear(3, 2).loadStateDict(json.model);
      const b = { layer, optimizer: (a.optimizer instanceof ca.optim.AdamW ? new ca.optim.AdamW(layer) : new ca.optim.SGD(layer)) };
      b.optimizer.loadStateDict(json.optimizer);
      assert.equal(b.optimizer.lr, 0.05);
      for (let k = 0; k < 3; k++) {
        train(a);
        train(b);
      }
      assert.deepEqual(b.layer.stateDict(), a.layer.stateDict());
      // A dict for other parameters is refused whole: the state stays.
      const before = b.optimizer.stateDict();
      const bad = { ...json.optimizer, state: { ...json.optimizer.state, 1: { ...json.optimizer.state[1] } } };
      const key = a.optimizer instanceof ca.optim.AdamW ? 'exp_avg_sq' : 'momentum_buffer';
      bad.state[1][key] = [1, 2, 3];
      assert.throws(() => b.optimizer.loadStateDict(bad), { name: 'RangeError', message: `stateDict.state[1].${key} must have 2 values, got 3` });
      assert.deepEqual(b.optimizer.stateDict(), before);
    }
  });
});

// ---------------------------------------------------------------------------

describe('a tiny model learns with AdamW, the same bits on every build', () => {
  it('200 steps: the loss falls window by window; single and threads agree exactly', async () => {
    const runs = [];
    for (const opts of [{ build: 'single' }, { build: 'threads', threads: 2 }]) {
      runs.push(await trainTinyModel(await init(opts)));
    }
    const losses = runs[0];
    assert.equal(losses.length, 200);
    const mean = (a, b) => losses.slice(a, b).reduce((s, x) => s + x, 0) / (b - a);
    const windows = [0, 50, 100, 150].map((a) => mean(a, a + 50));
    console.log(`  tiny model: loss ${losses[0].toFixed(4)} → ${losses[199].toFixed(4)}; ` +
      `means of 50 steps ${windows.map((w) => w.toFixed(4)).join(', ')}`);
    for (let w = 1; w < 4; w++) assert.ok(windows[w] < windows[w - 1], `window ${w}`);
    assert.ok(windows[3] < windows[0] / 10);
    assert.deepEqual(runs[1], runs[0]);
  });
});
