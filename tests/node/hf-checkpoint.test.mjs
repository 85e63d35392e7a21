// bindings/models/hf-checkpoint.mjs: tiny random Hugging Face checkpoints
// (written to real safetensors files and read back) mapped to the book's
// names; every transposed and split weight is checked element by element
// against index formulas written here, and every mismatch between config
// and tensors is refused by name.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { mapCheckpoint } from '../../bindings/models/hf-checkpoint.mjs';
import { readSafetensors, writeSafetensors } from '../../bindings/models/safetensors.mjs';
import { randomArray } from './js-reference.mjs';

/** name → [shape] as Hugging Face stores them → random tensors, each with its own seed. */
function randomTensors(shapes, dtype = 'F32') {
  let seed = 1;
  return Object.fromEntries(Object.entries(shapes).map(([name, shape]) => {
    const n = shape.reduce((a, b) => a * b, 1);
    return [name, { dtype, shape, data: randomArray(n, seed++) }];
  }));
}

/** Written to a file and read back (values as the file holds them). */
const throughFile = (tensors) => readSafetensors(writeSafetensors(tensors));

/** A [rows, cols] row-major matrix's element. */
const el = (t, r, c) => t.data[r * t.shape[1] + c];

const GPT2 = { model_type: 'gpt2', vocab_size: 11, n_positions: 7, n_embd: 8, n_head: 2, n_layer: 2, layer_norm_epsilon: 1e-5, activation_function: 'gelu_new' };

function gpt2Shapes({ vocab_size: V, n_positions: P, n_embd: E, n_layer: L } = GPT2) {
  const s = { 'wte.weight': [V, E], 'wpe.weight': [P, E], 'ln_f.weight': [E], 'ln_f.bias': [E] };
  for (let b = 0; b < L; b++) {
    Object.assign(s, {
      [`h.${b}.ln_1.weight`]: [E], [`h.${b}.ln_1.bias`]: [E], [`h.${b}.ln_2.weight`]: [E], [`h.${b}.ln_2.bias`]: [E],
      [`h.${b}.attn.c_attn.weight`]: [E, 3 * E], [`h.${b}.attn.c_attn.bias`]: [3 * E],
      [`h.${b}.attn.c_proj.weight`]: [E, E], [`h.${b}.attn.c_proj.bias`]: [E],
      [`h.${b}.mlp.c_fc.weight`]: [E, 4 * E], [`h.${b}.mlp.c_fc.bias`]: [4 * E],
      [`h.${b}.mlp.c_proj.weight`]: [4 * E, E], [`h.${b}.mlp.c_proj.bias`]: [E],
    });
  }
  return s;
}

/** The book's state dict from Hugging Face's GPT-2 tensors, by index formulas. */
function checkGpt2(stateDict, hf, E, L, head) {
  const expectEqual = (name, shape, at) => {
    const t = stateDict[name];
    assert.ok(t, `${name} is there`);
    assert.deepEqual(t.shape, shape, name);
    const n = shape.reduce((a, b) => a * b, 1);
    assert.equal(t.data.length, n, name);
    for (let i = 0; i < n; i++) {
      const want = shape.length === 2 ? at(Math.floor(i / shape[1]), i % shape[1]) : at(i);
      if (t.data[i] !== want) assert.fail(`${name}[${i}] = ${t.data[i]}, want ${want}`);
    }
  };
  const vec = (name) => (i) => hf.get(name).data[i];
  expectEqual('tok_emb.weight', [11, E], (r, c) => el(hf.get('wte.weight'), r, c));
  expectEqual('pos_emb.weight', [7, E], (r, c) => el(hf.get('wpe.weight'), r, c));
  expectEqual('out_head.weight', [11, E], (r, c) => el(hf.get(head), r, c));
  for (let b = 0; b < L; b++) {
    const h = (n) => hf.get(`h.${b}.${n}`);
    ['W_query', 'W_key', 'W_value'].forEach((w, part) => {
      // Linear weight [out, in]: out feature o reads c_attn's column part·E + o.
      expectEqual(`trf_blocks.${b}.att.${w}.weight`, [E, E], (o, i) => el(h('attn.c_attn.weight'), i, part * E + o));
      expectEqual(`trf_blocks.${b}.att.${w}.bias`, [E], (o) => h('attn.c_attn.bias').data[part * E + o]);
    });
    expectEqual(`trf_blocks.${b}.att.out_proj.weight`, [E, E], (o, i) => el(h('attn.c_proj.weight'), i, o));
    expectEqual(`trf_blocks.${b}.att.out_proj.bias`, [E], vec(`h.${b}.attn.c_proj.bias`));
    expectEqual(`trf_blocks.${b}.ff.layers.0.weight`, [4 * E, E], (o, i) => el(h('mlp.c_fc.weight'), i, o));
    expectEqual(`trf_blocks.${b}.ff.layers.0.bias`, [4 * E], vec(`h.${b}.mlp.c_fc.bias`));
    expectEqual(`trf_blocks.${b}.ff.layers.2.weight`, [E, 4 * E], (o, i) => el(h('mlp.c_proj.weight'), i, o));
    expectEqual(`trf_blocks.${b}.ff.layers.2.bias`, [E], vec(`h.${b}.mlp.c_proj.bias`));
    expectEqual(`trf_blocks.${b}.norm1.scale`, [E], vec(`h.${b}.ln_1.weight`));
    expectEqual(`trf_blocks.${b}.norm1.shift`, [E], vec(`h.${b}.ln_1.bias`));
    expectEqual(`trf_blocks.${b}.norm2.scale`, [E], vec(`h.${b}.ln_2.weight`));
    expectEqual(`trf_blocks.${b}.norm2.shift`, [E], vec(`h.${b}.ln_2.bias`));
  }
  expectEqual('final_norm.scale', [E], vec('ln_f.weight'));
  expectEqual('final_norm.shift', [E], vec('ln_f.bias'));
  assert.equal(Object.keys(stateDict).length, 5 + 16 * L);
}

/** A copy of a Map with its names changed. */
const renamed = (map, fn) => new Map([...map].map(([k, v]) => [fn(k), v]));

describe('mapCheckpoint: gpt2', () => {
  const hf = throughFile(randomTensors(gpt2Shapes())).tensors;

  it('gives the book\'s GPT_CONFIG and load_weights_into_gpt\'s layout (tied head)', () => {
    const { family, cfg, stateDict } = mapCheckpoint(GPT2, hf);
    assert.equal(family, 'gpt2');
    assert.deepEqual(cfg, { vocab_size: 11, context_length: 7, emb_dim: 8, n_heads: 2, n_layers: 2, drop_rate: 0, qkv_bias: true, eps: 1e-5 });
    checkGpt2(stateDict, hf, 8, 2, 'wte.weight');
  });

  it('takes lm_head.weight as the head when given, the transformer. prefix, buffers of any dtype, JSON text', () => {
    const withHead = renamed(hf, (k) => `transformer.${k}`);
    withHead.set('lm_head.weight', throughFile({ x: { dtype: 'F32', shape: [11, 8], data: randomArray(88, 99) } }).tensors.get('x'));
    withHead.set('transformer.h.0.attn.bias', { dtype: 'F32', shape: [1, 1, 7, 7], data: new Float32Array(49) });
    withHead.set('transformer.h.1.attn.masked_bias', { dtype: 'BOOL', shape: [], unsupported: true });
    const { cfg, stateDict } = mapCheckpoint(JSON.stringify({ ...GPT2, layer_norm_epsilon: undefined, n_positions: undefined, n_ctx: 7 }), withHead);
    assert.equal(cfg.eps, 1e-5);
    assert.equal(cfg.context_length, 7);
    const both = new Map([...hf, ['lm_head.weight', withHead.get('lm_head.weight')]]);
    checkGpt2(stateDict, both, 8, 2, 'lm_head.weight');
    assert.notDeepEqual(stateDict['out_head.weight'].data, stateDict['tok_emb.weight'].data);
  });

  it('reads F16 and BF16 checkpoints, and shards', () => {
    const half = throughFile(randomTensors(gpt2Shapes(), 'F16')); // values as F16 holds them
    const shards = [new Map(), new Map()];
    [...half.tensors].forEach(([k, v], i) => shards[i % 2].set(k, v));
    checkGpt2(mapCheckpoint(GPT2, shards).stateDict, half.tensors, 8, 2, 'wte.weight');
    const bf = throughFile(randomTensors(gpt2Shapes(), 'BF16'));
    checkGpt2(mapCheckpoint(GPT2, [bf]).stateDict, bf.tensors, 8, 2, 'wte.weight');
    assert.ok(half.tensors.get('wte.weight').data.some((v, i) => v !== hf.get('wte.weight').data[i]), 'F16 rounded');
  });

  it('uses n_layer, n_embd and n_head: 1 layer, emb 12, 3 heads', () => {
    const config = { ...GPT2, n_embd: 12, n_head: 3, n_layer: 1 };
    const t = throughFile(randomTensors(gpt2Shapes(config))).tensors;
    checkGpt2(mapCheckpoint(config, t).stateDict, t, 12, 1, 'wte.weight');
  });
});

const LLAMA = {
  model_type: 'llama', vocab_size: 13, hidden_size: 8, num_attention_heads: 2, num_key_value_heads: 1,
  num_hidden_layers: 2, intermediate_size: 12, max_position_embeddings: 16, rms_norm_eps: 1e-5,
  rope_theta: 500000, head_dim: 4, hidden_act: 'silu', tie_word_embeddings: true,
  rope_scaling: { factor: 32, high_freq_factor: 4, low_freq_factor: 1, original_max_position_embeddings: 8192, rope_type: 'llama3' },
};

function llamaShapes({ vocab_size: V, hidden_size: E, num_key_value_heads: KV, num_hidden_layers: L, intermediate_size: H } = LLAMA, lmHead = false) {
  const kv = KV * (E / 2);
  const s = { 'model.embed_tokens.weight': [V, E], 'model.norm.weight': [E] };
  for (let l = 0; l < L; l++) {
    const p = `model.layers.${l}.`;
    Object.assign(s, {
      [`${p}self_attn.q_proj.weight`]: [E, E], [`${p}self_attn.k_proj.weight`]: [kv, E],
      [`${p}self_attn.v_proj.weight`]: [kv, E], [`${p}self_attn.o_proj.weight`]: [E, E],
      [`${p}mlp.gate_proj.weight`]: [H, E], [`${p}mlp.up_proj.weight`]: [H, E], [`${p}mlp.down_proj.weight`]: [E, H],
      [`${p}input_layernorm.weight`]: [E], [`${p}post_attention_layernorm.weight`]: [E],
    });
  }
  if (lmHead) s['lm_head.weight'] = [V, E];
  return s;
}

const LLAMA_NAMES = [
  ['self_attn.q_proj', 'att.W_query'], ['self_attn.k_proj', 'att.W_key'], ['self_attn.v_proj', 'att.W_value'],
  ['self_attn.o_proj', 'att.out_proj'], ['mlp.gate_proj', 'ff.fc1'], ['mlp.up_proj', 'ff.fc2'], ['mlp.down_proj', 'ff.fc3'],
  ['input_layernorm', 'norm1'], ['post_attention_layernorm', 'norm2'],
];

/** The book's names ← Hugging Face's, values and shapes unchanged. */
function checkLlama(stateDict, hf, L, head) {
  const same = (book, name) => {
    const t = hf.get(name);
    assert.ok(stateDict[book], `${book} is there`);
    assert.deepEqual(stateDict[book].shape, t.shape, book);
    assert.deepEqual(Array.from(stateDict[book].data), Array.from(t.data), `${book} ← ${name}`);
  };
  same('tok_emb.weight', 'model.embed_tokens.weight');
  same('final_norm.weight', 'model.norm.weight');
  same('out_head.weight', head);
  for (let l = 0; l < L; l++) {
    for (const [hfName, book] of LLAMA_NAMES) same(`trf_blocks.${l}.${book}.weight`, `model.layers.${l}.${hfName}.weight`);
  }
  assert.equal(Object.keys(stateDict).length, 3 + 9 * L);
}

describe('mapCheckpoint: llama', () => {
  for (const kv of [1, 2]) {
    for (const tied of [true, false]) {
      it(`n_kv_groups ${kv}, ${tied ? 'tied' : 'untied'} output head`, () => {
        const config = { ...LLAMA, num_key_value_heads: kv, tie_word_embeddings: tied };
        const hf = throughFile(randomTensors(llamaShapes(config, !tied), 'BF16')).tensors;
        const { family, cfg, stateDict } = mapCheckpoint(config, hf);
        assert.equal(family, 'llama');
        assert.deepEqual(cfg, {
          vocab_size: 13, context_length: 16, emb_dim: 8, n_heads: 2, n_layers: 2, hidden_dim: 12, n_kv_groups: kv,
          rope_base: 500000, rope_freq: { factor: 32, low_freq_factor: 1, high_freq_factor: 4, original_context_length: 8192 },
          eps: 1e-5, tie_word_embeddings: tied,
        });
        assert.deepEqual(stateDict[`trf_blocks.1.att.W_key.weight`].shape, [4 * kv, 8]);
        checkLlama(stateDict, hf, 2, tied ? 'model.embed_tokens.weight' : 'lm_head.weight');
      });
    }
  }

  it('names without model., rotary buffers, a tied model with lm_head, the defaults', () => {
    const config = { ...LLAMA, rope_scaling: null, rope_theta: undefined, rms_norm_eps: undefined, head_dim: undefined,
      num_key_value_heads: undefined, tie_word_embeddings: undefined };
    const hf = throughFile(randomTensors(llamaShapes({ ...LLAMA, num_key_value_heads: 2 }, true))).tensors;
    const bare = renamed(hf, (k) => k.replace(/^model\./, ''));
    bare.set('layers.0.self_attn.rotary_emb.inv_freq', { dtype: 'F32', shape: [2], data: new Float32Array(2) });
    bare.set('rotary_emb.inv_freq', { dtype: 'F32', shape: [2], data: new Float32Array(2) });
    const { cfg, stateDict } = mapCheckpoint(config, bare);
    assert.deepEqual([cfg.rope_base, cfg.rope_freq, cfg.eps, cfg.n_kv_groups, cfg.tie_word_embeddings], [10000, null, 1e-6, 2, false]);
    checkLlama(stateDict, hf, 2, 'lm_head.weight');
    const tied = mapCheckpoint({ ...config, tie_word_embeddings: true, rope_scaling: { rope_type: 'default' } }, hf);
    checkLlama(tied.stateDict, hf, 2, 'lm_head.weight');
    assert.equal(tied.cfg.rope_freq, null);
  });
});

describe('mapCheckpoint refuses, naming what is wrong', () => {
  const gpt = throughFile(randomTensors(gpt2Shapes())).tensors;
  const llama = throughFile(randomTensors(llamaShapes())).tensors;
  const without = (map, ...names) => new Map([...map].filter(([k]) => !names.includes(k)));
  const withAlso = (map, entries) => new Map([...map, ...entries]);
  const f32 = (shape) => ({ dtype: 'F32', shape, data: new Float32Array(shape.reduce((a, b) => a * b, 1)) });
  const cases = [
    ['config not JSON', '{model_type', gpt, TypeError, /^config must be a config\.json object or its JSON text, got text that is not JSON \(/],
    ['config an array', [], gpt, TypeError, 'config must be a config.json object or its JSON text, got an Array of length 0'],
    ['an unknown model_type', { ...GPT2, model_type: 'mistral' }, gpt, RangeError,
      "config.model_type must be one of 'gpt2', 'llama', got the string \"mistral\""],
    ['no model_type', { n_embd: 8 }, gpt, TypeError, "config.model_type must be one of 'gpt2', 'llama', got undefined"],
    ['a config key missing', { ...GPT2, n_embd: undefined }, gpt, TypeError, 'config.n_embd must be an integer >= 1, got undefined'],
    ['no context length', { ...GPT2, n_positions: undefined }, gpt, TypeError,
      'config.n_positions (or config.n_ctx) must be an integer >= 1, got undefined'],
    ['a config key of the wrong kind', { ...GPT2, n_layer: '2' }, gpt, TypeError, 'config.n_layer must be an integer >= 1, got the string "2"'],
    ['n_embd not a multiple of n_head', { ...GPT2, n_head: 3 }, gpt, RangeError,
      'config.n_embd must be a multiple of config.n_head, got n_embd 8 and n_head 3'],
    ['a bad epsilon', { ...GPT2, layer_norm_epsilon: -1 }, gpt, RangeError, 'config.layer_norm_epsilon must be a positive number, got -1'],
    ['another GELU', { ...GPT2, activation_function: 'relu' }, gpt, RangeError,
      "config.activation_function must be 'gelu_new' or 'gelu_pytorch_tanh' (the book's GELU is the tanh approximation), got the string \"relu\""],
    ['another feed-forward width', { ...GPT2, n_inner: 16 }, gpt, RangeError, /^config\.n_inner must be null or 32 \(.*\), got 16$/],
    ['a tensor missing', GPT2, without(gpt, 'h.1.ln_2.bias'), RangeError,
      "tensorsMap does not hold the gpt2 model config describes: missing 1 tensor: 'h.1.ln_2.bias'"],
    ['a layer missing', { ...GPT2, n_layer: 3 }, gpt, RangeError,
      "tensorsMap does not hold the gpt2 model config describes: missing 12 tensors: 'h.2.ln_1.weight', 'h.2.ln_1.bias', " +
      "'h.2.ln_2.weight', 'h.2.ln_2.bias', 'h.2.attn.c_attn.weight' and 7 more"],
    ['missing tensors named with the prefix the file uses', GPT2, without(renamed(gpt, (k) => `transformer.${k}`), 'transformer.wpe.weight'),
      RangeError, /missing 1 tensor: 'transformer\.wpe\.weight'$/],
    ['unexpected tensors', { ...GPT2, n_layer: 1 }, withAlso(gpt, [['h.0.attn.extra', f32([1])]]), RangeError,
      /^tensorsMap does not hold the gpt2 model config describes: 13 unexpected tensors: 'h\.1\.ln_1\.weight', .* and 8 more$/],
    ['missing and unexpected together', GPT2, renamed(gpt, (k) => (k === 'ln_f.bias' ? 'ln_f.b' : k)), RangeError,
      "tensorsMap does not hold the gpt2 model config describes: missing 1 tensor: 'ln_f.bias'; 1 unexpected tensor: 'ln_f.b'"],
    ['a shape the config does not imply', { ...GPT2, vocab_size: 12 }, gpt, RangeError,
      "tensor 'wte.weight' must have shape [12, 8] ([vocab_size, n_embd]), got [11, 8]"],
    ['a transposed Conv1D weight', GPT2, withAlso(gpt, [['h.0.mlp.c_fc.weight', f32([32, 8])]]), RangeError,
      "tensor 'h.0.mlp.c_fc.weight' must have shape [8, 32] ([n_embd, 4 · n_embd]), got [32, 8]"],
    ['a wrong lm_head', GPT2, withAlso(gpt, [['lm_head.weight', f32([8, 11])]]), RangeError,
      "tensor 'lm_head.weight' must have shape [11, 8] ([vocab_size, n_embd]), got [8, 11]"],
    ['an unsupported dtype in a needed tensor', GPT2, withAlso(gpt, [['wpe.weight', { dtype: 'I64', shape: [7, 8], unsupported: true }]]),
      TypeError, "tensor 'wpe.weight' has dtype I64, which is not read: the model needs it as F32, F16 or BF16"],
    ['a tensor that is not one', GPT2, withAlso(gpt, [['wpe.weight', null]]), TypeError,
      "tensor 'wpe.weight' must be an object { dtype, shape, data } (as readSafetensors gives), got null"],
    ['data of the wrong length for its shape', GPT2, withAlso(gpt, [['ln_f.bias', { dtype: 'F32', shape: [8], data: new Float32Array(7) }]]),
      RangeError, "tensor 'ln_f.bias' of shape [8] must hold 8 values, got 7"],
    ['a name twice, with and without the prefix', GPT2, withAlso(gpt, [['transformer.wte.weight', gpt.get('wte.weight')]]), RangeError,
      "tensorsMap: 'wte.weight' and 'transformer.wte.weight' are the same tensor (with and without the prefix 'transformer.')"],
    ['a name in two shards', GPT2, [gpt, new Map([['ln_f.bias', gpt.get('ln_f.bias')]])], RangeError,
      "tensorsMap: tensor 'ln_f.bias' is in shard 0 and again in shard 1"],
    ['tensors that are not a Map', GPT2, { 'wte.weight': gpt.get('wte.weight') }, TypeError,
      'tensorsMap must be a Map of tensors (or readSafetensors\'s result), got an object'],
    ['a shard that is not a Map', GPT2, [gpt, null], TypeError, "tensorsMap[1] must be a Map of tensors (or readSafetensors's result), got null"],
    ['an untied llama without lm_head', { ...LLAMA, tie_word_embeddings: false }, llama, RangeError,
      "tensorsMap does not hold the llama model config describes: missing 1 tensor: 'lm_head.weight' (config.tie_word_embeddings is false)"],
    ['a llama head_dim that is not hidden_size / heads', { ...LLAMA, head_dim: 8 }, llama, RangeError,
      /^config\.head_dim must be null or 4 \(hidden_size \/ num_attention_heads = 8 \/ 2: .*\), got 8$/],
    ['heads not a multiple of the KV heads', { ...LLAMA, num_attention_heads: 4, num_key_value_heads: 3, head_dim: 2 }, llama, RangeError,
      'config.num_attention_heads must be a multiple of config.num_key_value_heads, got num_attention_heads 4 and num_key_value_heads 3'],
    ['K of the wrong KV head count', { ...LLAMA, num_key_value_heads: 2 }, llama, RangeError,
      "tensor 'model.layers.0.self_attn.k_proj.weight' must have shape [8, 8] ([num_key_value_heads · head_dim, hidden_size]), got [4, 8]"],
    ['another RoPE scaling', { ...LLAMA, rope_scaling: { rope_type: 'yarn', factor: 4 } }, llama, RangeError,
      "config.rope_scaling.rope_type must be 'llama3' or 'default' (the RoPE this package implements), got the string \"yarn\""],
    ['llama3 scaling without factor', { ...LLAMA, rope_scaling: { type: 'llama3', low_freq_factor: 1, high_freq_factor: 4, original_max_position_embeddings: 8192 } },
      llama, TypeError, 'config.rope_scaling.factor must be a positive number, got undefined'],
    ['llama3 scaling without its context', { ...LLAMA, rope_scaling: { ...LLAMA.rope_scaling, original_max_position_embeddings: 0 } },
      llama, RangeError, 'config.rope_scaling.original_max_position_embeddings must be an integer >= 1, got 0'],
    ['rope_scaling not an object', { ...LLAMA, rope_scaling: 'llama3' }, llama, TypeError,
      'config.rope_scaling must be an object or null, got the string "llama3"'],
    ['another activation', { ...LLAMA, hidden_act: 'gelu' }, llama, RangeError, /^config\.hidden_act must be 'silu' \(.*\), got the string "gelu"$/],
    ['attention biases', { ...LLAMA, attention_bias: true }, llama, RangeError, /^config\.attention_bias must be false \(.*\), got true$/],
    ['tie_word_embeddings not a boolean', { ...LLAMA, tie_word_embeddings: 1 }, llama, TypeError,
      'config.tie_word_embeddings must be true or false, got 1'],
    ['a llama layer missing', { ...LLAMA, num_hidden_layers: 3 }, llama, RangeError,
      /missing 9 tensors: 'model\.layers\.2\.self_attn\.q_proj\.weight', .* and 4 more$/],
    ['llama tensors for a gpt2 config', GPT2, llama, RangeError, /missing 28 tensors: 'wte\.weight', .*; 20 unexpected tensors: 'model\.embed_tokens\.weight'/],
  ];
  for (const [what, config, tensors, Err, message] of cases) {
    it(what, () => assert.throws(() => mapCheckpoint(config, tensors), { name: Err.name, message }));
  }

  it('the checkpoints these are made from map', () => {
    assert.equal(mapCheckpoint(GPT2, gpt).family, 'gpt2');
    assert.equal(mapCheckpoint(LLAMA, llama).family, 'llama');
  });
});
