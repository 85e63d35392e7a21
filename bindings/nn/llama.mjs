// The book's Llama 3.2 from scratch (its bonus material, ch05/07_gpt_to_llama):
// the SiLU-gated FeedForward (fc1, fc2, fc3), the pre-norm block with RMSNorm
// and GroupedQueryAttention (RoPE, Llama 3's frequency adjustment), and
// Llama3Model, taking the bonus's config keys; built in its __init__ order.

import { checkFinite, checkInteger, checkOptionNames, checkTensor } from '../api/validate.mjs';
import { PreNormBlock } from './gpt.mjs';
import { LanguageModel } from './language-model.mjs';
import { Kept } from './kept.mjs';
import { Module, bindingOf, fixFields } from './module.mjs';

/**
 * @import { LlamaConfig } from './models.d.ts'
 * @import { ModuleClasses } from './modules.mjs'
 */

const LLAMA_KEYS = ['vocab_size', 'context_length', 'emb_dim', 'n_heads', 'n_layers', 'hidden_dim', 'n_kv_groups',
  'rope_base', 'rope_freq', 'dtype', 'eps'];

/**
 * @typedef {{ vocab_size: number, context_length: number, emb_dim: number, n_heads: number, n_layers: number,
 *   hidden_dim: number, n_kv_groups: number, rope_base: number, eps: number,
 *   rope_freq: { factor: number, low_freq_factor: number, high_freq_factor: number, original_context_length: number } | null,
 * }} CheckedLlamaConfig
 */

/**
 * The bonus's config, checked; `dtype` (the book's torch.bfloat16) is
 * taken and ignored: parameters are float32 here.
 * @param {unknown} cfg
 * @returns {CheckedLlamaConfig}
 */
export function checkLlamaConfig(cfg) {
  const c = /** @type {Record<string, any>} */ (checkOptionNames('cfg', /** @type {object | undefined} */ (cfg), LLAMA_KEYS));
  for (const key of ['vocab_size', 'context_length', 'emb_dim', 'n_heads', 'n_layers', 'hidden_dim', 'n_kv_groups']) {
    if (c[key] === undefined) throw new TypeError(`cfg.${key} is required (the book's LLAMA32_CONFIG has it), got undefined`);
    checkInteger(`cfg.${key}`, c[key]);
  }
  /** @type {CheckedLlamaConfig['rope_freq']} */
  let ropeFreq = null;
  if (c.rope_freq !== undefined && c.rope_freq !== null) {
    const f = /** @type {Record<string, any>} */ (checkOptionNames('cfg.rope_freq', c.rope_freq,
      ['factor', 'low_freq_factor', 'high_freq_factor', 'original_context_length']));
    ropeFreq = {
      factor: checkFinite('cfg.rope_freq.factor', f.factor),
      low_freq_factor: checkFinite('cfg.rope_freq.low_freq_factor', f.low_freq_factor),
      high_freq_factor: checkFinite('cfg.rope_freq.high_freq_factor', f.high_freq_factor),
      original_context_length: checkFinite('cfg.rope_freq.original_context_length', f.original_context_length),
    };
  }
  return {
    vocab_size: c.vocab_size, context_length: c.context_length, emb_dim: c.emb_dim, n_heads: c.n_heads,
    n_layers: c.n_layers, hidden_dim: c.hidden_dim, n_kv_groups: c.n_kv_groups,
    rope_base: checkFinite('cfg.rope_base', c.rope_base ?? 10000), rope_freq: ropeFreq, eps: c.eps ?? 1e-5,
  };
}

/**
 * The bonus's FeedForward: fc3(SiLU(fc1(x)) · fc2(x)), three Linear layers
 * without bias (Hugging Face's gate_proj, up_proj, down_proj).
 */
export class GatedFeedForward extends Module {
  #engine;
  /** @type {Kept<{ a: Float32Array, b: Float32Array, rows: number[] }>} */
  #kept = new Kept();

  /** @param {LlamaConfig} cfg */
  constructor(cfg) {
    super();
    const c = checkLlamaConfig(cfg);
    const binding = bindingOf(new.target);
    this.#engine = binding.engine;
    const { Linear } = /** @type {ModuleClasses} */ (binding.classes);
    this.fc1 = this.registerModule('fc1', new Linear(c.emb_dim, c.hidden_dim, false));
    this.fc2 = this.registerModule('fc2', new Linear(c.emb_dim, c.hidden_dim, false));
    this.fc3 = this.registerModule('fc3', new Linear(c.hidden_dim, c.emb_dim, false));
    fixFields(this, 'fc1', 'fc2', 'fc3');
  }

  /**
   * @param {Float32Array} x  [..., emb_dim]
   * @param {number[]} shape
   * @returns {Float32Array}
   */
  forward(x, shape) {
    const a = this.fc1.forward(x, shape);
    const b = this.fc2.forward(x, shape);
    const rows = shape.slice(0, -1);
    const h = this.#engine.activation('siluMul', a, b);
    this.#kept.set(this.training, () => ({ a, b, rows }));
    return this.fc3.forward(h, [...rows, this.fc3.inFeatures]);
  }

  /**
   * @param {Float32Array} gradOutput
   * @returns {Float32Array}
   */
  backward(gradOutput) {
    const gh = this.fc3.backward(gradOutput);
    const { a, b } = this.#kept.take((k) => checkTensor('gradOutput', gh, k.a.length, 'the hidden width'));
    const { gradA, gradB } = this.#engine.activationBackward('siluMul', a, b, gh);
    const gx = this.fc1.backward(gradA);
    const gx2 = this.fc2.backward(/** @type {Float32Array} */ (gradB));
    for (let i = 0; i < gx.length; i++) gx[i] += gx2[i];
    return gx;
  }
}

/**
 * The bonus's TransformerBlock: GroupedQueryAttention(emb, emb, n_heads,
 * n_kv_groups) with RoPE (rope_base, rope_freq, context_length), the gated
 * FeedForward, RMSNorm norm1 and norm2 (eps 1e-5); no dropout.
 */
export class Llama3TransformerBlock extends PreNormBlock {
  /** @param {LlamaConfig} cfg */
  constructor(cfg) {
    super();
    const c = checkLlamaConfig(cfg);
    const { GroupedQueryAttention, GatedFeedForward: FF, RMSNorm } = /** @type {ModuleClasses} */ (bindingOf(new.target).classes);
    const f = c.rope_freq;
    const att = new GroupedQueryAttention(c.emb_dim, c.emb_dim, c.n_heads, c.n_kv_groups, {
      contextLength: c.context_length, ropeBase: c.rope_base,
      freqConfig: f && {
        factor: f.factor, lowFreqFactor: f.low_freq_factor, highFreqFactor: f.high_freq_factor,
        originalContextLength: f.original_context_length,
      },
    });
    this.setParts({ att, ff: new FF(cfg), norm1: new RMSNorm(c.emb_dim, { eps: c.eps }), norm2: new RMSNorm(c.emb_dim, { eps: c.eps }) });
  }
}

/**
 * The bonus's Llama3Model(cfg): tok_emb, trf_blocks, final_norm (RMSNorm),
 * out_head (no bias); positions through RoPE in each attention.
 */
export class Llama3Model extends LanguageModel {
  /** @param {LlamaConfig} cfg */
  constructor(cfg) {
    const c = checkLlamaConfig(cfg);
    const binding = bindingOf(new.target);
    super(binding.engine, {
      vocabSize: c.vocab_size, contextLength: c.context_length, embDim: c.emb_dim, nLayers: c.n_layers, nHeads: c.n_heads,
    });
    /** The config, checked (frozen). */
    this.cfg = Object.freeze(c);
    const { Embedding, ModuleList, Llama3TransformerBlock: Block, RMSNorm, Linear } =
      /** @type {ModuleClasses} */ (binding.classes);
    this.tokEmb = this.registerModule('tok_emb', new Embedding(c.vocab_size, c.emb_dim));
    this.trfBlocks = this.registerModule('trf_blocks',
      new ModuleList(Array.from({ length: c.n_layers }, () => new Block(cfg))));
    this.finalNorm = this.registerModule('final_norm', new RMSNorm(c.emb_dim, { eps: c.eps }));
    this.outHead = this.registerModule('out_head', new Linear(c.emb_dim, c.vocab_size, false));
    fixFields(this, 'cfg', 'tokEmb', 'trfBlocks', 'finalNorm', 'outHead');
  }

  /** @returns {any} */
  parts() {
    return { tokEmb: this.tokEmb, blocks: [...this.trfBlocks], finalNorm: this.finalNorm, outHead: this.outHead, embedDropout: null };
  }
}
