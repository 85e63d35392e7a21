// The interpretability hooks: each head's output (returnHeadOutputs), heads
// replaced (patchHeads), the residual stream (returnResidual) and the
// gradient at each layer's attention output (returnAttentionOutputGrads),
// on the attention modules and both models, against the float64 reference
// of model-reference.mjs: captures within 1e-5 · (1 + |ref|), patched
// logits and gradients after a patch against the reference's own patch and
// finite differences, patching with captured values bit for bit unchanged.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { init } from 'causal-attention';
import { SMALL_CONFIGS, closeTo, crossEntropy64, drawnModel, referenceForward, toDouble } from './model-reference.mjs';

const ca = await init();

const CONFIGS = SMALL_CONFIGS;

const model = (family, seed) => drawnModel(ca, family, CONFIGS[family], seed);

const values = (n, seed) => {
  let s = seed;
  return Float32Array.from({ length: n }, () => ((s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 2 ** 32) - 0.5);
};

for (const family of ['gpt', 'llama']) {
  const cfg = CONFIGS[family];
  const [B, T, E, H, V] = [2, 5, cfg.emb_dim, cfg.n_heads, cfg.vocab_size];
  const ids = Int32Array.from({ length: B * T }, (_, i) => (i * 7 + 2) % V);

  test(`${family}: the residual stream and every head's output match the float64 reference`, () => {
    const m = model(family, 3).eval();
    const r = m.forward(ids, [B, T], { returnResidual: true, returnHeadOutputs: true });
    const ref = referenceForward(family, cfg, toDouble(m.stateDict()), ids, B, T);
    assert.equal(r.residual.length, cfg.n_layers + 1);
    r.residual.forEach((x, l) => closeTo(x, ref.residual[l], 1e-5, `residual ${l}`));
    r.headOutputs.forEach((h, l) => closeTo(h, ref.headOutputs[l], 1e-5, `head outputs of layer ${l}`));
    closeTo(r.logits, ref.logits, 1e-5, 'logits');
    assert.deepEqual(r.weights, [], 'no weights without returnWeights');
  });

  test(`${family}: patching heads matches the reference's patch; captured values change nothing, bit for bit`, () => {
    const m = model(family, 5).eval();
    const captured = m.forward(ids, [B, T], { returnHeadOutputs: true });
    // Layer 0: heads 1 and 3 replaced by given values; layer 1: head 0 at positions 1 and 3 only.
    const patches = [
      { layer: 0, heads: [1, 3], values: values(B * 2 * T * E, 11) },
      { layer: 1, heads: [0], values: values(B * T * E, 12), positions: [1, 3] },
    ];
    const patched = m.forward(ids, [B, T], { patchHeads: patches });
    const ref = referenceForward(family, cfg, toDouble(m.stateDict()), ids, B, T, [patches[0], patches[1]]);
    closeTo(patched, ref.logits, 1e-5, 'patched logits');
    // The same heads' captured outputs as patches: the same bits as patching any other set with its own.
    const own = (layer, heads) => {
      const all = captured.headOutputs[layer];
      const v = new Float32Array(B * heads.length * T * E);
      heads.forEach((h, k) => {
        for (let b = 0; b < B; b++) v.set(all.subarray(((b * H + h) * T) * E, ((b * H + h + 1) * T) * E), ((b * heads.length + k) * T) * E);
      });
      return { layer, heads, values: v };
    };
    const a = m.forward(ids, [B, T], { patchHeads: [own(0, [0, 1, 2, 3]), own(1, [2])] });
    const b = m.forward(ids, [B, T], { patchHeads: [own(0, []), own(1, [])] });
    const c = m.forward(ids, [B, T], { patchHeads: [own(1, [0, 3])] });
    assert.deepEqual(a, b);
    assert.deepEqual(c, b);
    closeTo(b, captured.logits, 1e-5, 'the patch path against the fused forward');
  });

  test(`${family}: gradients after a patch and the attention-output gradients match finite differences`, () => {
    const m = model(family, 7).train();
    const targets = Int32Array.from({ length: B * T }, (_, i) => (i * 3 + 1) % V);
    const patches = [{ layer: 0, heads: [2], values: values(B * T * E, 21) }];
    const logits = m.forward(ids, [B, T], { patchHeads: patches });
    const { gradLogits } = ca.crossEntropy(logits, targets);
    const { attentionOutputGrads } = m.backward(gradLogits, { returnAttentionOutputGrads: true });
    const p64 = toDouble(m.stateDict());
    const loss = (patch = patches) => crossEntropy64(referenceForward(family, cfg, p64, ids, B, T, patch).logits, targets, V);
    const grads = m.gradients();
    for (const name of ['trf_blocks.0.att.W_query.weight', 'trf_blocks.0.att.out_proj.weight', 'trf_blocks.1.att.W_value.weight',
      'tok_emb.weight']) {
      const values64 = p64[name];
      for (const i of name === 'tok_emb.weight' ? [ids[0] * E + 3] : [0, 37, values64.length - 1]) {
        const keep = values64[i];
        values64[i] = keep + 1e-5;
        const up = loss();
        values64[i] = keep - 1e-5;
        const down = loss();
        values64[i] = keep;
        const fd = (up - down) / 2e-5;
        assert.ok(Math.abs(grads[name][i] - fd) <= 1e-4 * (1 + Math.abs(fd)), `${name}[${i}]: ${grads[name][i]} vs ${fd}`);
      }
    }
    // out_proj's columns of the patched head get no gradient (its output is given).
    const hd = E / H;
    const gradOut = grads['trf_blocks.0.att.out_proj.weight'];
    for (let o = 0; o < E; o++) for (let e = 0; e < hd; e++) assert.equal(gradOut[o * E + 2 * hd + e], 0);
    // The attribution identity: d loss / d ε of head h's output moved by ε·D = Σ attentionOutputGrads · D.
    assert.equal(attentionOutputGrads.length, cfg.n_layers);
    const D = values(B * T * E, 31);
    const base = referenceForward(family, cfg, p64, ids, B, T, patches).headOutputs[1];
    const shifted = (eps) => {
      const v = new Float64Array(B * T * E);
      for (let b = 0; b < B; b++) for (let i = 0; i < T * E; i++) v[b * T * E + i] = base[((b * H + 1) * T) * E + i] + eps * D[b * T * E + i];
      return loss([patches[0], { layer: 1, heads: [1], values: v }]);
    };
    const fd = (shifted(1e-5) - shifted(-1e-5)) / 2e-5;
    const estimate = attentionOutputGrads[1].reduce((sum, g, i) => sum + g * D[i], 0);
    assert.ok(Math.abs(estimate - fd) <= 1e-4 * (1 + Math.abs(fd)), `attribution ${estimate} vs ${fd}`);
  });
}

test('module level: head outputs add up to the output; errors name what is wrong; the module keeps working', () => {
  ca.manualSeed(1);
  const mha = new ca.MultiHeadAttention(8, 12, 16, 0, 3, true).eval();
  const x = values(2 * 6 * 8, 4);
  const r = mha.forward(x, [2, 6, 8], { returnHeadOutputs: true });
  assert.equal(r.headOutputs.length, 2 * 3 * 6 * 12);
  const sum = new Float64Array(2 * 6 * 12);
  for (let b = 0; b < 2; b++) for (let h = 0; h < 3; h++) for (let i = 0; i < 6 * 12; i++) {
    sum[b * 72 + i] += r.headOutputs[((b * 3 + h) * 6) * 12 + i];
  }
  for (let i = 0; i < sum.length; i++) sum[i] += mha.outProj.bias[i % 12];
  closeTo(r.output, sum, 1e-5, 'bias + Σ head outputs');
  // A head masked out writes zeros.
  const masked = mha.forward(x, [2, 6, 8], { returnHeadOutputs: true, headMask: new Float32Array([1, 0, 1]) });
  assert.ok(masked.headOutputs.subarray(72, 144).every((v) => v === 0));
  // patchHeads writes into options.out too.
  const out = new Float32Array(2 * 6 * 12);
  const patched = mha.forward(x, [2, 6, 8], { out, patchHeads: { heads: [1], values: new Float32Array(2 * 6 * 12) } });
  assert.equal(patched, out);
  closeTo(out, masked.output, 1e-5, 'a head patched with zeros = the head masked out');

  assert.throws(() => new ca.CausalAttention(4, 4, 8, 0).forward(values(8, 1), [2, 4], { returnHeadOutputs: true }),
    /need a module with out_proj .* CausalAttention has none/);
  assert.throws(() => mha.forward(x, [2, 6, 8], { returnHeadOutputs: true, useCache: true }), /not taken with useCache/);
  assert.throws(() => mha.forward(x, [2, 6, 8], { patchHeads: { heads: [3], values: new Float32Array(144) } }),
    /heads\[0\] must be below numHeads 3, got 3/);
  assert.throws(() => mha.forward(x, [2, 6, 8], { patchHeads: { heads: [0, 0], values: new Float32Array(288) } }), /head 0 twice/);
  assert.throws(() => mha.forward(x, [2, 6, 8], { patchHeads: { heads: [0], values: new Float32Array(10) } }),
    /options.patchHeads.values must have length 144/);
  assert.throws(() => mha.forward(x, [2, 6, 8], { patchHeads: { heads: [0], values: new Float32Array(144), positions: [6] } }),
    /positions\[0\] must be below tokens 6/);
  const m = model('gpt', 1);
  assert.throws(() => m.forward([1, 2], [1, 2], { patchHeads: [{ layer: 2, heads: [], values: new Float32Array(0) }] }),
    /layer must be below nLayers 2/);
  assert.throws(() => m.forward([1, 2], [1, 2], { patchHeads: {} }), /must be an Array/);
  assert.throws(() => m.backward(new Float32Array(2 * 23), { bogus: true }), /unknown option 'bogus'/);
  assert.equal(mha.forward(x, [2, 6, 8]).length, 144);
});
