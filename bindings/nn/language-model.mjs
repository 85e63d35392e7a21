// What the book's GPTModel (ch. 4) and its Llama 3.2 (the bonus material)
// share, written once: token ids in, logits out, through an embedding, a
// list of transformer blocks, a final norm and out_head; the backward in
// reverse; per-layer options (caches, padding, masks, head masks) handed to
// each block's attention; and generation (ch. 5's generate, with a KV cache
// per layer). The subclasses (gpt.mjs, llama.mjs) build the parts and say
// how positions enter (GPT: a learned pos_emb; Llama: RoPE inside the
// attention).

import {
  checkBoolean, checkIndices, checkInteger, checkOptionNames, checkSeed, checkShape, describe,
} from '../api/validate.mjs';
import { MT19937 } from '../api/random.mjs';
import { product } from '../engine/heap.mjs';
import { Module, fixFields } from './module.mjs';

/**
 * @import { ForwardOptions } from './attention-modules.d.ts'
 * @import { Engine } from './module.mjs'
 * @import { ModelForwardOptions, ModelForwardResult, GenerateOptions } from './models.d.ts'
 */

/**
 * A block as the model calls it (gpt.mjs's TransformerBlock, llama.mjs's).
 * @typedef {Module & {
 *   forward(x: Float32Array, shape: number[], options: ForwardOptions): Float32Array | { output: Float32Array, weights?: Float32Array, headOutputs?: Float32Array },
 *   backward(g: Float32Array): Float32Array,
 *   att: { cacheLength: number, resetCache(): unknown, numHeads: number },
 * }} Block
 */

/**
 * A part with forward(x, shape) → Float32Array and backward(g).
 * @typedef {Module & { forward(x: Float32Array, shape: number[]): Float32Array, backward(g: Float32Array): Float32Array }} Layer
 */

const FORWARD_OPTIONS = ['returnWeights', 'useCache', 'cacheDtype', 'keyLengths', 'mask', 'maskShape', 'headMask', 'seed', 'precision',
  'returnResidual', 'returnHeadOutputs', 'patchHeads'];
const GENERATE_OPTIONS = ['maxNewTokens', 'temperature', 'topK', 'topP', 'eosId', 'seed', 'useCache', 'cacheDtype'];

export class LanguageModel extends Module {
  /** @type {Engine} */
  #engine;

  /**
   * @param {Engine} engine
   * @param {{ vocabSize: number, contextLength: number, embDim: number, nLayers: number, nHeads: number }} sizes
   */
  constructor(engine, sizes) {
    super();
    this.#engine = engine;
    /** Tokens in the vocabulary: the logits' last axis. */
    this.vocabSize = sizes.vocabSize;
    /** Most positions a sequence may reach (with a cache: cached tokens and new ones together). */
    this.contextLength = sizes.contextLength;
    /** Width of the residual stream. */
    this.embDim = sizes.embDim;
    /** Transformer blocks. */
    this.nLayers = sizes.nLayers;
    /** Attention heads per block. */
    this.nHeads = sizes.nHeads;
    fixFields(this, 'vocabSize', 'contextLength', 'embDim', 'nLayers', 'nHeads');
  }

  /** @returns {Engine} */
  get engine() {
    return this.#engine;
  }

  /**
   * The parts, set by the subclass's constructor.
   * @returns {{ tokEmb: Layer & { forward(ids: Int32Array, shape: number[]): Float32Array },
   *   blocks: Block[], finalNorm: Layer, outHead: Layer, embedDropout: Layer | null }}
   */
  parts() {
    throw new TypeError('LanguageModel is abstract');
  }

  /**
   * Adds the positions' part to the token embeddings x [batch, tokens, emb]
   * in place (GPT's pos_emb; nothing for RoPE models). `start`: the first
   * new token's position (the cache's length).
   * @param {Float32Array} x
   * @param {number} batch
   * @param {number} tokens
   * @param {number} start
   */
  addPositions(x, batch, tokens, start) {
    void x; void batch; void tokens; void start;
  }

  /**
   * The backward of addPositions (gradient of the embedded input).
   * @param {Float32Array} g
   */
  positionsBackward(g) {
    void g;
  }

  /**
   * The number of parameters (the book's sum(p.numel() for p in
   * model.parameters()): 163,009,536 for GPT_CONFIG_124M).
   * @returns {number}
   */
  numParameters() {
    return this.parameters().reduce((sum, p) => sum + p.data.length, 0);
  }

  /** Tokens the blocks' caches hold (0 without a cache). */
  get cacheLength() {
    return this.parts().blocks[0]?.att.cacheLength ?? 0;
  }

  /**
   * Empties every layer's KV cache. Returns the model.
   * @returns {this}
   */
  resetCache() {
    for (const block of this.parts().blocks) block.att.resetCache();
    return this;
  }

  // What forward returns for which options, as models.d.ts declares it.
  /**
   * @overload
   * @param {Int32Array | Uint32Array | number[]} idx
   * @param {number[]} [shape]
   * @param {ModelForwardOptions & { returnWeights?: false, returnResidual?: false, returnHeadOutputs?: false }} [options]
   * @returns {Float32Array}
   */
  /**
   * @overload
   * @param {Int32Array | Uint32Array | number[]} idx
   * @param {number[] | undefined} shape
   * @param {ModelForwardOptions & ({ returnWeights: true } | { returnResidual: true } | { returnHeadOutputs: true })} options
   * @returns {ModelForwardResult}
   */
  /**
   * @overload
   * @param {Int32Array | Uint32Array | number[]} idx
   * @param {number[]} [shape]
   * @param {ModelForwardOptions} [options]
   * @returns {Float32Array | ModelForwardResult}
   */
  /**
   * Token ids [batch, tokens] (or [tokens]) → logits [batch, tokens,
   * vocabSize]; with returnWeights, { logits, weights } (one [batch, heads,
   * tokens, keys] array per layer, from the fused kernel). In training
   * mode it keeps what backward() needs.
   * @param {Int32Array | Uint32Array | number[]} idx
   * @param {number[]} [shape]
   * @param {ModelForwardOptions} [options]
   * @returns {Float32Array | ModelForwardResult}
   */
  forward(idx, shape, options) {
    return this.#forward(idx, shape, options, false);
  }

  /**
   * forward's body; `lastOnly`: the final norm and out_head on each
   * sequence's last token only (generate's prefill needs no other logits:
   * out_head is a quarter of GPT-2 small's multiply-adds), logits [batch, 1, vocab].
   * @param {Int32Array | Uint32Array | number[]} idx
   * @param {number[] | undefined} shape
   * @param {ModelForwardOptions | undefined} options
   * @param {boolean} lastOnly
   * @returns {Float32Array | ModelForwardResult}
   */
  #forward(idx, shape, options, lastOnly) {
    this.#engine.checkAlive();
    const o = checkOptionNames('options', options, FORWARD_OPTIONS);
    const { tokEmb, blocks, finalNorm, outHead, embedDropout } = this.parts();
    const ids = checkIndices('idx', idx, this.vocabSize);
    const dims = shape === undefined ? [ids.length] : checkShape('shape', shape, 1, 2);
    if (product(...dims) !== ids.length) {
      throw new RangeError(`idx must have length ${product(...dims)} (shape [${dims.join(', ')}]), got length ${ids.length}`);
    }
    const [batch, tokens] = dims.length === 2 ? dims : [1, dims[0]];
    const useCache = checkBoolean('options.useCache', o.useCache ?? false);
    const start = useCache ? this.cacheLength : 0;
    if (start + tokens > this.contextLength) {
      throw new RangeError(`tokens must be at most contextLength ${this.contextLength}` +
        `${start ? ` minus the ${start} cached` : ''}, got ${tokens}`);
    }
    const returnWeights = checkBoolean('options.returnWeights', o.returnWeights ?? false);
    const returnResidual = checkBoolean('options.returnResidual', o.returnResidual ?? false);
    const returnHeadOutputs = checkBoolean('options.returnHeadOutputs', o.returnHeadOutputs ?? false);
    const patches = this.#patches(o.patchHeads);
    const headMasks = this.#headMasks(o.headMask, batch);
    const xShape = [batch, tokens, this.embDim];
    let x = tokEmb.forward(ids, [batch, tokens]);
    this.addPositions(x, batch, tokens, start);
    if (embedDropout) x = embedDropout.forward(x, xShape);
    /** @type {Float32Array[]} */
    const weights = [];
    /** @type {Float32Array[]} */
    const residual = returnResidual ? [x.slice()] : [];
    /** @type {Float32Array[]} */
    const headOutputs = [];
    blocks.forEach((block, layer) => {
      /** @type {ForwardOptions} */
      const att = { useCache, returnWeights };
      if (returnHeadOutputs) att.returnHeadOutputs = true;
      // With any hook every layer sums its heads' outputs (an empty patch
      // where none is given): captures and patches see the same stream.
      if (patches[layer]) att.patchHeads = patches[layer];
      else if (patches.length) att.patchHeads = { heads: [], values: new Float32Array(0) };
      for (const key of /** @type {const} */ (['cacheDtype', 'keyLengths', 'mask', 'maskShape', 'precision'])) {
        if (o[key] !== undefined) /** @type {any} */ (att)[key] = o[key];
      }
      // Layer l's attention dropout draws from seed + l (one seed for all would repeat its masks).
      if (o.seed !== undefined) {
        checkSeed('options.seed', o.seed);
        att.seed = (BigInt(/** @type {number | bigint} */ (o.seed)) + BigInt(layer)) % 2n ** 64n;
      }
      if (headMasks) att.headMask = headMasks[layer];
      const r = block.forward(x, xShape, att);
      if (r instanceof Float32Array) {
        x = r;
      } else {
        x = r.output;
        if (r.weights) weights.push(r.weights);
        if (r.headOutputs) headOutputs.push(r.headOutputs);
      }
      if (returnResidual) residual.push(x.slice());
    });
    let outShape = xShape;
    if (lastOnly && tokens > 1) {
      const E = this.embDim;
      const last = new Float32Array(batch * E);
      for (let b = 0; b < batch; b++) last.set(x.subarray(((b + 1) * tokens - 1) * E, (b + 1) * tokens * E), b * E);
      x = last;
      outShape = [batch, 1, E];
    }
    x = finalNorm.forward(x, outShape);
    const logits = outHead.forward(x, outShape);
    if (!returnWeights && !returnResidual && !returnHeadOutputs) return logits;
    /** @type {ModelForwardResult} */
    const result = { logits, weights };
    if (returnResidual) result.residual = residual;
    if (returnHeadOutputs) result.headOutputs = headOutputs;
    return result;
  }

  /**
   * @overload
   * @param {Float32Array} gradLogits
   * @param {{ returnAttentionOutputGrads?: false }} [options]
   * @returns {null}
   */
  /**
   * @overload
   * @param {Float32Array} gradLogits
   * @param {{ returnAttentionOutputGrads: true }} options
   * @returns {{ attentionOutputGrads: Float32Array[] }}
   */
  /**
   * The backward of the last training forward: gradLogits [batch, tokens,
   * vocabSize] (crossEntropy's gradLogits); every parameter's gradient
   * accumulates (+=). Returns null (token ids have no gradient), or with
   * returnAttentionOutputGrads each layer's gradient of the stream after
   * its attention's add [batch, tokens, embDim]: the gradient of every
   * head's output of that layer (attribution patching multiplies it by an
   * output's change).
   * @param {Float32Array} gradLogits
   * @param {{ returnAttentionOutputGrads?: boolean }} [options]
   * @returns {null | { attentionOutputGrads: Float32Array[] }}
   */
  backward(gradLogits, options) {
    this.#engine.checkAlive();
    const o = checkOptionNames('options', options, ['returnAttentionOutputGrads']);
    const returnGrads = checkBoolean('options.returnAttentionOutputGrads', o.returnAttentionOutputGrads ?? false);
    const { tokEmb, blocks, finalNorm, outHead, embedDropout } = this.parts();
    // Each part checks its own gradient and says when its forward kept nothing.
    let g = outHead.backward(gradLogits);
    g = finalNorm.backward(g);
    for (let layer = blocks.length - 1; layer >= 0; layer--) g = blocks[layer].backward(g);
    if (embedDropout) g = embedDropout.backward(g);
    this.positionsBackward(g);
    tokEmb.backward(g);
    if (!returnGrads) return null;
    return { attentionOutputGrads: blocks.map((b) => /** @type {Float32Array} */ (/** @type {any} */ (b).gradAttentionOutput)) };
  }

  /**
   * options.patchHeads: [{ layer, heads, values, positions? }] → each
   * layer's patch (checked in full by its attention), or [].
   * @param {unknown} patchHeads
   * @returns {Array<import('./attention-modules.d.ts').HeadPatch | undefined>}
   */
  #patches(patchHeads) {
    if (patchHeads === undefined) return [];
    if (!Array.isArray(patchHeads)) {
      throw new TypeError(`options.patchHeads must be an Array of { layer, heads, values, positions? }, got ${describe(patchHeads)}`);
    }
    /** @type {Array<import('./attention-modules.d.ts').HeadPatch | undefined>} */
    const byLayer = [];
    patchHeads.forEach((p, i) => {
      const { layer, ...patch } = /** @type {Record<string, any>} */ (checkOptionNames(`options.patchHeads[${i}]`,
        /** @type {object | undefined} */ (p ?? null), ['layer', 'heads', 'values', 'positions']));
      checkInteger(`options.patchHeads[${i}].layer`, layer, 0);
      if (layer >= this.nLayers) throw new RangeError(`options.patchHeads[${i}].layer must be below nLayers ${this.nLayers}, got ${layer}`);
      if (byLayer[layer]) throw new RangeError(`options.patchHeads names layer ${layer} twice: give its heads in one entry`);
      byLayer[layer] = /** @type {import('./attention-modules.d.ts').HeadPatch} */ (patch);
    });
    return byLayer;
  }

  /**
   * headMask [nLayers, heads] or [nLayers, batch, heads] → one array per
   * layer (checked by each attention for its size), or null.
   * @param {unknown} headMask
   * @param {number} batch
   * @returns {Float32Array[] | null}
   */
  #headMasks(headMask, batch) {
    if (headMask === undefined || headMask === null) return null;
    if (!(headMask instanceof Float32Array)) {
      throw new TypeError(`options.headMask must be a Float32Array [nLayers, heads] or [nLayers, batch, heads], got ${describe(headMask)}`);
    }
    const per = headMask.length / this.nLayers;
    if (per !== this.nHeads && per !== batch * this.nHeads) {
      throw new RangeError(`options.headMask must have length nLayers × heads = ${this.nLayers * this.nHeads} ` +
        `or nLayers × batch × heads = ${this.nLayers * batch * this.nHeads}, got length ${headMask.length}`);
    }
    return Array.from({ length: this.nLayers }, (_, l) => headMask.subarray(l * per, (l + 1) * per));
  }

  /**
   * @overload
   * @param {Int32Array | Uint32Array | number[]} idx
   * @param {GenerateOptions} options
   * @returns {Int32Array}
   */
  /**
   * @overload
   * @param {ReadonlyArray<Int32Array | Uint32Array | number[]>} idx
   * @param {GenerateOptions} options
   * @returns {Int32Array[]}
   */
  /**
   * The book's generate (ch. 5): appends maxNewTokens tokens to each
   * prompt, greedy (temperature 0, the default) or sampled from the
   * softmax of logits / temperature (topK, then topP), seeded. With
   * useCache (the default) the prompt runs once and each new token once,
   * through a KV cache per layer (emptied first and after); without, every
   * step runs the whole sequence (its last contextLength tokens). Runs in
   * eval mode (the model's mode is restored after). eosId: a row stops at
   * it (the rest of the row is eosId; the call ends when every row has).
   * @param {Int32Array | Uint32Array | number[] | ReadonlyArray<Int32Array | Uint32Array | number[]>} idx
   *   one prompt, or a batch of prompts of one length
   * @param {GenerateOptions} options
   * @returns {Int32Array | Int32Array[]}  prompt and new tokens, per row
   */
  generate(idx, options) {
    this.#engine.checkAlive();
    const o = checkOptionNames('options', options, GENERATE_OPTIONS);
    const nested = Array.isArray(idx) && idx.length > 0 && typeof idx[0] !== 'number';
    const rows = (nested ? /** @type {any[]} */ (idx) : [idx]).map((row, b) =>
      Int32Array.from(checkIndices(nested ? `idx[${b}]` : 'idx', row, this.vocabSize)));
    const promptLength = rows[0].length;
    rows.forEach((row, b) => {
      if (row.length !== promptLength || row.length === 0) {
        throw new RangeError(`idx[${b}] must have length ${promptLength || '≥ 1'} (every prompt one length), got length ${row.length}`);
      }
    });
    const maxNewTokens = checkInteger('options.maxNewTokens', o.maxNewTokens, 0);
    const sampler = new Sampler(o, this.#engine.generator);
    const useCache = checkBoolean('options.useCache', o.useCache ?? true);
    if (useCache && promptLength + maxNewTokens > this.contextLength) {
      throw new RangeError(`the prompt's ${promptLength} tokens plus options.maxNewTokens ${maxNewTokens} must be at most ` +
        `contextLength ${this.contextLength} with useCache (without it the context is cropped, as the book's generate does)`);
    }
    const eosId = o.eosId === undefined ? null : checkInteger('options.eosId', o.eosId, 0);
    const batch = rows.length;
    const total = promptLength + maxNewTokens;
    const out = rows.map((row) => {
      const r = new Int32Array(total);
      r.set(row);
      return r;
    });
    const done = new Uint8Array(batch);
    const wasTraining = this.training;
    this.eval();
    this.resetCache();
    try {
      let length = promptLength;
      while (length < total && !done.every(Boolean)) {
        const from = useCache ? (length === promptLength ? 0 : length - 1) : Math.max(0, length - this.contextLength);
        const tokens = length - from;
        const ids = new Int32Array(batch * tokens);
        out.forEach((r, b) => ids.set(r.subarray(from, length), b * tokens));
        const logits = /** @type {Float32Array} */ (this.#forward(ids, [batch, tokens],
          useCache ? { useCache, ...(o.cacheDtype === undefined ? {} : { cacheDtype: o.cacheDtype }) } : undefined, true));
        for (let b = 0; b < batch; b++) {
          const at = b * this.vocabSize;
          const next = done[b] && eosId !== null ? eosId : sampler.pick(logits.subarray(at, at + this.vocabSize));
          out[b][length] = next;
          if (eosId !== null && next === eosId) done[b] = 1;
        }
        length += 1;
      }
      const result = out.map((r) => r.slice(0, length));
      return nested ? result : result[0];
    } finally {
      this.resetCache();
      this.train(wasTraining);
    }
  }
}

/** The next token from a row of logits: argmax, or seeded sampling. */
class Sampler {
  /**
   * @param {Partial<GenerateOptions>} o
   * @param {MT19937} generator  the runtime's: draws the seed when options.seed is not given
   */
  constructor(o, generator) {
    const t = o.temperature ?? 0;
    if (typeof t !== 'number' || !(t >= 0) || !Number.isFinite(t)) {
      throw new RangeError(`options.temperature must be a finite number ≥ 0, got ${describe(o.temperature)}`);
    }
    this.temperature = t;
    this.topK = o.topK === undefined ? null : checkInteger('options.topK', o.topK);
    const p = o.topP ?? 1;
    if (typeof p !== 'number' || !(p > 0 && p <= 1)) {
      throw new RangeError(`options.topP must be a number in (0, 1], got ${describe(o.topP)}`);
    }
    this.topP = p;
    this.random = new MT19937(BigInt(o.seed === undefined ? generator.nextUint32() : checkInteger('options.seed', o.seed, 0)));
  }

  /**
   * @param {Float32Array} logits
   * @returns {number}
   */
  pick(logits) {
    // NaN logits (a model with NaN or infinite weights) name no token: say so, never pick one.
    for (let i = 0; i < logits.length; i++) {
      if (Number.isNaN(logits[i])) throw new RangeError(`generate: the model's logits hold NaN (token ${i}): no next token`);
    }
    if (this.temperature === 0) {
      // torch.argmax: the first of equal largest values.
      let best = 0;
      for (let i = 1; i < logits.length; i++) if (logits[i] > logits[best]) best = i;
      return best;
    }
    if (this.topK === null && this.topP === 1) return this.#draw(logits);
    const keep = this.#candidates(logits);
    const max = logits[keep[0]];
    const p = keep.map((i) => Math.exp((logits[i] - max) / this.temperature));
    const sum = p.reduce((s, v) => s + v, 0);
    // Nucleus: the fewest tokens whose probability reaches topP.
    let n = 0;
    for (let acc = 0; n < keep.length && acc < this.topP * sum; n++) acc += p[n];
    const mass = p.slice(0, n).reduce((s, v) => s + v, 0);
    let u = this.random.nextUint32() / 2 ** 32 * mass;
    for (let i = 0; i < n; i++) {
      u -= p[i];
      if (u < 0) return keep[i];
    }
    return keep[n - 1];
  }

  /**
   * A draw from softmax(logits / temperature) over the whole vocabulary, in
   * token order (no sorting needed).
   * @param {Float32Array} logits
   * @returns {number}
   */
  #draw(logits) {
    let max = -Infinity;
    for (const x of logits) max = Math.max(max, x);
    const p = new Float64Array(logits.length);
    let sum = 0;
    for (let i = 0; i < logits.length; i++) sum += (p[i] = Math.exp((logits[i] - max) / this.temperature));
    let u = this.random.nextUint32() / 2 ** 32 * sum;
    for (let i = 0; i < p.length; i++) {
      u -= p[i];
      if (u < 0) return i;
    }
    return logits.length - 1;
  }

  /**
   * The tokens sampling may pick, largest logit first (ties: lower id
   * first): the topK largest, or every token. With topK the vocabulary is
   * not sorted: the k-th largest value is found first (a partial sort of a
   * copy) and only the tokens at or above it are ordered.
   * @param {Float32Array} logits
   * @returns {number[]}
   */
  #candidates(logits) {
    const byValue = (/** @type {number} */ a, /** @type {number} */ b) => logits[b] - logits[a] || a - b;
    const k = this.topK ?? logits.length;
    if (k >= logits.length) return Array.from(logits.keys()).sort(byValue);
    const values = logits.slice().sort();
    const threshold = values[values.length - k];
    /** @type {number[]} */
    const above = [];
    for (let i = 0; i < logits.length; i++) if (logits[i] >= threshold) above.push(i);
    return above.sort(byValue).slice(0, k);
  }
}
