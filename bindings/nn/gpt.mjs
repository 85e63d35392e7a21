// The book's chapter 4: FeedForward, TransformerBlock and GPTModel, taking
// the book's config object as written in Python (GPT_CONFIG_124M), built in
// its __init__ order from the runtime's seeded modules, so that
// manualSeed(123) gives the book's weights and its state-dict names are
// those of GPTModel.state_dict().

import { checkBoolean, checkInteger, checkOptionNames, checkProbability } from '../api/validate.mjs';
import { LanguageModel } from './language-model.mjs';
import { Module, bindingOf, fixFields } from './module.mjs';

/**
 * @import { ForwardOptions } from './attention-modules.d.ts'
 * @import { GPTConfig } from './models.d.ts'
 * @import { ModuleClasses } from './modules.mjs'
 */

const GPT_KEYS = ['vocab_size', 'context_length', 'emb_dim', 'n_heads', 'n_layers', 'drop_rate', 'qkv_bias', 'eps'];

/**
 * The book's config, checked: every key, no unknown one (a misspelt key
 * would otherwise be a silently different model).
 * @param {unknown} cfg
 * @returns {Required<GPTConfig>}
 */
export function checkGptConfig(cfg) {
  const c = /** @type {Record<string, any>} */ (checkOptionNames('cfg', /** @type {object | undefined} */ (cfg), GPT_KEYS));
  for (const key of ['vocab_size', 'context_length', 'emb_dim', 'n_heads', 'n_layers']) {
    if (c[key] === undefined) throw new TypeError(`cfg.${key} is required (the book's GPT_CONFIG_124M has it), got undefined`);
    checkInteger(`cfg.${key}`, c[key]);
  }
  if (c.emb_dim % c.n_heads !== 0) {
    throw new RangeError(`cfg.emb_dim must be divisible by cfg.n_heads, got ${c.emb_dim} and ${c.n_heads}`);
  }
  return {
    vocab_size: c.vocab_size, context_length: c.context_length, emb_dim: c.emb_dim, n_heads: c.n_heads,
    n_layers: c.n_layers,
    drop_rate: checkProbability('cfg.drop_rate', c.drop_rate ?? 0),
    qkv_bias: checkBoolean('cfg.qkv_bias', c.qkv_bias ?? false),
    eps: c.eps ?? 1e-5,
  };
}

/**
 * Residual sum a + b into a new array.
 * @param {Float32Array} a
 * @param {Float32Array} b
 */
export function add(a, b) {
  const y = new Float32Array(a.length);
  for (let i = 0; i < a.length; i++) y[i] = a[i] + b[i];
  return y;
}

/**
 * The book's FeedForward: layers = Sequential(Linear(emb, 4·emb), GELU(),
 * Linear(4·emb, emb)) (state dict `layers.0.weight`, `layers.2.bias`, ...).
 */
export class FeedForward extends Module {
  /** @param {GPTConfig} cfg */
  constructor(cfg) {
    super();
    const c = checkGptConfig(cfg);
    const { Sequential, Linear, GELU } = /** @type {ModuleClasses} */ (bindingOf(new.target).classes);
    /** @type {import('./containers.mjs').Sequential & { readonly [index: number]: import('./layers.d.ts').Module }} */
    this.layers = this.registerModule('layers', new Sequential(.../** @type {any[]} */ (
      [new Linear(c.emb_dim, 4 * c.emb_dim), new GELU(), new Linear(4 * c.emb_dim, c.emb_dim)])));
    fixFields(this, 'layers');
  }

  /**
   * @param {Float32Array} x  [..., emb_dim]
   * @param {number[]} shape
   * @returns {Float32Array}
   */
  forward(x, shape) {
    return this.layers.forward(x, shape);
  }

  /**
   * @param {Float32Array} gradOutput
   * @returns {Float32Array}
   */
  backward(gradOutput) {
    return /** @type {Float32Array} */ (this.layers.backward(gradOutput));
  }
}

/**
 * The pre-norm block both families share: x + drop(att(norm1(x))), then
 * + drop(ff(norm2(·))) — the book's TransformerBlock (GPT: LayerNorm, GELU
 * FeedForward, drop_shortcut) and its Llama 3.2 block (RMSNorm, the gated
 * FeedForward, no dropout).
 */
export class PreNormBlock extends Module {
  /** @type {Module | null} the second use of drop_shortcut (its own mask) */
  #dropAfterFf = null;

  /**
   * Registers the parts in the book's order: att, ff, norm1, norm2, drop_shortcut.
   * @param {{ att: any, ff: any, norm1: any, norm2: any, drop?: any, drop2?: any }} parts
   */
  setParts({ att, ff, norm1, norm2, drop, drop2 }) {
    this.att = this.registerModule('att', att);
    this.ff = this.registerModule('ff', ff);
    this.norm1 = this.registerModule('norm1', norm1);
    this.norm2 = this.registerModule('norm2', norm2);
    this.dropShortcut = drop ? this.registerModule('drop_shortcut', drop) : null;
    this.#dropAfterFf = drop2 ?? null;
    fixFields(this, 'att', 'ff', 'norm1', 'norm2', 'dropShortcut');
  }

  /**
   * x [batch, tokens, emb] → the block's output; with options.returnWeights,
   * { output, weights }.
   * @param {Float32Array} x
   * @param {number[]} shape
   * @param {ForwardOptions} [options]
   * @returns {Float32Array | { output: Float32Array, weights?: Float32Array }}
   */
  forward(x, shape, options) {
    const att = /** @type {any} */ (this.att);
    const r = att.forward(/** @type {any} */ (this.norm1).forward(x, shape), shape, options);
    let a = r instanceof Float32Array ? r : r.output;
    const drop = /** @type {any} */ (this.dropShortcut);
    const second = /** @type {any} */ (this.#dropAfterFf);
    if (drop) a = drop.forward(a);
    const x1 = add(a, x);
    let f = /** @type {any} */ (this.ff).forward(/** @type {any} */ (this.norm2).forward(x1, shape), shape);
    if (drop && second) {
      // drop_shortcut's second use: its p and mode, a mask of its own.
      second.p = drop.p;
      second.train(drop.training);
      f = second.forward(f);
    }
    const output = add(f, x1);
    if (r instanceof Float32Array) return output;
    const out = { output, weights: r.weights };
    if (r.headOutputs) Object.assign(out, { headOutputs: r.headOutputs, residualMid: x1 });
    return out;
  }

  /**
   * @param {Float32Array} gradOutput
   * @returns {Float32Array}
   */
  backward(gradOutput) {
    const self = /** @type {any} */ (this);
    const second = this.dropShortcut ? /** @type {any} */ (this.#dropAfterFf) : null;
    let g = second ? second.backward(gradOutput) : gradOutput;
    g = self.norm2.backward(self.ff.backward(g));
    const gx1 = add(g, gradOutput);
    /** The gradient of the stream after the attention's add: every head's output's gradient (attribution). */
    this.gradAttentionOutput = gx1;
    let ga = this.dropShortcut ? self.dropShortcut.backward(gx1) : gx1;
    ga = self.norm1.backward(self.att.backward(ga));
    return add(ga, gx1);
  }
}

/**
 * The book's TransformerBlock(cfg): MultiHeadAttention(emb, emb,
 * context_length, drop_rate, n_heads, qkv_bias), FeedForward, two
 * LayerNorms, drop_shortcut.
 */
export class TransformerBlock extends PreNormBlock {
  /** @param {GPTConfig} cfg */
  constructor(cfg) {
    super();
    const c = checkGptConfig(cfg);
    const { MultiHeadAttention, FeedForward: FF, LayerNorm, Dropout } = /** @type {ModuleClasses} */ (bindingOf(new.target).classes);
    const att = new MultiHeadAttention(c.emb_dim, c.emb_dim, c.context_length, c.drop_rate, c.n_heads, c.qkv_bias);
    const ff = new FF(cfg);
    this.setParts({
      att, ff, norm1: new LayerNorm(c.emb_dim, { eps: c.eps }), norm2: new LayerNorm(c.emb_dim, { eps: c.eps }),
      drop: new Dropout(c.drop_rate), drop2: new Dropout(c.drop_rate),
    });
  }
}

/**
 * The book's GPTModel(cfg): tok_emb, pos_emb, drop_emb, trf_blocks,
 * final_norm, out_head (no bias). GPTModel(GPT_CONFIG_124M) has
 * 163,009,536 parameters, as the book prints.
 */
export class GPTModel extends LanguageModel {
  /** @param {GPTConfig} cfg */
  constructor(cfg) {
    const c = checkGptConfig(cfg);
    const binding = bindingOf(new.target);
    super(binding.engine, {
      vocabSize: c.vocab_size, contextLength: c.context_length, embDim: c.emb_dim, nLayers: c.n_layers, nHeads: c.n_heads,
    });
    /** The config, checked (frozen). */
    this.cfg = Object.freeze(c);
    const { Embedding, Dropout, ModuleList, TransformerBlock: Block, LayerNorm, Linear } =
      /** @type {ModuleClasses} */ (binding.classes);
    this.tokEmb = this.registerModule('tok_emb', new Embedding(c.vocab_size, c.emb_dim));
    this.posEmb = this.registerModule('pos_emb', new Embedding(c.context_length, c.emb_dim));
    this.dropEmb = this.registerModule('drop_emb', new Dropout(c.drop_rate));
    this.trfBlocks = this.registerModule('trf_blocks',
      new ModuleList(Array.from({ length: c.n_layers }, () => new Block(cfg))));
    this.finalNorm = this.registerModule('final_norm', new LayerNorm(c.emb_dim, { eps: c.eps }));
    this.outHead = this.registerModule('out_head', new Linear(c.emb_dim, c.vocab_size, false));
    fixFields(this, 'cfg', 'tokEmb', 'posEmb', 'dropEmb', 'trfBlocks', 'finalNorm', 'outHead');
  }

  /** @returns {any} */
  parts() {
    return {
      tokEmb: this.tokEmb, blocks: [...this.trfBlocks], finalNorm: this.finalNorm, outHead: this.outHead,
      embedDropout: this.dropEmb,
    };
  }

  /**
   * x += pos_emb rows start.., the same for every sequence (the book's
   * tok_embeds + pos_embeds broadcast).
   * @param {Float32Array} x
   * @param {number} batch
   * @param {number} tokens
   * @param {number} start
   */
  addPositions(x, batch, tokens, start) {
    const ids = new Int32Array(batch * tokens);
    for (let b = 0; b < batch; b++) for (let t = 0; t < tokens; t++) ids[b * tokens + t] = start + t;
    const pos = this.posEmb.forward(ids, [batch, tokens]);
    for (let i = 0; i < x.length; i++) x[i] += pos[i];
  }

  /** @param {Float32Array} g */
  positionsBackward(g) {
    this.posEmb.backward(g);
  }
}
