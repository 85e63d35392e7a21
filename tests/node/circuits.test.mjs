// Circuit arithmetic (bindings/nn/circuits.mjs): a head's QK circuit gives
// the module's own raw scores, its OV circuit its own output, and the
// composition scores equal the Frobenius ratios of the full dIn × dIn
// products computed in float64 — on MultiHeadAttention and
// GroupedQueryAttention; bad arguments are clear errors.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { init } from 'causal-attention';
import { closeTo, frobenius, matmul, transpose } from './model-reference.mjs';

const ca = await init();

const rand = (n, seed) => {
  let s = seed;
  return Float32Array.from({ length: n }, () => ((s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 2 ** 32) - 0.5);
};


test('a head\'s QK circuit gives its raw scores, its OV circuit its output (MultiHeadAttention)', () => {
  ca.manualSeed(4);
  const [d, H, T] = [12, 3, 5];
  const mha = new ca.MultiHeadAttention(d, d, 8, 0, H, false).eval();
  const x = rand(T * d, 9);
  const r = mha.forward(x, [1, T, d], { returnScores: true, returnWeights: true, returnHeadOutputs: true });
  for (let h = 0; h < H; h++) {
    const qk = mha.qkCircuit(h);
    assert.equal(qk.length, d * d);
    const scores = matmul(matmul(x, qk, T, d, d), transpose(x, T, d), T, d, T);
    closeTo(r.scores.subarray(h * T * T, (h + 1) * T * T), scores, 1e-5, `head ${h} scores`);
    // Head output = Σ_j w_ij · x_j · W_OV.
    const xo = matmul(x, mha.ovCircuit(h), T, d, d);
    const out = matmul(r.weights.subarray(h * T * T, (h + 1) * T * T), xo, T, T, d);
    closeTo(r.headOutputs.subarray(h * T * d, (h + 1) * T * d), out, 1e-5, `head ${h} output`);
  }
});

test('GroupedQueryAttention: the circuits use each head\'s key/value group', () => {
  ca.manualSeed(6);
  const [d, H, G, T] = [16, 4, 2, 3];
  const gqa = new ca.GroupedQueryAttention(d, d, H, G, { contextLength: 8 }).eval();
  const x = rand(T * d, 3);
  const r = gqa.forward(x, [1, T, d], { returnScores: true, returnWeights: true, returnHeadOutputs: true });
  for (let h = 0; h < H; h++) {
    // RoPE leaves position 0 unrotated: the score of query 0 and key 0.
    const qk = gqa.qkCircuit(h);
    const s00 = matmul(matmul(x.subarray(0, d), qk, 1, d, d), transpose(x.subarray(0, d), 1, d), 1, d, 1)[0];
    assert.ok(Math.abs(r.scores[h * T * T] - s00) <= 1e-5 * (1 + Math.abs(s00)), `head ${h}: ${r.scores[h * T * T]} vs ${s00}`);
    const xo = matmul(x, gqa.ovCircuit(h), T, d, d);
    const out = matmul(r.weights.subarray(h * T * T, (h + 1) * T * T), xo, T, T, d);
    closeTo(r.headOutputs.subarray(h * T * d, (h + 1) * T * d), out, 1e-5, `head ${h} output`);
  }
});

test('composition scores equal the Frobenius ratios of the full products', () => {
  ca.manualSeed(8);
  const d = 16;
  const earlier = new ca.MultiHeadAttention(d, d, 8, 0, 4, true);
  for (const later of [new ca.MultiHeadAttention(d, d, 8, 0, 2, true), new ca.GroupedQueryAttention(d, d, 4, 2, { contextLength: 8 })]) {
    const { q, k, v } = ca.compositionScores(earlier, later);
    const Ha = earlier.numHeads;
    const Hb = later.numHeads;
    assert.equal(q.length, Ha * Hb);
    for (let a = 0; a < Ha; a++) {
      const ovA = Float64Array.from(earlier.ovCircuit(a));
      for (let b = 0; b < Hb; b++) {
        const qkB = Float64Array.from(later.qkCircuit(b));
        const ovB = Float64Array.from(later.ovCircuit(b));
        const expectQ = frobenius(matmul(ovA, qkB, d, d, d)) / (frobenius(ovA) * frobenius(qkB));
        const expectK = frobenius(matmul(qkB, transpose(ovA, d, d), d, d, d)) / (frobenius(ovA) * frobenius(qkB));
        const expectV = frobenius(matmul(ovA, ovB, d, d, d)) / (frobenius(ovA) * frobenius(ovB));
        for (const [name, got, expect] of [['q', q, expectQ], ['k', k, expectK], ['v', v, expectV]]) {
          const value = got[a * Hb + b];
          assert.ok(Math.abs(value - expect) <= 1e-5, `${name}[${a}, ${b}]: ${value} vs ${expect}`);
          assert.ok(value >= 0 && value <= 1);
        }
      }
    }
  }
});

test('circuits: bad arguments are clear errors', () => {
  const mha = new ca.MultiHeadAttention(8, 8, 8, 0, 2);
  assert.throws(() => mha.qkCircuit(2), /head must be below numHeads 2, got 2/);
  assert.throws(() => mha.ovCircuit(-1), RangeError);
  assert.throws(() => new ca.CausalAttention(4, 4, 8, 0).qkCircuit(0), /attention module with out_proj/);
  assert.throws(() => ca.compositionScores(mha, {}), /later must be an attention module with out_proj/);
  assert.throws(() => ca.compositionScores(mha, new ca.MultiHeadAttention(6, 6, 8, 0, 2)), /output width 8 must be the later module's dIn 6/);
  assert.equal(mha.qkCircuit(1).length, 64);
});
