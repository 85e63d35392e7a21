// The book's chapter-4 GPTModel and its Llama 3.2 (Llama3Model) against a
// float64 reference written here from the book's code: logits within
// 1e-5·(1 + |ref|), gradients against the reference's central finite
// differences within 1e-4·(1 + |ref|), greedy generation with and without
// the KV caches, seeded sampling, the book's parameter count, the state-dict
// names, and the errors.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { init } from 'causal-attention';
import { closeTo, crossEntropy64, drawnModel, gelu, layerNorm, referenceForward, rmsNorm, silu, toDouble } from './model-reference.mjs';

const ca = await init();

const GPT_SMALL = { vocab_size: 37, context_length: 12, emb_dim: 16, n_heads: 4, n_layers: 2, drop_rate: 0.0, qkv_bias: true };
const LLAMA_SMALL = {
  vocab_size: 29, context_length: 64, emb_dim: 16, n_heads: 4, n_layers: 2, hidden_dim: 24, n_kv_groups: 2,
  rope_base: 500000, rope_freq: { factor: 32, low_freq_factor: 1, high_freq_factor: 4, original_context_length: 8 },
};

/** A model with every parameter drawn (model-reference.mjs). */
const model = (family, seed) => drawnModel(ca, family, family === 'gpt' ? GPT_SMALL : LLAMA_SMALL, seed);

for (const family of ['gpt', 'llama']) {
  const cfg = family === 'gpt' ? GPT_SMALL : LLAMA_SMALL;
  const V = cfg.vocab_size;

  test(`${family}: logits and every layer's weights match the float64 reference`, () => {
    const m = model(family, 5).eval();
    const [B, T] = [2, 7];
    const ids = Int32Array.from({ length: B * T }, (_, i) => (i * 7 + 3) % V);
    const r = m.forward(ids, [B, T], { returnWeights: true });
    const ref = referenceForward(family, cfg, toDouble(m.stateDict()), ids, B, T);
    const worst = closeTo(r.logits, ref.logits, 1e-5, 'logits');
    assert.equal(r.weights.length, cfg.n_layers);
    r.weights.forEach((w, l) => closeTo(w, ref.weights[l], 1e-5, `weights of layer ${l}`));
    console.log(`${family}: largest logit error ${worst.toExponential(2)} of 1 + |ref|`);
    // Without returnWeights (another route through the fused kernel): a Float32Array of the same logits.
    closeTo(m.forward(ids, [B, T]), ref.logits, 1e-5, 'logits without weights');
  });

  test(`${family}: gradients match the float64 reference's finite differences`, () => {
    const m = model(family, 9).train();
    const [B, T] = [2, 5];
    const ids = Int32Array.from({ length: B * T }, (_, i) => (i * 5 + 1) % V);
    const targets = Int32Array.from({ length: B * T }, (_, i) => (i * 3 + 2) % V);
    const logits = /** @type {Float32Array} */ (m.forward(ids, [B, T]));
    const { loss, gradLogits } = ca.crossEntropy(logits, targets);
    assert.equal(m.backward(gradLogits), null);
    const p64 = toDouble(m.stateDict());
    const lossOf = () => crossEntropy64(referenceForward(family, cfg, p64, ids, B, T).logits, targets, V);
    assert.ok(Math.abs(loss - lossOf()) <= 1e-5 * (1 + Math.abs(loss)), 'the loss');
    const grads = m.gradients();
    let checked = 0;
    for (const [name, values] of Object.entries(p64)) {
      const grad = grads[name];
      assert.ok(grad, `${name} has a gradient`);
      // A few entries of each tensor (tok_emb: rows that the ids use).
      const picks = name === 'tok_emb.weight'
        ? [ids[0] * cfg.emb_dim, ids[3] * cfg.emb_dim + 5]
        : [0, Math.floor(values.length / 2), values.length - 1];
      for (const i of picks) {
        const h = 1e-5;
        const keep = values[i];
        values[i] = keep + h;
        const up = lossOf();
        values[i] = keep - h;
        const down = lossOf();
        values[i] = keep;
        const fd = (up - down) / (2 * h);
        assert.ok(Math.abs(grad[i] - fd) <= 1e-4 * (1 + Math.abs(fd)), `${name}[${i}]: ${grad[i]} vs ${fd}`);
        checked += 1;
      }
    }
    assert.ok(checked > 20);
  });

  test(`${family}: greedy generation with the caches equals the no-cache argmax, token by token`, () => {
    const m = model(family, 13);
    const prompt = [[1, 2, 3], [4, 5, 6]];
    const cached = m.generate(prompt, { maxNewTokens: 6 });
    const plain = m.generate(prompt, { maxNewTokens: 6, useCache: false });
    assert.deepEqual(cached, plain);
    // Each new token is the argmax of a full forward over what came before (float64 reference).
    const p64 = toDouble(m.stateDict());
    for (const row of cached) {
      for (let t = 3; t < row.length; t++) {
        const { logits } = referenceForward(family, cfg, p64, row.subarray(0, t), 1, t);
        const last = logits.subarray((t - 1) * V, t * V);
        assert.equal(row[t], last.indexOf(Math.max(...last)), `token ${t}`);
      }
    }
    // bfloat16 and int8 caches: the same call runs (values may differ slightly).
    for (const cacheDtype of ['bfloat16', 'int8']) {
      assert.equal(m.generate([1, 2, 3], { maxNewTokens: 4, cacheDtype }).length, 7);
    }
    assert.equal(m.training, true, 'generate restores the mode');
    assert.equal(m.cacheLength, 0, 'generate empties the caches');
  });

  test(`${family}: sampling is seeded and reproducible; topK 1 is greedy; eosId stops`, () => {
    const m = model(family, 17);
    const a = m.generate([1, 2], { maxNewTokens: 8, temperature: 1.5, topK: 10, topP: 0.9, seed: 42 });
    const b = m.generate([1, 2], { maxNewTokens: 8, temperature: 1.5, topK: 10, topP: 0.9, seed: 42 });
    assert.deepEqual(a, b);
    const greedy = m.generate([1, 2], { maxNewTokens: 8 });
    assert.deepEqual(m.generate([1, 2], { maxNewTokens: 8, temperature: 2, topK: 1, seed: 1 }), greedy);
    // A tiny temperature is greedy; topK 3: every token among the 3 largest logits of the reference at its step.
    assert.deepEqual(m.generate([1, 2], { maxNewTokens: 8, temperature: 1e-6, seed: 3 }), greedy);
    const p64 = toDouble(m.stateDict());
    for (const seed of [1, 2, 3]) {
      const row = m.generate([1, 2], { maxNewTokens: 6, temperature: 5, topK: 3, seed });
      for (let t = 2; t < row.length; t++) {
        const { logits } = referenceForward(family, cfg, p64, row.subarray(0, t), 1, t);
        const last = Array.from(logits.subarray((t - 1) * V, t * V));
        const third = [...last].sort((x, y) => y - x)[2];
        assert.ok(last[row[t]] >= third - 1e-5, `token ${t} (seed ${seed}) is among the top 3`);
      }
    }
    // A high temperature over the whole vocabulary visits many tokens.
    const spread = m.generate([1], { maxNewTokens: 40, temperature: 100, seed: 9, useCache: false });
    assert.ok(new Set(spread).size > 10, `distinct tokens ${new Set(spread).size}`);
    const stop = m.generate([1, 2], { maxNewTokens: 8, eosId: greedy[4] });
    assert.deepEqual(stop, greedy.slice(0, greedy.indexOf(greedy[4], 2) + 1));
  });

  test(`${family}: keyLengths and masks reach every layer: a padded batch row equals the row alone`, () => {
    const m = model(family, 19).eval();
    const T = 6;
    const a = [3, 1, 4, 1, 5, 9];
    const b = [2, 6, 5, 0, 0, 0]; // 3 tokens, then padding
    const batch = m.forward([...a, ...b], [2, T], { keyLengths: [6, 3] });
    const alone = m.forward(b.slice(0, 3), [1, 3]);
    closeTo(batch.subarray(T * V, (T + 3) * V), alone, 1e-5, 'the padded row\'s real tokens');
    closeTo(batch.subarray(0, T * V), m.forward(a, [1, T]), 1e-5, 'the full row');
    // A boolean mask hiding keys 3.. from every query: the same as keyLengths 3.
    const mask = new Uint8Array(T).map((_, j) => (j < 3 ? 1 : 0));
    const masked = m.forward(b, [1, T], { mask, maskShape: [T] });
    closeTo(masked.subarray(0, 3 * V), alone, 1e-5, 'the masked row');
  });

  test(`${family}: bad calls are clear errors and the model keeps working`, () => {
    const m = model(family, 21).eval();
    assert.throws(() => m.forward([V], [1, 1]), RangeError);
    assert.throws(() => m.forward([1, 2, 3], [2, 2]), /idx must have length 4/);
    assert.throws(() => m.forward(new Int32Array(cfg.context_length + 1), [1, cfg.context_length + 1]), /contextLength/);
    assert.throws(() => m.forward([1], [1, 1], { bogus: 1 }), /bogus/);
    assert.throws(() => m.forward([1], [1, 1], { headMask: new Float32Array(3) }), /headMask/);
    assert.throws(() => m.generate([1, 2], { maxNewTokens: cfg.context_length }), /contextLength/);
    assert.throws(() => m.generate([1, 2], { maxNewTokens: 2, temperature: -1 }), /temperature/);
    assert.throws(() => m.generate([[1, 2], [3]], { maxNewTokens: 2 }), /idx\[1\]/);
    assert.throws(() => m.backward(new Float32Array(V)), /training mode/);
    // A NaN weight: generate says so instead of picking token 0.
    const broken = model(family, 22).eval();
    broken.outHead.weight[0] = NaN;
    assert.throws(() => broken.generate([1, 2], { maxNewTokens: 2 }), /logits hold NaN/);
    assert.equal(m.forward([1, 2], [1, 2]).length, 2 * V);
    // A head mask of zeros for every layer: the attention adds nothing; ones change nothing.
    const ones = new Float32Array(cfg.n_layers * cfg.n_heads).fill(1);
    assert.deepEqual(m.forward([1, 2], [1, 2], { headMask: ones }), m.forward([1, 2], [1, 2]));
  });
}

test('GPTModel(GPT_CONFIG_124M) has the book\'s 163,009,536 parameters and its state-dict names', () => {
  const GPT_CONFIG_124M = {
    vocab_size: 50257, context_length: 1024, emb_dim: 768, n_heads: 12, n_layers: 12, drop_rate: 0.1, qkv_bias: false,
  };
  ca.manualSeed(123);
  const m = new ca.GPTModel(GPT_CONFIG_124M);
  assert.equal(m.parameters().reduce((s, p) => s + p.data.length, 0), 163_009_536);
  const names = m.namedParameters().map(([n]) => n);
  assert.deepEqual(names.slice(0, 13), [
    'tok_emb.weight', 'pos_emb.weight',
    'trf_blocks.0.att.W_query.weight', 'trf_blocks.0.att.W_key.weight', 'trf_blocks.0.att.W_value.weight',
    'trf_blocks.0.att.out_proj.weight', 'trf_blocks.0.att.out_proj.bias',
    'trf_blocks.0.ff.layers.0.weight', 'trf_blocks.0.ff.layers.0.bias',
    'trf_blocks.0.ff.layers.2.weight', 'trf_blocks.0.ff.layers.2.bias',
    'trf_blocks.0.norm1.scale', 'trf_blocks.0.norm1.shift',
  ]);
  assert.deepEqual(names.slice(-3), ['final_norm.scale', 'final_norm.shift', 'out_head.weight']);
  // The token embedding is drawn first: the book's torch.manual_seed(123) table, as ca.Embedding gives it.
  ca.manualSeed(123);
  assert.deepEqual(m.tokEmb.weight.subarray(0, 8), new ca.Embedding(50257, 768).weight.subarray(0, 8));
});

test('Llama3Model takes the bonus\'s config (dtype ignored) and names', () => {
  const m = new ca.Llama3Model({ ...LLAMA_SMALL, dtype: 'bfloat16' });
  const names = m.namedParameters().map(([n]) => n);
  for (const n of ['tok_emb.weight', 'trf_blocks.1.att.W_query.weight', 'trf_blocks.1.ff.fc3.weight',
    'trf_blocks.1.norm2.weight', 'final_norm.weight', 'out_head.weight']) assert.ok(names.includes(n), n);
  assert.throws(() => new ca.Llama3Model({ ...LLAMA_SMALL, n_kv_groups: 3 }), /numKVGroups/);
  assert.throws(() => new ca.Llama3Model({ ...LLAMA_SMALL, hidden: 3 }), /hidden/);
  assert.throws(() => new ca.GPTModel({ ...GPT_SMALL, emb_dim: 15 }), /divisible/);
  assert.throws(() => new ca.GPTModel({ ...GPT_SMALL, n_layers: undefined }), /n_layers/);
});

test('LayerNorm, RMSNorm, GELU and SiLU modules against float64, with gradients', () => {
  const rows = 3;
  const d = 37;
  const x = Float32Array.from({ length: rows * d }, (_, i) => Math.sin(i * 1.3) * 3 + (i % 5));
  const g = Float32Array.from({ length: rows * d }, (_, i) => Math.cos(i * 0.7));
  const ln = new ca.LayerNorm(d);
  ln.scale.forEach((_, i) => { ln.scale[i] = 1 + 0.01 * i; });
  closeTo(ln.forward(x, [rows, d]), layerNorm(x, rows, d, ln.scale, ln.shift), 2e-6, 'LayerNorm');
  const gx = ln.backward(g);
  // d/dx of Σ g · LayerNorm(x), by central differences in double.
  for (const i of [0, 17, rows * d - 1]) {
    const f = (delta) => {
      const xx = Float64Array.from(x);
      xx[i] += delta;
      return layerNorm(xx, rows, d, ln.scale, ln.shift).reduce((s, y, j) => s + y * g[j], 0);
    };
    const fd = (f(1e-6) - f(-1e-6)) / 2e-6;
    assert.ok(Math.abs(gx[i] - fd) <= 1e-4 * (1 + Math.abs(fd)), `LayerNorm grad ${i}: ${gx[i]} vs ${fd}`);
  }
  const rms = new ca.RMSNorm(d, { eps: 1e-6 });
  closeTo(rms.forward(x, [rows, d]), rmsNorm(x, rows, d, rms.weight, 1e-6), 2e-6, 'RMSNorm');
  assert.equal(rms.backward(g).length, rows * d);
  assert.ok(rms.weightGrad && rms.weightGrad.some((v) => v !== 0));
  closeTo(new ca.GELU().forward(x), Array.from(x, gelu), 1e-6, 'GELU');
  closeTo(new ca.SiLU().forward(x), Array.from(x, silu), 2e-6, 'SiLU');
  assert.throws(() => new ca.LayerNorm(d).forward(x, [rows, d + 1]), /embDim 37/);
  assert.throws(() => new ca.RMSNorm(d, { eps: 0 }), /eps/);
  assert.throws(() => new ca.GELU().forward([1, 2]), TypeError);
});
