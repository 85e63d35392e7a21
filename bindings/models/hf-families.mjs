// What each Hugging Face model type needs, read from its config.json: the
// configuration in the book's form (GPT_CONFIG of ch. 4/5, the Llama 3.2
// bonus code's LLAMA32_CONFIG), the tensors the config implies with their
// shapes, and how they become the book's parameters, in PyTorch's
// nn.Linear layout [out, in].
//   gpt2:  as ch. 5's load_weights_into_gpt: Conv1D weights ([in, out]) are
//          transposed, c_attn is split into W_query, W_key, W_value, and
//          the output head is tied to wte unless lm_head.weight is given.
//   llama: renamed only (Hugging Face's q_proj/k_proj are already in the
//          rotate-half RoPE layout the book's code and this package use).
// Config errors are TypeErrors or RangeErrors naming the config key.
import { checkInteger, describe } from '../api/validate.mjs';

/** @typedef {{ shape: number[], data: Float32Array }} StateTensor */
/**
 * Parameters by the book's names. Arrays may be shared: tied weights are
 * one array, and untransposed tensors may be views of the file's bytes.
 * @typedef {Record<string, StateTensor>} CheckpointStateDict
 */
/**
 * @typedef {{ vocab_size: number, context_length: number, emb_dim: number, n_heads: number,
 *   n_layers: number, drop_rate: number, qkv_bias: boolean, eps: number }} GPTConfig
 */
/**
 * @typedef {{ factor: number, low_freq_factor: number, high_freq_factor: number,
 *   original_context_length: number }} Llama3RopeFrequencies
 */
/**
 * @typedef {{ vocab_size: number, context_length: number, emb_dim: number, n_heads: number,
 *   n_layers: number, hidden_dim: number, n_kv_groups: number, rope_base: number,
 *   rope_freq: Llama3RopeFrequencies | null, eps: number, tie_word_embeddings: boolean }} LlamaConfig
 */
/**
 * @typedef {{ family: 'gpt2', cfg: GPTConfig, stateDict: CheckpointStateDict }
 *   | { family: 'llama', cfg: LlamaConfig, stateDict: CheckpointStateDict }} MappedCheckpoint
 */
/**
 * What a family needs: tensors by canonical name (prefix removed), each
 * with the shape the config implies and how it follows from the config.
 * @typedef {{ shape: number[], how: string, optional?: boolean }} Need
 * @typedef {{ prefix: string, needs: Map<string, Need>, ignore: RegExp, missingNote: Map<string, string>,
 *   build: (get: (name: string) => Float32Array | undefined) => CheckpointStateDict }} Plan
 */

/**
 * A positive finite number, or `fallback` when the key is absent or null.
 * @param {Record<string, unknown>} config
 * @param {string} key
 * @param {number | undefined} fallback
 * @param {string} [where]  how errors name `config`
 * @returns {number}
 */
function positive(config, key, fallback, where = 'config') {
  const value = config[key] ?? fallback;
  const name = `${where}.${key}`;
  if (typeof value !== 'number') throw new TypeError(`${name} must be a positive number, got ${describe(value)}`);
  if (!(Number.isFinite(value) && value > 0)) throw new RangeError(`${name} must be a positive number, got ${describe(value)}`);
  return value;
}

/**
 * An integer >= 1: config[key], or config[alternative] when that is absent.
 * @param {Record<string, unknown>} config
 * @param {string} key
 * @param {string} [alternative]
 * @returns {number}
 */
function integer(config, key, alternative) {
  const value = config[key] ?? (alternative === undefined ? undefined : config[alternative]);
  const name = alternative === undefined ? `config.${key}` : `config.${key} (or config.${alternative})`;
  return checkInteger(name, value);
}

/**
 * config[key] must be one of `allowed`; absent or null reads as allowed[0].
 * @param {Record<string, unknown>} config
 * @param {string} key
 * @param {readonly unknown[]} allowed  the first is the default
 * @param {string} why
 */
function only(config, key, allowed, why) {
  const value = config[key] ?? allowed[0];
  if (!allowed.includes(value)) {
    const list = allowed.map((a) => (typeof a === 'string' ? `'${a}'` : String(a))).join(' or ');
    const Err = allowed.some((a) => typeof a === typeof value) ? RangeError : TypeError;
    throw new Err(`config.${key} must be ${list} (${why}), got ${describe(value)}`);
  }
}

/**
 * The columns [c0, c1) of a row-major [rows, cols] matrix, transposed:
 * a [c1 - c0, rows] matrix.
 * @param {Float32Array} src
 * @param {number} rows
 * @param {number} cols
 * @param {number} c0
 * @param {number} c1
 */
function transposeColumns(src, rows, cols, c0 = 0, c1 = cols) {
  const out = new Float32Array((c1 - c0) * rows);
  for (let r = 0; r < rows; r++) {
    const row = r * cols;
    for (let c = c0; c < c1; c++) out[(c - c0) * rows + r] = src[row + c];
  }
  return out;
}

/**
 * GPT-2 (the gpt2 checkpoints and their fine-tunes).
 * @param {Record<string, unknown>} config
 * @returns {{ cfg: GPTConfig, plan: Plan }}
 */
export function gpt2Plan(config) {
  const vocab = integer(config, 'vocab_size');
  const ctx = integer(config, 'n_positions', 'n_ctx');
  const emb = integer(config, 'n_embd');
  const heads = integer(config, 'n_head');
  const layers = integer(config, 'n_layer');
  if (emb % heads !== 0) {
    throw new RangeError(`config.n_embd must be a multiple of config.n_head, got n_embd ${emb} and n_head ${heads}`);
  }
  const eps = positive(config, 'layer_norm_epsilon', 1e-5);
  only(config, 'n_inner', [null, 4 * emb], 'the feed-forward width is 4 · n_embd in the book\'s GPTModel');
  only(config, 'activation_function', ['gelu_new', 'gelu_pytorch_tanh'], 'the book\'s GELU is the tanh approximation');
  only(config, 'scale_attn_weights', [true], 'scores are scaled by 1/√head_dim');
  only(config, 'scale_attn_by_inverse_layer_idx', [false], 'scores are not scaled by layer');
  /** @type {GPTConfig} */
  const cfg = {
    vocab_size: vocab, context_length: ctx, emb_dim: emb, n_heads: heads, n_layers: layers,
    drop_rate: 0.0, qkv_bias: true, eps,
  };

  /** @type {Map<string, Need>} */
  const needs = new Map();
  const need = (/** @type {string} */ name, /** @type {number[]} */ shape, /** @type {string} */ how) =>
    needs.set(name, { shape, how });
  need('wte.weight', [vocab, emb], '[vocab_size, n_embd]');
  need('wpe.weight', [ctx, emb], '[n_positions, n_embd]');
  for (let b = 0; b < layers; b++) {
    for (const ln of ['ln_1', 'ln_2']) {
      need(`h.${b}.${ln}.weight`, [emb], '[n_embd]');
      need(`h.${b}.${ln}.bias`, [emb], '[n_embd]');
    }
    need(`h.${b}.attn.c_attn.weight`, [emb, 3 * emb], '[n_embd, 3 · n_embd]');
    need(`h.${b}.attn.c_attn.bias`, [3 * emb], '[3 · n_embd]');
    need(`h.${b}.attn.c_proj.weight`, [emb, emb], '[n_embd, n_embd]');
    need(`h.${b}.attn.c_proj.bias`, [emb], '[n_embd]');
    need(`h.${b}.mlp.c_fc.weight`, [emb, 4 * emb], '[n_embd, 4 · n_embd]');
    need(`h.${b}.mlp.c_fc.bias`, [4 * emb], '[4 · n_embd]');
    need(`h.${b}.mlp.c_proj.weight`, [4 * emb, emb], '[4 · n_embd, n_embd]');
    need(`h.${b}.mlp.c_proj.bias`, [emb], '[n_embd]');
  }
  need('ln_f.weight', [emb], '[n_embd]');
  need('ln_f.bias', [emb], '[n_embd]');
  needs.set('lm_head.weight', { shape: [vocab, emb], how: '[vocab_size, n_embd]', optional: true });

  /** @param {(name: string) => Float32Array | undefined} get */
  const build = (get) => {
    const at = (/** @type {string} */ name) => /** @type {Float32Array} */ (get(name));
    /** @type {CheckpointStateDict} */
    const sd = {};
    const put = (/** @type {string} */ name, /** @type {number[]} */ shape, /** @type {Float32Array} */ data) => {
      sd[name] = { shape, data };
    };
    put('tok_emb.weight', [vocab, emb], at('wte.weight'));
    put('pos_emb.weight', [ctx, emb], at('wpe.weight'));
    for (let b = 0; b < layers; b++) {
      const h = `h.${b}.`, t = `trf_blocks.${b}.`;
      const qkv = at(`${h}attn.c_attn.weight`), qkvBias = at(`${h}attn.c_attn.bias`);
      ['W_query', 'W_key', 'W_value'].forEach((w, i) => {
        put(`${t}att.${w}.weight`, [emb, emb], transposeColumns(qkv, emb, 3 * emb, i * emb, (i + 1) * emb));
        put(`${t}att.${w}.bias`, [emb], qkvBias.subarray(i * emb, (i + 1) * emb));
      });
      put(`${t}att.out_proj.weight`, [emb, emb], transposeColumns(at(`${h}attn.c_proj.weight`), emb, emb));
      put(`${t}att.out_proj.bias`, [emb], at(`${h}attn.c_proj.bias`));
      put(`${t}ff.layers.0.weight`, [4 * emb, emb], transposeColumns(at(`${h}mlp.c_fc.weight`), emb, 4 * emb));
      put(`${t}ff.layers.0.bias`, [4 * emb], at(`${h}mlp.c_fc.bias`));
      put(`${t}ff.layers.2.weight`, [emb, 4 * emb], transposeColumns(at(`${h}mlp.c_proj.weight`), 4 * emb, emb));
      put(`${t}ff.layers.2.bias`, [emb], at(`${h}mlp.c_proj.bias`));
      put(`${t}norm1.scale`, [emb], at(`${h}ln_1.weight`));
      put(`${t}norm1.shift`, [emb], at(`${h}ln_1.bias`));
      put(`${t}norm2.scale`, [emb], at(`${h}ln_2.weight`));
      put(`${t}norm2.shift`, [emb], at(`${h}ln_2.bias`));
    }
    put('final_norm.scale', [emb], at('ln_f.weight'));
    put('final_norm.shift', [emb], at('ln_f.bias'));
    put('out_head.weight', [vocab, emb], get('lm_head.weight') ?? at('wte.weight'));
    return sd;
  };
  return {
    cfg,
    plan: {
      prefix: 'transformer.', needs, build, missingNote: new Map(),
      ignore: /^h\.\d+\.attn\.(?:masked_)?bias$/,
    },
  };
}

/**
 * config.rope_scaling as the book's rope_freq: llama3 scaling, or null.
 * @param {Record<string, unknown>} config
 * @returns {Llama3RopeFrequencies | null}
 */
function ropeFrequencies(config) {
  const scaling = config.rope_scaling;
  if (scaling === undefined || scaling === null) return null;
  if (typeof scaling !== 'object' || Array.isArray(scaling)) {
    throw new TypeError(`config.rope_scaling must be an object or null, got ${describe(scaling)}`);
  }
  const s = /** @type {Record<string, unknown>} */ (scaling);
  const type = s.rope_type ?? s.type;
  if (type === 'default') return null;
  if (type !== 'llama3') {
    throw new RangeError(`config.rope_scaling.rope_type must be 'llama3' or 'default' (the RoPE this package implements), got ${describe(type)}`);
  }
  const field = (/** @type {string} */ key) => positive(s, key, undefined, 'config.rope_scaling');
  return {
    factor: field('factor'),
    low_freq_factor: field('low_freq_factor'),
    high_freq_factor: field('high_freq_factor'),
    original_context_length: checkInteger('config.rope_scaling.original_max_position_embeddings',
      s.original_max_position_embeddings),
  };
}

/**
 * Llama (Llama 3.x, SmolLM2, TinyLlama…: model_type 'llama').
 * @param {Record<string, unknown>} config
 * @returns {{ cfg: LlamaConfig, plan: Plan }}
 */
export function llamaPlan(config) {
  const vocab = integer(config, 'vocab_size');
  const ctx = integer(config, 'max_position_embeddings');
  const emb = integer(config, 'hidden_size');
  const heads = integer(config, 'num_attention_heads');
  const layers = integer(config, 'num_hidden_layers');
  const hidden = integer(config, 'intermediate_size');
  const kvHeads = integer(config, 'num_key_value_heads', 'num_attention_heads');
  if (emb % heads !== 0) {
    throw new RangeError(`config.hidden_size must be a multiple of config.num_attention_heads, got hidden_size ${emb} and num_attention_heads ${heads}`);
  }
  const headDim = emb / heads;
  only(config, 'head_dim', [null, headDim], `hidden_size / num_attention_heads = ${emb} / ${heads}: the book's Llama has no separate head_dim`);
  if (heads % kvHeads !== 0) {
    throw new RangeError(`config.num_attention_heads must be a multiple of config.num_key_value_heads, got num_attention_heads ${heads} and num_key_value_heads ${kvHeads}`);
  }
  only(config, 'hidden_act', ['silu'], 'the book\'s Llama feed-forward is SwiGLU');
  only(config, 'attention_bias', [false], 'the book\'s Llama projections have no bias');
  only(config, 'mlp_bias', [false], 'the book\'s Llama projections have no bias');
  const tied = config.tie_word_embeddings ?? false;
  if (typeof tied !== 'boolean') {
    throw new TypeError(`config.tie_word_embeddings must be true or false, got ${describe(tied)}`);
  }
  /** @type {LlamaConfig} */
  const cfg = {
    vocab_size: vocab, context_length: ctx, emb_dim: emb, n_heads: heads, n_layers: layers,
    hidden_dim: hidden, n_kv_groups: kvHeads, rope_base: positive(config, 'rope_theta', 10000),
    rope_freq: ropeFrequencies(config), eps: positive(config, 'rms_norm_eps', 1e-6), tie_word_embeddings: tied,
  };

  /** @type {Map<string, Need>} */
  const needs = new Map();
  const need = (/** @type {string} */ name, /** @type {number[]} */ shape, /** @type {string} */ how) =>
    needs.set(name, { shape, how });
  need('embed_tokens.weight', [vocab, emb], '[vocab_size, hidden_size]');
  /** @type {[string, string, number[], string][]} */
  const perLayer = [
    ['self_attn.q_proj', 'att.W_query', [emb, emb], '[hidden_size, hidden_size]'],
    ['self_attn.k_proj', 'att.W_key', [kvHeads * headDim, emb], '[num_key_value_heads · head_dim, hidden_size]'],
    ['self_attn.v_proj', 'att.W_value', [kvHeads * headDim, emb], '[num_key_value_heads · head_dim, hidden_size]'],
    ['self_attn.o_proj', 'att.out_proj', [emb, emb], '[hidden_size, hidden_size]'],
    ['mlp.gate_proj', 'ff.fc1', [hidden, emb], '[intermediate_size, hidden_size]'],
    ['mlp.up_proj', 'ff.fc2', [hidden, emb], '[intermediate_size, hidden_size]'],
    ['mlp.down_proj', 'ff.fc3', [emb, hidden], '[hidden_size, intermediate_size]'],
    ['input_layernorm', 'norm1', [emb], '[hidden_size]'],
    ['post_attention_layernorm', 'norm2', [emb], '[hidden_size]'],
  ];
  for (let l = 0; l < layers; l++) {
    for (const [hf, , shape, how] of perLayer) need(`layers.${l}.${hf}.weight`, shape, how);
  }
  need('norm.weight', [emb], '[hidden_size]');
  needs.set('lm_head.weight', { shape: [vocab, emb], how: '[vocab_size, hidden_size]', optional: tied });

  /** @param {(name: string) => Float32Array | undefined} get */
  const build = (get) => {
    const at = (/** @type {string} */ name) => /** @type {Float32Array} */ (get(name));
    /** @type {CheckpointStateDict} */
    const sd = {};
    sd['tok_emb.weight'] = { shape: [vocab, emb], data: at('embed_tokens.weight') };
    for (let l = 0; l < layers; l++) {
      for (const [hf, book, shape] of perLayer) {
        sd[`trf_blocks.${l}.${book}.weight`] = { shape: shape.slice(), data: at(`layers.${l}.${hf}.weight`) };
      }
    }
    sd['final_norm.weight'] = { shape: [emb], data: at('norm.weight') };
    sd['out_head.weight'] = { shape: [vocab, emb], data: get('lm_head.weight') ?? at('embed_tokens.weight') };
    return sd;
  };
  return {
    cfg,
    plan: {
      prefix: 'model.', needs, build,
      missingNote: new Map([['lm_head.weight', 'config.tie_word_embeddings is false']]),
      ignore: /(?:^|\.)rotary_emb\.inv_freq$/,
    },
  };
}
