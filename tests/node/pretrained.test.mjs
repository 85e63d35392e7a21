// ca.loadPretrained on real files: small random models of both families
// written as Hugging Face checkpoints (config.json + .safetensors with the
// hub's tensor names and layouts: GPT-2's fused c_attn and Conv1D [in, out]
// weights, Llama's q/k/v/o, gate/up/down), in F32 and BF16, one file or
// shards; loaded back, the model computes the same logits as the one the
// file was written from. Every loader error is a clear error naming what is
// wrong, and nothing is half loaded.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { init } from 'causal-attention';
import { writeSafetensors } from '../../bindings/models/safetensors.mjs';

const ca = await init();

const GPT2_CONFIG = {
  model_type: 'gpt2', vocab_size: 41, n_positions: 16, n_embd: 12, n_head: 3, n_layer: 2, layer_norm_epsilon: 1e-5,
};
const LLAMA_CONFIG = {
  model_type: 'llama', vocab_size: 33, max_position_embeddings: 64, hidden_size: 16, num_attention_heads: 4,
  num_hidden_layers: 2, intermediate_size: 24, num_key_value_heads: 2, rope_theta: 500000, rms_norm_eps: 1e-5,
  tie_word_embeddings: true,
  rope_scaling: { rope_type: 'llama3', factor: 32, low_freq_factor: 1, high_freq_factor: 4, original_max_position_embeddings: 8 },
};

/** [rows, cols] → [cols, rows]. */
function transpose(m, rows, cols) {
  const t = new Float32Array(m.length);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) t[c * rows + r] = m[r * cols + c];
  return t;
}

/** A GPTModel's state dict as GPT-2's hub tensors (the inverse of load_weights_into_gpt). */
function gpt2Tensors(model, cfg) {
  const sd = model.stateDict();
  const E = cfg.n_embd;
  const t = {
    'wte.weight': { shape: [cfg.vocab_size, E], data: sd['tok_emb.weight'] },
    'wpe.weight': { shape: [cfg.n_positions, E], data: sd['pos_emb.weight'] },
  };
  for (let l = 0; l < cfg.n_layer; l++) {
    const b = `trf_blocks.${l}.`;
    const qkv = new Float32Array(3 * E * E);
    ['W_query', 'W_key', 'W_value'].forEach((n, part) => {
      const wt = transpose(sd[`${b}att.${n}.weight`], E, E); // [in, out]
      for (let r = 0; r < E; r++) qkv.set(wt.subarray(r * E, (r + 1) * E), r * 3 * E + part * E);
    });
    t[`h.${l}.attn.c_attn.weight`] = { shape: [E, 3 * E], data: qkv };
    t[`h.${l}.attn.c_attn.bias`] = {
      shape: [3 * E], data: Float32Array.from([...sd[`${b}att.W_query.bias`], ...sd[`${b}att.W_key.bias`], ...sd[`${b}att.W_value.bias`]]),
    };
    t[`h.${l}.attn.c_proj.weight`] = { shape: [E, E], data: transpose(sd[`${b}att.out_proj.weight`], E, E) };
    t[`h.${l}.attn.c_proj.bias`] = { shape: [E], data: sd[`${b}att.out_proj.bias`] };
    t[`h.${l}.mlp.c_fc.weight`] = { shape: [E, 4 * E], data: transpose(sd[`${b}ff.layers.0.weight`], 4 * E, E) };
    t[`h.${l}.mlp.c_fc.bias`] = { shape: [4 * E], data: sd[`${b}ff.layers.0.bias`] };
    t[`h.${l}.mlp.c_proj.weight`] = { shape: [4 * E, E], data: transpose(sd[`${b}ff.layers.2.weight`], E, 4 * E) };
    t[`h.${l}.mlp.c_proj.bias`] = { shape: [E], data: sd[`${b}ff.layers.2.bias`] };
    t[`h.${l}.ln_1.weight`] = { shape: [E], data: sd[`${b}norm1.scale`] };
    t[`h.${l}.ln_1.bias`] = { shape: [E], data: sd[`${b}norm1.shift`] };
    t[`h.${l}.ln_2.weight`] = { shape: [E], data: sd[`${b}norm2.scale`] };
    t[`h.${l}.ln_2.bias`] = { shape: [E], data: sd[`${b}norm2.shift`] };
    // The causal-mask buffer GPT-2 files carry (ignored by the loader).
    t[`h.${l}.attn.bias`] = { shape: [1, 1, cfg.n_positions, cfg.n_positions], data: new Float32Array(cfg.n_positions ** 2) };
  }
  t['ln_f.weight'] = { shape: [E], data: sd['final_norm.scale'] };
  t['ln_f.bias'] = { shape: [E], data: sd['final_norm.shift'] };
  return t;
}

/** A Llama3Model's state dict as the hub's Llama tensors (with the `model.` prefix). */
function llamaTensors(model, cfg, { tied }) {
  const sd = model.stateDict();
  const names = {
    'att.W_query': 'self_attn.q_proj', 'att.W_key': 'self_attn.k_proj', 'att.W_value': 'self_attn.v_proj',
    'att.out_proj': 'self_attn.o_proj', 'ff.fc1': 'mlp.gate_proj', 'ff.fc2': 'mlp.up_proj', 'ff.fc3': 'mlp.down_proj',
    norm1: 'input_layernorm', norm2: 'post_attention_layernorm',
  };
  const t = {};
  for (const [name, data] of Object.entries(sd)) {
    const p = model.namedParameters().find(([n]) => n === name)[1];
    let hub;
    if (name === 'tok_emb.weight') hub = 'model.embed_tokens.weight';
    else if (name === 'final_norm.weight') hub = 'model.norm.weight';
    else if (name === 'out_head.weight') hub = tied ? null : 'lm_head.weight';
    else {
      const [, l, rest] = name.match(/^trf_blocks\.(\d+)\.(.*)\.weight$/);
      hub = `model.layers.${l}.${names[rest]}.weight`;
    }
    if (hub) t[hub] = { shape: [...p.shape], data };
  }
  return t;
}

function randomize(model, seed) {
  let s = seed;
  const rand = () => ((s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 2 ** 32) - 0.5;
  for (const p of model.parameters()) p.data.forEach((_, i) => { p.data[i] = 0.5 * rand(); });
  return model;
}

const bf16 = (x) => {
  const b = new Uint32Array(Float32Array.of(x).buffer)[0];
  return new Float32Array(Uint32Array.of(((b + 0x7fff + ((b >>> 16) & 1)) >>> 16) << 16).buffer)[0];
};

function sameLogits(a, b, ids, tol) {
  const la = a.forward(ids, [1, ids.length]);
  const lb = b.forward(ids, [1, ids.length]);
  let worst = 0;
  for (let i = 0; i < la.length; i++) worst = Math.max(worst, Math.abs(la[i] - lb[i]) / (1 + Math.abs(la[i])));
  assert.ok(worst <= tol, `logits differ by ${worst} (tol ${tol})`);
}

test('GPT-2 files (F32 and BF16, one file or two shards) load into a GPTModel with the same logits', () => {
  const source = randomize(new ca.GPTModel({
    vocab_size: 41, context_length: 16, emb_dim: 12, n_heads: 3, n_layers: 2, qkv_bias: true,
  }), 3).eval();
  // Tied, as GPT-2's files are: the source's out_head is its token embedding.
  source.outHead.weight = source.tokEmb.weight.slice();
  const tensors = gpt2Tensors(source, GPT2_CONFIG);
  const ids = [1, 5, 9, 2, 40, 7];
  ca.manualSeed(5);
  const next = ca.rand([4]);
  ca.manualSeed(5);
  const f32 = ca.loadPretrained({ config: JSON.stringify(GPT2_CONFIG), safetensors: writeSafetensors(tensors) });
  assert.deepEqual(ca.rand([4]), next, 'loading takes no draw from the generator (no initial values are drawn)');
  assert.ok(f32 instanceof ca.GPTModel);
  assert.equal(f32.training, false);
  assert.deepEqual(f32.stateDict(), source.stateDict());
  sameLogits(source, f32, ids, 0);
  // BF16 on disk: exactly the rounded weights.
  const asBf16 = Object.fromEntries(Object.entries(tensors).map(([n, t]) => [n, { ...t, dtype: 'BF16' }]));
  const b = ca.loadPretrained({ config: GPT2_CONFIG, safetensors: writeSafetensors(asBf16).buffer });
  const w = b.trfBlocks[1].att.W_key.weight;
  source.trfBlocks[1].att.W_key.weight.forEach((x, i) => assert.equal(w[i], bf16(x)));
  // Two shards, the `transformer.` prefix on one.
  const names = Object.keys(tensors);
  const half = Math.floor(names.length / 2);
  const shard = (list, prefix) => writeSafetensors(Object.fromEntries(list.map((n) => [prefix + n, tensors[n]])));
  const sharded = ca.loadPretrained({
    config: GPT2_CONFIG, safetensors: [shard(names.slice(0, half), 'transformer.'), ca.readSafetensors(shard(names.slice(half), ''))],
  });
  sameLogits(source, sharded, ids, 0);
});

test('Llama files (tied and untied lm_head, F16) load into a Llama3Model with the same logits', () => {
  const cfg = {
    vocab_size: 33, context_length: 64, emb_dim: 16, n_heads: 4, n_layers: 2, hidden_dim: 24, n_kv_groups: 2,
    rope_base: 500000, rope_freq: { factor: 32, low_freq_factor: 1, high_freq_factor: 4, original_context_length: 8 },
  };
  const source = randomize(new ca.Llama3Model(cfg), 7).eval();
  const ids = [3, 1, 4, 1, 5, 9, 2, 6];
  const untied = ca.loadPretrained({
    config: { ...LLAMA_CONFIG, tie_word_embeddings: false }, safetensors: writeSafetensors(llamaTensors(source, LLAMA_CONFIG, { tied: false })),
  });
  assert.ok(untied instanceof ca.Llama3Model);
  sameLogits(source, untied, ids, 0);
  source.outHead.weight = source.tokEmb.weight.slice();
  const tied = ca.loadPretrained({ config: LLAMA_CONFIG, safetensors: writeSafetensors(llamaTensors(source, LLAMA_CONFIG, { tied: true })) });
  sameLogits(source, tied, ids, 0);
  // F16 on disk: close to the float32 model (11-bit mantissas).
  const half = Object.fromEntries(Object.entries(llamaTensors(source, LLAMA_CONFIG, { tied: true })).map(([n, t]) => [n, { ...t, dtype: 'F16' }]));
  sameLogits(source, ca.loadPretrained({ config: LLAMA_CONFIG, safetensors: writeSafetensors(half) }), ids, 2e-2);
  // Greedy generation runs on the loaded model.
  assert.equal(tied.generate([1, 2, 3], { maxNewTokens: 5 }).length, 8);
});

test('readSafetensors: F16 and BF16 values exactly, including subnormals, infinities, NaN and -0', () => {
  const values = Float32Array.of(0, -0, 1, -2.5, 65504, 6.103515625e-05, 5.960464477539063e-08, Infinity, -Infinity, NaN, 0.1, 1e-3);
  const back = ca.readSafetensors(writeSafetensors({ h: { dtype: 'F16', shape: [values.length], data: values } })).tensors.get('h');
  assert.equal(back.dtype, 'F16');
  assert.deepEqual(back.shape, [values.length]);
  const expect = [0, -0, 1, -2.5, 65504, 6.103515625e-05, 5.960464477539063e-08, Infinity, -Infinity, NaN, 0.0999755859375, 0.0010004043579101562];
  expect.forEach((x, i) => assert.ok(Object.is(back.data[i], x), `F16 ${values[i]} → ${back.data[i]}, expected ${x}`));
  const b = ca.readSafetensors(writeSafetensors({ b: { dtype: 'BF16', shape: [2, 6], data: values } })).tensors.get('b');
  values.forEach((x, i) => assert.ok(Object.is(b.data[i], bf16(x)) || (Number.isNaN(x) && Number.isNaN(b.data[i])), `BF16 ${x}`));
});

test('every loader error names what is wrong, and nothing is loaded', () => {
  const file = writeSafetensors({ a: { shape: [2, 3], data: new Float32Array(6) }, b: { shape: [4], data: new Float32Array(4) } });
  const header = Number(new DataView(file.buffer).getBigUint64(0, true));
  assert.throws(() => ca.readSafetensors(file.subarray(0, 5)), /at least 8 bytes \(the header length\), got 5 bytes/);
  assert.throws(() => ca.readSafetensors(file.subarray(0, 8 + header - 1)), /header length \d+ runs past the end of the file/);
  assert.throws(() => ca.readSafetensors(file.subarray(0, file.length - 4)), /tensor 'b': data_offsets \[24, 40\] must be integers with 0 <= begin <= end <= 36/);
  const withHeader = (json) => {
    const h = new TextEncoder().encode(json);
    const out = new Uint8Array(8 + h.length + 64);
    new DataView(out.buffer).setBigUint64(0, BigInt(h.length), true);
    out.set(h, 8);
    return out;
  };
  assert.throws(() => ca.readSafetensors(withHeader('{not json')), /header is not valid JSON/);
  assert.throws(() => ca.readSafetensors(withHeader('{"x":{"dtype":"F32","shape":[3,4],"data_offsets":[0,40]}}')),
    /tensor 'x': data_offsets \[0, 40\] hold 40 bytes, but shape \[3, 4\] of F32 needs 48/);
  assert.throws(() => ca.readSafetensors(withHeader('{"x":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}}')), /tensor 'x': shape\[0\] must be an integer >= 0, got -1/);
  assert.throws(() => ca.readSafetensors(withHeader('{"x":{"dtype":"Q4","shape":[1],"data_offsets":[0,4]}}')), /tensor 'x': dtype must be one of .*got the string "Q4"/);
  assert.throws(() => ca.readSafetensors(withHeader(
    '{"x":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},"y":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}}')), /overlap/);
  assert.throws(() => ca.readSafetensors('abc'), TypeError);

  const cfg = {
    vocab_size: 41, context_length: 16, emb_dim: 12, n_heads: 3, n_layers: 2, qkv_bias: true,
  };
  const tensors = gpt2Tensors(randomize(new ca.GPTModel(cfg), 1), GPT2_CONFIG);
  const load = (t, config = GPT2_CONFIG) => ca.loadPretrained({ config, safetensors: writeSafetensors(t) });
  assert.throws(() => load(tensors, { ...GPT2_CONFIG, model_type: 'bert' }), /config.model_type must be one of 'gpt2', 'llama', got the string "bert"/);
  assert.throws(() => load(tensors, '{oops'), /not JSON/);
  assert.throws(() => load(tensors, { ...GPT2_CONFIG, n_embd: undefined }), /config.n_embd must be an integer >= 1, got undefined/);
  const { 'h.1.mlp.c_fc.bias': _gone, ...missing } = tensors;
  assert.throws(() => load(missing), /missing 1 tensor: 'h.1.mlp.c_fc.bias'/);
  assert.throws(() => load({ ...tensors, 'h.7.extra': { shape: [1], data: new Float32Array(1) } }), /'h.7.extra'/);
  assert.throws(() => load({ ...tensors, 'wpe.weight': { shape: [15, 12], data: new Float32Array(180) } }),
    /'wpe.weight'.*\[15, 12\].*\[16, 12\]|'wpe.weight'.*\[16, 12\].*\[15, 12\]/);
  assert.throws(() => ca.loadPretrained({ config: GPT2_CONFIG }), /options.safetensors/);
  assert.throws(() => ca.loadPretrained({ config: GPT2_CONFIG, safetensors: [writeSafetensors(tensors), writeSafetensors(tensors)] }),
    /is in shard 0 and again in shard 1/);
  const llamaNoHead = llamaTensors(randomize(new ca.Llama3Model({
    vocab_size: 33, context_length: 64, emb_dim: 16, n_heads: 4, n_layers: 2, hidden_dim: 24, n_kv_groups: 2,
  }), 2), LLAMA_CONFIG, { tied: true });
  assert.throws(() => load(llamaNoHead, { ...LLAMA_CONFIG, tie_word_embeddings: false }), /missing 1 tensor: 'lm_head.weight'/);
  assert.throws(() => load(llamaNoHead, { ...LLAMA_CONFIG, rope_scaling: { rope_type: 'yarn' } }), /config.rope_scaling.rope_type must be 'llama3' or 'default'.*"yarn"/);
  // The runtime keeps working.
  assert.ok(load(tensors) instanceof ca.GPTModel);
});
