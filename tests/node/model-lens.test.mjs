// The lab's views of a whole model (bindings/nn/model-lens.mjs) against the
// float64 reference forward (model-reference.mjs), on a GPT and a Llama
// model with drawn norms and biases: the logit lens (every layer's residual
// through the final norm and out_head), each head's direct logit
// attribution (and that the final residual's components add up to the
// target's logit), a head's QK/OV circuits over chosen tokens with the norms'
// scales folded, composition scores with folded scales; bad arguments.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { init } from 'causal-attention';
import { linearJs } from './helpers.mjs';
import {
  SMALL_CONFIGS, closeTo, drawnModel, frobenius, layerNorm, matmul, referenceForward, rmsNorm, toDouble, transpose,
} from './model-reference.mjs';

const ca = await init();

const CONFIGS = SMALL_CONFIGS;
const IDS = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3];


for (const family of ['gpt', 'llama']) {
  const cfg = CONFIGS[family];
  const [E, H, L, V] = [cfg.emb_dim, cfg.n_heads, cfg.n_layers, cfg.vocab_size];
  const norm = family === 'gpt' ? 'final_norm.scale' : 'final_norm.weight';

  test(`${family}: the logit lens is each layer's residual through the final norm and out_head (float64 reference)`, () => {
    const m = drawnModel(ca, family, cfg, 21);
    const p = toDouble(m.stateDict());
    const T = IDS.length;
    const ref = referenceForward(family, cfg, p, IDS, 1, T);
    const lens = ca.logitLens(m, IDS);
    assert.equal(lens.tokens.length, (L + 1) * T);
    assert.equal(lens.directLogit, null);
    ref.residual.forEach((x, l) => {
      const hn = family === 'gpt' ? layerNorm(x, T, E, p[norm], p['final_norm.shift']) : rmsNorm(x, T, E, p[norm]);
      const logits = linearJs(hn, T, E, V, p['out_head.weight'], null);
      for (let t = 0; t < T; t++) {
        const row = logits.subarray(t * V, (t + 1) * V);
        const best = row.indexOf(Math.max(...row));
        const z = row.reduce((s, v) => s + Math.exp(v - row[best]), 0);
        assert.equal(lens.tokens[l * T + t], best, `layer ${l}, position ${t}`);
        assert.ok(Math.abs(lens.probabilities[l * T + t] - 1 / z) <= 1e-5, `layer ${l}, position ${t}: ${lens.probabilities[l * T + t]} vs ${1 / z}`);
      }
    });
    // Chosen positions: the same numbers; none: only the attribution.
    const some = ca.logitLens(m, IDS, { positions: [T - 1, 2] });
    for (let l = 0; l <= L; l++) {
      assert.deepEqual([...some.tokens.subarray(l * 2, l * 2 + 2)], [lens.tokens[l * T + T - 1], lens.tokens[l * T + 2]]);
      // (Another row count may round out_head's GEMM differently.)
      closeTo(some.probabilities.subarray(l * 2, l * 2 + 2), [lens.probabilities[l * T + T - 1], lens.probabilities[l * T + 2]], 1e-6, 'chosen');
    }
    const none = ca.logitLens(m, IDS, { positions: [], targets: IDS });
    assert.equal(none.tokens.length, 0);
    assert.equal(none.directLogit.length, L * H * T);
    // The model's mode is kept.
    m.train();
    ca.logitLens(m, IDS);
    assert.equal(m.training, true);
  });

  test(`${family}: direct logit attribution per head (float64), and the residual's components add up to the logit`, () => {
    const m = drawnModel(ca, family, cfg, 22);
    const p = toDouble(m.stateDict());
    const T = IDS.length;
    const targets = [...IDS.slice(1), -100];
    const ref = referenceForward(family, cfg, p, IDS, 1, T);
    const { directLogit } = ca.logitLens(m, IDS, { targets });
    assert.equal(directLogit.length, L * H * T);
    const final = ref.residual[L];
    const w = p[norm];
    const U = p['out_head.weight'];
    // The final norm's linear part at position t, applied to a component c [E].
    const through = (c, t) => {
      const x = final.subarray(t * E, (t + 1) * E);
      const centre = family === 'gpt';
      const mean = (v) => (centre ? v.reduce((s, a) => s + a, 0) / E : 0);
      const mx = mean(x);
      const scale = 1 / Math.sqrt(x.reduce((s, a) => s + (a - mx) ** 2, 0) / E + 1e-5);
      const mc = mean(c);
      let sum = 0;
      for (let e = 0; e < E; e++) sum += (c[e] - mc) * scale * w[e] * U[targets[t] * E + e];
      return sum;
    };
    for (let t = 0; t < T - 1; t++) {
      let heads = 0;
      const rest = Float64Array.from(final.subarray(t * E, (t + 1) * E));
      for (let l = 0; l < L; l++) {
        for (let h = 0; h < H; h++) {
          const c = ref.headOutputs[l].subarray((h * T + t) * E, (h * T + t + 1) * E);
          const expect = through(c, t);
          const got = directLogit[(l * H + h) * T + t];
          assert.ok(Math.abs(got - expect) <= 1e-4 * (1 + Math.abs(expect)), `layer ${l} head ${h} position ${t}: ${got} vs ${expect}`);
          heads += expect;
          for (let e = 0; e < E; e++) rest[e] -= c[e];
        }
      }
      // Heads + everything else (embeddings, biases, feed-forwards) = the logit less the final norm's shift · U.
      const shift = family === 'gpt' ? p['final_norm.shift'].reduce((s, b, e) => s + b * U[targets[t] * E + e], 0) : 0;
      const logit = ref.logits[t * V + targets[t]];
      assert.ok(Math.abs(heads + through(rest, t) + shift - logit) <= 1e-9 * (1 + Math.abs(logit)), `position ${t}`);
    }
    for (let i = 0; i < L * H; i++) assert.equal(directLogit[i * T + T - 1], 0, 'target -100: no attribution');
  });

  test(`${family}: a head's circuits over chosen tokens, norms' scales folded (float64)`, () => {
    const m = drawnModel(ca, family, cfg, 23);
    const p = toDouble(m.stateDict());
    const tokens = [5, 0, 7, 5];
    const n = tokens.length;
    const layer = 1;
    const head = 2;
    const w1 = p[`trf_blocks.${layer}.norm1.${family === 'gpt' ? 'scale' : 'weight'}`];
    const att = m.trfBlocks.at(layer).att;
    const A = Float64Array.from({ length: n * E }, (_, i) => p['tok_emb.weight'][tokens[Math.floor(i / E)] * E + (i % E)] * w1[i % E]);
    const U = Float64Array.from({ length: n * E }, (_, i) => p['out_head.weight'][tokens[Math.floor(i / E)] * E + (i % E)] * p[norm][i % E]);
    const c = ca.headCircuits(m, layer, head, tokens);
    closeTo(c.qk, matmul(matmul(A, Float64Array.from(att.qkCircuit(head)), n, E, E), transpose(A, n, E), n, E, n), 1e-4, 'qk');
    closeTo(c.ov, matmul(matmul(A, Float64Array.from(att.ovCircuit(head)), n, E, E), transpose(U, n, E), n, E, n), 1e-4, 'ov');
    assert.equal(c.qk[0], c.qk[3 * n + 3], 'the same token twice: the same row and column');
    if (family === 'gpt') {
      const P = Float64Array.from({ length: n * E }, (_, i) => p['pos_emb.weight'][i] * w1[i % E]);
      closeTo(c.qkPositions, matmul(matmul(P, Float64Array.from(att.qkCircuit(head)), n, E, E), transpose(P, n, E), n, E, n), 1e-4, 'positions');
    } else {
      assert.equal(c.qkPositions, null);
    }
  });

  test(`${family}: composition scores with the norms' scales folded (float64)`, () => {
    const m = drawnModel(ca, family, cfg, 24);
    const [a, b] = [m.trfBlocks.at(0), m.trfBlocks.at(1)];
    const wa = a.norm1.scale ?? a.norm1.weight;
    const wb = b.norm1.scale ?? b.norm1.weight;
    const s = ca.compositionScores(a.att, b.att, { earlierScale: wa, laterScale: wb });
    const plain = ca.compositionScores(a.att, b.att);
    const diag = (w, M, left, right) => M.map((x, i) => x * (left ? w[Math.floor(i / E)] : 1) * (right ? w[i % E] : 1));
    let differs = 0;
    for (let i = 0; i < H; i++) {
      const ovA = diag(wa, Float64Array.from(a.att.ovCircuit(i)), true, false);
      for (let j = 0; j < H; j++) {
        const qkB = diag(wb, Float64Array.from(b.att.qkCircuit(j)), true, true);
        const ovB = diag(wb, Float64Array.from(b.att.ovCircuit(j)), true, false);
        const expect = {
          q: frobenius(matmul(ovA, qkB, E, E, E)) / (frobenius(ovA) * frobenius(qkB)),
          k: frobenius(matmul(qkB, transpose(ovA, E, E), E, E, E)) / (frobenius(ovA) * frobenius(qkB)),
          v: frobenius(matmul(ovA, ovB, E, E, E)) / (frobenius(ovA) * frobenius(ovB)),
        };
        for (const kind of ['q', 'k', 'v']) {
          const got = s[kind][i * H + j];
          assert.ok(Math.abs(got - expect[kind]) <= 1e-5, `${kind}[${i}, ${j}]: ${got} vs ${expect[kind]}`);
          differs = Math.max(differs, Math.abs(got - plain[kind][i * H + j]));
        }
      }
    }
    assert.ok(differs > 1e-3, 'folding the drawn scales changes the scores');
  });
}

test('bad arguments name what is wrong', () => {
  const m = drawnModel(ca, 'gpt', CONFIGS.gpt, 1);
  const att = m.trfBlocks.at(0).att;
  assert.throws(() => ca.logitLens(att, [1]), /model must be a GPTModel or Llama3Model/);
  assert.throws(() => ca.logitLens(m, []), /idx must hold at least one token/);
  assert.throws(() => ca.logitLens(m, [1, 2], { targets: [1] }), /options.targets must have idx's length 2, got length 1/);
  assert.throws(() => ca.logitLens(m, [1, 2], { targets: [1, 23] }), /options.targets\[1\] must be an integer in \[0, 23\) \(or -100\)/);
  assert.throws(() => ca.logitLens(m, [1], { target: [1] }), /target/);
  assert.throws(() => ca.logitLens(m, [1, 2], { positions: [2] }), /options.positions\[0\] must be an integer in \[0, 2\)/);
  assert.throws(() => ca.headCircuits(m, 2, 0, [1]), /layer must be below nLayers 2, got 2/);
  assert.throws(() => ca.headCircuits(m, 0, 4, [1]), /head must be below nHeads 4, got 4/);
  assert.throws(() => ca.headCircuits(m, 0, 0, [99]), /tokens\[0\] must be an integer in \[0, 23\)/);
  assert.throws(() => ca.compositionScores(att, att, { laterScale: new Float32Array(3) }),
    /options.laterScale must have length 16 \(the module's dIn 16\), got length 3/);
});
