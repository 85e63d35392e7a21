// Hugging Face checkpoints → the book's models: a config.json (object or
// text) gives the model family and the book's config; the tensors of one or
// more .safetensors files are renamed, split and transposed into the book's
// state-dict names, as its load_weights_into_gpt (ch. 5) and its Llama 3.2
// loader do. Everything is checked before anything is loaded: unknown model
// types, missing and unexpected tensors and wrong shapes are one clear error.

import { describe } from '../api/validate.mjs';
import { readSafetensors } from './safetensors.mjs';

/** @import { Safetensors, SafetensorsTensor } from './safetensors.mjs' */
/** @import { GPTConfig, LlamaConfig } from '../nn/models.d.ts' */

const SUPPORTED = ['gpt2', 'llama'];

/**
 * @param {unknown} config
 * @returns {Record<string, any>}
 */
function parseConfig(config) {
  let c = config;
  if (typeof config === 'string') {
    try {
      c = JSON.parse(config);
    } catch (e) {
      throw new TypeError(`config must be config.json's object or text; the text is not JSON (${/** @type {Error} */ (e).message})`);
    }
  }
  if (c === null || typeof c !== 'object' || Array.isArray(c)) {
    throw new TypeError(`config must be config.json's object or text, got ${describe(config)}`);
  }
  return /** @type {Record<string, any>} */ (c);
}

/**
 * @param {Record<string, any>} c
 * @param {string} key
 * @param {unknown} [fallback]
 */
function need(c, key, fallback) {
  const v = c[key] ?? fallback;
  if (v === undefined) throw new TypeError(`config.${key} is required for model_type '${c.model_type}', got undefined`);
  return v;
}

/**
 * The family and the book's config of a Hugging Face config.json.
 * @param {unknown} config
 * @returns {{ family: 'gpt2', cfg: Required<GPTConfig> } | { family: 'llama', cfg: LlamaConfig & { tie_word_embeddings: boolean } }}
 */
export function bookConfig(config) {
  const c = parseConfig(config);
  if (c.model_type === 'gpt2') {
    return {
      family: 'gpt2',
      cfg: {
        vocab_size: need(c, 'vocab_size'), context_length: need(c, 'n_positions', c.n_ctx), emb_dim: need(c, 'n_embd'),
        n_heads: need(c, 'n_head'), n_layers: need(c, 'n_layer'), drop_rate: 0, qkv_bias: true,
        eps: c.layer_norm_epsilon ?? 1e-5,
      },
    };
  }
  if (c.model_type === 'llama') {
    const heads = need(c, 'num_attention_heads');
    const emb = need(c, 'hidden_size');
    if (c.head_dim !== undefined && c.head_dim * heads !== emb) {
      throw new RangeError(`config.head_dim ${c.head_dim} × num_attention_heads ${heads} must be hidden_size ${emb} ` +
        '(the book\'s Llama has head_dim = hidden_size / num_attention_heads)');
    }
    const s = c.rope_scaling;
    const type = s?.rope_type ?? s?.type;
    if (s && type !== 'llama3' && type !== 'default') {
      throw new RangeError(`config.rope_scaling type '${type}' is not supported (supported: 'llama3')`);
    }
    return {
      family: 'llama',
      cfg: {
        vocab_size: need(c, 'vocab_size'), context_length: need(c, 'max_position_embeddings'), emb_dim: emb,
        n_heads: heads, n_layers: need(c, 'num_hidden_layers'), hidden_dim: need(c, 'intermediate_size'),
        n_kv_groups: c.num_key_value_heads ?? heads, rope_base: c.rope_theta ?? 10000,
        rope_freq: type === 'llama3' ? {
          factor: s.factor, low_freq_factor: s.low_freq_factor, high_freq_factor: s.high_freq_factor,
          original_context_length: s.original_max_position_embeddings,
        } : null,
        eps: c.rms_norm_eps ?? 1e-5, tie_word_embeddings: c.tie_word_embeddings ?? false,
      },
    };
  }
  throw new RangeError(`config.model_type ${describe(c.model_type)} is not supported (supported: ${SUPPORTED.join(', ')})`);
}

/**
 * Every tensor of the shards by name (a name in two shards is an error),
 * without the `transformer.` / `model.` prefix.
 * @param {ReadonlyArray<ArrayBuffer | Uint8Array | Safetensors>} shards
 * @param {string} prefix  'transformer.' or 'model.'
 * @returns {Map<string, SafetensorsTensor>}
 */
function collect(shards, prefix) {
  /** @type {Map<string, SafetensorsTensor>} */
  const all = new Map();
  shards.forEach((shard, i) => {
    const file = shards.length > 1 ? `safetensors[${i}]` : 'safetensors';
    const { tensors } = 'tensors' in shard ? shard : readSafetensors(shard, file);
    for (const [full, t] of tensors) {
      const name = full.startsWith(prefix) ? full.slice(prefix.length) : full;
      if (all.has(name)) throw new RangeError(`tensor '${full}' appears in two shards (${file} and an earlier one)`);
      all.set(name, t);
    }
  });
  return all;
}

/**
 * The book's state dict from a checkpoint's tensors: GPT-2's fused c_attn
 * split into W_query / W_key / W_value, its Conv1D weights [in, out]
 * transposed, out_head tied to wte; Llama's projections renamed.
 * @param {'gpt2' | 'llama'} family
 * @param {Record<string, any>} cfg  bookConfig's
 * @param {ReadonlyArray<ArrayBuffer | Uint8Array | Safetensors>} shards
 * @returns {Record<string, Float32Array>}
 */
export function bookStateDict(family, cfg, shards) {
  const tensors = collect(shards, family === 'gpt2' ? 'transformer.' : 'model.');
  /** @type {Record<string, Float32Array>} */
  const out = {};
  /** @type {string[]} */
  const missing = [];
  /** @type {string[]} */
  const wrong = [];
  const used = new Set();
  /**
   * @param {string} name
   * @param {number[]} shape
   * @returns {Float32Array | null}
   */
  const take = (name, shape) => {
    const t = tensors.get(name);
    used.add(name);
    if (!t) {
      missing.push(name);
      return null;
    }
    if (t.shape.join() !== shape.join()) {
      wrong.push(`'${name}' has shape [${t.shape.join(', ')}], the config implies [${shape.join(', ')}]`);
      return null;
    }
    if (!t.data) {
      wrong.push(`'${name}' is ${t.dtype} (F32, F16 or BF16 expected)`);
      return null;
    }
    return t.data;
  };
  const E = cfg.emb_dim;
  if (family === 'gpt2') {
    out['tok_emb.weight'] = /** @type {Float32Array} */ (take('wte.weight', [cfg.vocab_size, E]));
    out['pos_emb.weight'] = /** @type {Float32Array} */ (take('wpe.weight', [cfg.context_length, E]));
    for (let l = 0; l < cfg.n_layers; l++) {
      const h = `h.${l}.`;
      const b = `trf_blocks.${l}.`;
      const qkv = take(`${h}attn.c_attn.weight`, [E, 3 * E]);
      const qkvBias = take(`${h}attn.c_attn.bias`, [3 * E]);
      ['W_query', 'W_key', 'W_value'].forEach((name, part) => {
        if (qkv) out[`${b}att.${name}.weight`] = transpose(qkv, E, 3 * E, part * E, E);
        if (qkvBias) out[`${b}att.${name}.bias`] = qkvBias.slice(part * E, (part + 1) * E);
      });
      /** @type {[string, string, number, number][]} */
      const conv = [['attn.c_proj', 'att.out_proj', E, E], ['mlp.c_fc', 'ff.layers.0', E, 4 * E],
        ['mlp.c_proj', 'ff.layers.2', 4 * E, E]];
      for (const [from, to, inF, outF] of conv) {
        const w = take(`${h}${from}.weight`, [inF, outF]);
        if (w) out[`${b}${to}.weight`] = transpose(w, inF, outF, 0, outF);
        const bias = take(`${h}${from}.bias`, [outF]);
        if (bias) out[`${b}${to}.bias`] = bias;
      }
      for (const [from, to] of [['ln_1', 'norm1'], ['ln_2', 'norm2']]) {
        out[`${b}${to}.scale`] = /** @type {Float32Array} */ (take(`${h}${from}.weight`, [E]));
        out[`${b}${to}.shift`] = /** @type {Float32Array} */ (take(`${h}${from}.bias`, [E]));
      }
      // The causal-mask buffers GPT-2 files carry: not parameters.
      used.add(`${h}attn.bias`).add(`${h}attn.masked_bias`);
    }
    out['final_norm.scale'] = /** @type {Float32Array} */ (take('ln_f.weight', [E]));
    out['final_norm.shift'] = /** @type {Float32Array} */ (take('ln_f.bias', [E]));
    // Tied to the token embedding, as load_weights_into_gpt assigns it (a
    // separate lm_head.weight, where a file has one, is the same tensor).
    out['out_head.weight'] = tensors.has('lm_head.weight')
      ? /** @type {Float32Array} */ (take('lm_head.weight', [cfg.vocab_size, E]))
      : out['tok_emb.weight'];
  } else {
    const hd = E / cfg.n_heads;
    const kv = cfg.n_kv_groups * hd;
    out['tok_emb.weight'] = /** @type {Float32Array} */ (take('embed_tokens.weight', [cfg.vocab_size, E]));
    for (let l = 0; l < cfg.n_layers; l++) {
      const h = `layers.${l}.`;
      const b = `trf_blocks.${l}.`;
      /** @type {[string, string, number[]][]} */
      const names = [
        ['self_attn.q_proj', 'att.W_query', [E, E]], ['self_attn.k_proj', 'att.W_key', [kv, E]],
        ['self_attn.v_proj', 'att.W_value', [kv, E]], ['self_attn.o_proj', 'att.out_proj', [E, E]],
        ['mlp.gate_proj', 'ff.fc1', [cfg.hidden_dim, E]], ['mlp.up_proj', 'ff.fc2', [cfg.hidden_dim, E]],
        ['mlp.down_proj', 'ff.fc3', [E, cfg.hidden_dim]],
        ['input_layernorm', 'norm1', [E]], ['post_attention_layernorm', 'norm2', [E]],
      ];
      for (const [from, to, shape] of names) out[`${b}${to}.weight`] = /** @type {Float32Array} */ (take(`${h}${from}.weight`, shape));
      used.add(`${h}self_attn.rotary_emb.inv_freq`);
    }
    out['final_norm.weight'] = /** @type {Float32Array} */ (take('norm.weight', [E]));
    if (tensors.has('lm_head.weight') || !cfg.tie_word_embeddings) {
      out['out_head.weight'] = /** @type {Float32Array} */ (take('lm_head.weight', [cfg.vocab_size, E]));
    } else {
      out['out_head.weight'] = out['tok_emb.weight']; // loadStateDict copies it into out_head's own array
    }
  }
  const unexpected = [...tensors.keys()].filter((n) => !used.has(n));
  const problems = [
    ...list('missing tensor', missing), ...list('unexpected tensor', unexpected), ...wrong,
  ];
  if (problems.length) {
    throw new RangeError(`loadPretrained: ${problems.length} problem${problems.length > 1 ? 's' : ''} with the ` +
      `${family} checkpoint (nothing was loaded): ${problems.join('; ')}`);
  }
  return out;
}

/**
 * `what` with the first names (then how many more).
 * @param {string} what
 * @param {string[]} names
 * @returns {string[]}
 */
function list(what, names) {
  if (!names.length) return [];
  const shown = names.slice(0, 5).map((n) => `'${n}'`).join(', ');
  return [`${names.length} ${what}${names.length > 1 ? 's' : ''}: ${shown}${names.length > 5 ? `, and ${names.length - 5} more` : ''}`];
}

/**
 * Columns [from, from + width) of a [rows, cols] matrix, transposed: [width, rows].
 * @param {Float32Array} m
 * @param {number} rows
 * @param {number} cols
 * @param {number} from
 * @param {number} width
 * @returns {Float32Array}
 */
function transpose(m, rows, cols, from, width) {
  const t = new Float32Array(width * rows);
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < width; c++) t[c * rows + r] = m[r * cols + from + c];
  }
  return t;
}
