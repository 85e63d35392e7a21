// The attention modules' shared layer (AttentionLayer) and the base of the
// modules with one Q/K/V projection each (ProjectedAttention), which
// attention.mjs's book classes and grouped-query-attention.mjs extend.
//
// Each forward copies x and the parameters into the runtime's scratch heap
// and runs one C++ layer forward (src/model/layer.cc: projections, RoPE, split
// heads, attention, merge, out_proj); each backward copies them and the kept
// activations in again and runs the layer's backward, accumulating into the
// projections' gradient arrays. The only wasm memory a module holds is its
// KV cache between a forward(..., { useCache: true }) and resetCache() (or
// dispose()).

import {
  CACHE_ADVANCE, CACHE_COMPACT, CACHE_RESERVE, CACHE_ROWS, CACHE_VIEW, checkCacheDtype,
} from '../api/kv-cache.mjs';
import {
  checkBoolean, checkHeadMask, checkInteger, checkOptionNames, checkProbability, checkShape, checkTensor,
} from '../api/validate.mjs';
import { product } from '../engine/heap.mjs';
import { renormalizes, resolveAttentionOptions, resolveVisibility } from '../api/attention-options.mjs';
import { checkCircuitModule, ovCircuit, qkCircuit } from './circuits.mjs';
import { backwardMask, checkPatch, headOutputs, patchedOutput } from './head-hooks.mjs';
import { Kept, copyInto, gradOrZeros } from './kept.mjs';
import { Module, bindingOf, fixFields, keepGrad } from './module.mjs';
import { inferenceOnly } from './weights-dtype.mjs';

/**
 * @import {
 *   ForwardOptions, ForwardResult, ForwardResultWithHeadOutputs, ForwardResultWithQKV, ForwardResultWithScores,
 *   ForwardResultWithWeights,
 * } from './attention-modules.d.ts'
 * @import { KVCache } from '../api/kv-cache.mjs'
 * @import { CausalAttention } from './attention.mjs'
 * @import { GroupedQueryAttention } from './grouped-query-attention.mjs'
 * @import { Linear } from './linear.mjs'
 * @import { LayerArrayName, LayerGrads, LayerOptions, LayerParams, LayerSaved } from './module.mjs'
 */

/**
 * What each module class adds to AttentionLayer: its output width, its
 * layer's parameters and gradients, and (the wrapper) its heads.
 * @typedef {object} LayerParts
 * @property {number} outputDim
 * @property {CausalAttention[]} [heads]
 * @property {Linear} [outProj] the out projection (MultiHeadAttention, GroupedQueryAttention)
 * @property {() => LayerParams} layerParams
 * @property {() => LayerGrads} layerGrads
 * @property {(grads: LayerGrads, sums: LayerGrads) => void} keepLayerGrads
 * @property {() => { window?: { left: number }, softcap?: number }} [layerRules] the
 *   module's own attention rules (GroupedQueryAttention's slidingWindow and softcap)
 */

const FORWARD_OPTIONS = [
  'returnWeights', 'returnScores', 'returnQKV', 'maskStrategy', 'seed', 'out', 'useCache', 'cacheDtype',
  'keyLengths', 'mask', 'maskShape', 'headMask', 'returnHeadOutputs', 'patchHeads', 'precision',
];

/** A module's first cache holds this many tokens (or contextLength); it doubles as needed. */
const FIRST_CACHE_CAPACITY = 256;

/** Shared by the attention modules. */
export class AttentionLayer extends Module {
  #engine;
  #causal;
  #dropout;
  /** @type {KVCache | null} */
  #cache = null;
  /** @type {Kept<{ x: Float32Array, options: LayerOptions, saved: LayerSaved }>} */
  #kept = new Kept();
  /**
   * The arrays the last backward consumed, for the next training forward
   * to copy into (a training step allocates none); dropped by an eval or
   * cached forward.
   * @type {{ x: Float32Array, saved: LayerSaved } | null}
   */
  #spare = null;

  /**
   * @param {number} dIn
   * @param {number | undefined} contextLength  undefined: no limit (SelfAttention)
   * @param {number} dropout
   * @param {boolean} causal
   */
  constructor(dIn, contextLength, dropout, causal) {
    super();
    this.#engine = bindingOf(new.target).engine;
    this.#causal = causal;
    this.dIn = dIn;
    this.contextLength = contextLength;
    fixFields(this, 'dIn', 'contextLength');
    this.#dropout = dropout;
  }

  /**
   * The dropout probability on the attention weights, in [0, 1); settable
   * like nn.Dropout's p (the wrapper passes it on to its heads).
   */
  /** @returns {number} */
  get dropout() {
    return this.#dropout;
  }

  /** @param {number} p */
  set dropout(p) {
    this.#dropout = checkProbability('dropout', p);
    for (const head of this.#parts().heads ?? []) head.dropout = p;
  }

  /**
   * This module as the subclass completes it (LayerParts).
   * @returns {this & LayerParts}
   */
  #parts() {
    return /** @type {this & LayerParts} */ (this);
  }

  // What forward returns for which options, as index.d.ts declares it.
  /**
   * @overload
   * @param {Float32Array} x
   * @param {number[]} shape
   * @param {ForwardOptions & { returnWeights?: false, returnScores?: false, returnQKV?: false, returnHeadOutputs?: false }} [options]
   * @returns {Float32Array}
   */
  /**
   * @overload
   * @param {Float32Array} x
   * @param {number[]} shape
   * @param {ForwardOptions & { returnWeights: true }} options
   * @returns {ForwardResultWithWeights}
   */
  /**
   * @overload
   * @param {Float32Array} x
   * @param {number[]} shape
   * @param {ForwardOptions & { returnScores: true }} options
   * @returns {ForwardResultWithScores}
   */
  /**
   * @overload
   * @param {Float32Array} x
   * @param {number[]} shape
   * @param {ForwardOptions & { returnQKV: true }} options
   * @returns {ForwardResultWithQKV}
   */
  /**
   * @overload
   * @param {Float32Array} x
   * @param {number[]} shape
   * @param {ForwardOptions & { returnHeadOutputs: true }} options
   * @returns {ForwardResultWithHeadOutputs}
   */
  /**
   * @overload
   * @param {Float32Array} x
   * @param {number[]} shape
   * @param {ForwardOptions} [options]
   * @returns {Float32Array | ForwardResult}
   */
  /**
   * x: Float32Array of shape [batch, tokens, dIn] (or [tokens, dIn]).
   * Returns the output Float32Array [batch, tokens, outputDim], or with
   * returnWeights / returnScores / returnQKV an object { output, weights,
   * scores, queries, keys, values }: weights [batch, heads, tokens,
   * keys] (post-dropout when dropout ran), scores the raw Q·Kᵀ (before
   * scaling and masking), queries/keys/values this call's projected heads
   * [batch, heads (keys, values: KV heads), tokens, headDim] (after RoPE).
   * Options: maskStrategy ('neg-inf' | 'renormalize'), seed (dropout
   * seed; default: drawn from the runtime's generator), out, useCache
   * (the book's ch04/03 KV cache: append this call's keys and values to
   * the module's cache and attend over all of it; positions continue,
   * so a prompt and then one token per call give one full forward's
   * outputs; keys = cached + tokens), headMask (Hugging Face's
   * head_mask: a Float32Array [heads] or [batch, heads] multiplying each
   * head's attention output before the heads are merged and projected; 0
   * knocks a head out; the backward honours it; weights and scores are
   * the heads' own, unscaled).
   * In training mode (without useCache) it keeps what backward() needs:
   * x, the projected heads, the attention output and its log-sum-exp, the
   * dropout seed.
   * @param {Float32Array} x
   * @param {number[]} shape
   * @param {ForwardOptions} [options]
   * @returns {Float32Array | ForwardResult}
   */
  forward(x, shape, options) {
    const parts = this.#parts();
    const engine = this.#engine;
    engine.checkAlive();
    const o = checkOptionNames('options', options, FORWARD_OPTIONS);
    const dims = checkShape('shape', shape, 2, 3);
    const [batch, tokens, dIn] = dims.length === 3 ? dims : [1, ...dims];
    if (dIn !== this.dIn) {
      throw new RangeError(`shape[${dims.length - 1}] must be dIn ${this.dIn} for this module, got ${dIn}`);
    }
    if (this.contextLength !== undefined && tokens > this.contextLength) {
      throw new RangeError(
        `the number of tokens (shape[${dims.length - 2}]) must be at most contextLength ${this.contextLength}, got ${tokens}`);
    }
    checkTensor('x', x, product(...dims), `shape [${dims.join(', ')}]`);
    const returnWeights = checkBoolean('options.returnWeights', o.returnWeights ?? false);
    const returnScores = checkBoolean('options.returnScores', o.returnScores ?? false);
    const returnQKV = checkBoolean('options.returnQKV', o.returnQKV ?? false);
    const useCache = checkBoolean('options.useCache', o.useCache ?? false);
    const cacheDtype = checkCacheDtype('options.cacheDtype', o.cacheDtype ?? 'float32');
    if (useCache && returnScores && cacheDtype !== 'float32') {
      throw new RangeError(`options.returnScores needs options.cacheDtype 'float32' with useCache, got '${cacheDtype}'`);
    }
    // With a cache the new tokens come after the cached ones: the mask's
    // bottom-right alignment (the same triangle without one).
    const causal = useCache && this.#causal ? 'bottom-right' : this.#causal;
    const attention = resolveAttentionOptions('options', {
      causal, maskStrategy: o.maskStrategy, dropout: this.dropout,
      training: this.training, seed: o.seed, precision: o.precision,
    }, engine.generator);
    const outputLength = batch * tokens * parts.outputDim;
    if (o.out !== undefined) {
      checkTensor('options.out', o.out, outputLength,
        `batch ${batch} × tokens ${tokens} × output width ${parts.outputDim}`);
    }
    const params = parts.layerParams();
    // Padding (keyLengths), a mask over this call's keys (the cached ones
    // first), the module's window and softcap; checked before the cache
    // grows. After a cache of n tokens the new ones sit at n.., however
    // short a batch item's keys.
    const held = useCache ? this.cacheLength : 0;
    const rules = parts.layerRules?.() ?? {};
    // A sliding window's cache holds only the window's keys (and those of
    // this call): rows, not positions, which padding or a mask would name.
    const window = useCache && rules.window ? rules.window.left + 1 : 0;
    for (const name of /** @type {const} */ (['keyLengths', 'mask'])) {
      if (window && o[name] !== undefined) {
        throw new RangeError(`options.${name} is not taken with useCache by a module with slidingWindow: ` +
          `its cache keeps only the window's ${window - 1} newest tokens`);
      }
    }
    const visibility = resolveVisibility('options',
      { keyLengths: o.keyLengths, mask: o.mask, maskShape: o.maskShape, ...rules },
      { batch, heads: params.numHeads, queryLength: tokens, keyLength: held + tokens },
      renormalizes({ maskStrategy: o.maskStrategy, causal }));
    Object.assign(attention, visibility.fields);
    if (useCache && o.keyLengths !== undefined) attention.queryOffset = held;
    const headMask = checkHeadMask('options.headMask', o.headMask, batch, params.numHeads);
    // Each head's output, and patches of it (head-hooks.mjs).
    const returnHeadOutputs = checkBoolean('options.returnHeadOutputs', o.returnHeadOutputs ?? false);
    const hooks = returnHeadOutputs || o.patchHeads !== undefined;
    // The out projection's float32 weight (made from a stored one if need be).
    const wOut = hooks ? params.wOut ?? parts.outProj?.weight : null;
    if (hooks && !wOut) {
      throw new TypeError(`options.returnHeadOutputs and options.patchHeads need a module with out_proj ` +
        `(MultiHeadAttention, GroupedQueryAttention); ${this.constructor.name} has none`);
    }
    if (hooks && useCache) throw new RangeError('options.returnHeadOutputs and options.patchHeads are not taken with useCache');
    const sizes = { batch, tokens, numHeads: params.numHeads, headDim: params.headDim, outputDim: parts.outputDim };
    const patch = o.patchHeads === undefined ? null : checkPatch(o.patchHeads, sizes);
    const cache = useCache ? this.#cacheFor(batch, tokens, params, window, cacheDtype) : null;
    const layerOptions = {
      batch, tokens, attention, cache: cache?.[CACHE_VIEW](), arrays: visibility.arrays, headMask,
    };
    const keep = (this.training && !useCache && !params.stored) || hooks;
    const spare = keep ? this.#spare : null;
    const result = engine.layerForward({
      params, x, dIn, options: layerOptions,
      returnWeights, returnScores, returnQKV, out: o.out, keep, savedInto: spare?.saved,
    });
    this.#spare = null;
    cache?.[CACHE_ADVANCE](tokens);
    const own = hooks ? headOutputs(engine, /** @type {LayerSaved} */ (result.saved).context, headMask, sizes,
      /** @type {Float32Array} */ (wOut)) : null;
    // With either hook the output is the bias plus the heads' outputs (or
    // patches), summed in head order: a capture and a patch give the same bits.
    if (own) {
      const y = patchedOutput(own, params.bOut ?? null, patch ?? { heads: [], values: new Float32Array(0), positions: null }, sizes);
      if (o.out) /** @type {Float32Array} */ (o.out).set(y);
      result.output = o.out ?? y;
    }
    // make() runs only after a training forward without cache: keep was true.
    // The backward reads x and the mask again: copies of the caller's arrays,
    // so that changing them after forward() changes no gradient (keyLengths
    // and headMask are copies already).
    this.#kept.set(this.training, () => ({
      x: copyInto(spare?.x, x),
      options: {
        ...layerOptions, arrays: visibility.arrays && { ...visibility.arrays, mask: visibility.arrays.mask?.slice() ?? null },
        headMask: patch ? backwardMask(headMask, patch, batch, params.numHeads) : headMask,
      },
      saved: /** @type {LayerSaved} */ (result.saved),
    }), useCache ? 'it used the KV cache (useCache), which has no backward'
      : params.stored ? inferenceOnly(params.stored.dtype) : undefined);
    delete result.saved;
    if (own && returnHeadOutputs) /** @type {ForwardResult} */ (result).headOutputs = own;
    return returnWeights || returnScores || returnQKV || returnHeadOutputs ? result : result.output;
  }

  /**
   * The backward of the last training forward: gradOutput [batch, tokens,
   * outputDim] → the gradient of x [batch, tokens, dIn] (a Float32Array);
   * every parameter's gradient accumulates (+=). Uses the parameters as
   * they are now: change them after backward(), not between (PyTorch
   * would refuse).
   * @param {Float32Array} gradOutput
   * @returns {Float32Array}
   */
  backward(gradOutput) {
    const parts = this.#parts();
    this.#engine.checkAlive();
    const { x, options, saved } = this.#kept.take(({ options: { batch, tokens } }) => checkTensor('gradOutput',
      gradOutput, batch * tokens * parts.outputDim, `batch ${batch} × tokens ${tokens} × output width ${parts.outputDim}`));
    const params = parts.layerParams();
    if (params.stored) throw new TypeError(`backward() cannot run: ${inferenceOnly(params.stored.dtype)}`);
    const grads = parts.layerGrads();
    const { gradX, grads: sums } = this.#engine.layerBackward({
      params, grads, x, dIn: this.dIn, options, saved, gradY: gradOutput,
    });
    parts.keepLayerGrads(grads, sums);
    this.#spare = { x, saved };
    return gradX;
  }

  /**
   * Tokens in the module's KV cache (0 without one).
   * @returns {number}
   */
  get cacheLength() {
    return this.#cache?.length ?? 0;
  }

  /**
   * Empties the KV cache of forward(..., { useCache: true }) and frees its
   * wasm memory, like the book's reset_cache(). Returns the module.
   * @returns {this}
   */
  resetCache() {
    this.#cache?.dispose();
    this.#cache = null;
    return this;
  }

  /** Frees what the module holds in wasm memory (its KV cache, stored weights). The module stays usable. */
  dispose() {
    this.resetCache();
    super.dispose();
  }

  // The cache for `tokens` more tokens: created on first use, grown by
  // doubling (never past contextLength). With a sliding window of W it is a
  // window cache: once it holds at least twice the W − 1 rows it keeps (and
  // room for this call's), making room moves those to the front instead of
  // growing, so the next move is W − 1 tokens away (O(1) copies per token)
  // and the capacity stays below 2 · max(2 (W − 1), W − 1 + tokens) + tokens.
  /**
   * @param {number} batch
   * @param {number} tokens
   * @param {LayerParams} params
   * @param {number} window W, or 0 for none
   * @param {KVCache['dtype']} dtype
   * @returns {KVCache}
   */
  #cacheFor(batch, tokens, params, window, dtype) {
    const limit = this.contextLength ?? Infinity;
    const cache = this.#cache;
    const held = cache?.length ?? 0;
    if (cache && cache.batch !== batch) {
      throw new RangeError(
        `useCache: the cache holds sequences of batch ${cache.batch}, got batch ${batch}; call resetCache() first`);
    }
    if (cache && cache.dtype !== dtype) {
      throw new RangeError(
        `options.cacheDtype: the cache stores '${cache.dtype}', got '${dtype}'; call resetCache() first`);
    }
    if (held + tokens > limit) {
      throw new RangeError(
        `useCache: the cache would hold ${held + tokens} tokens, past contextLength ${limit} ` +
        `(it holds ${held}); call resetCache() first`);
    }
    if (!cache) {
      this.#cache = this.#engine.createCache({
        batch, kvHeads: params.numKVHeads ?? params.numHeads, headDim: params.headDim,
        valueDim: params.headDim, capacity: Math.min(limit, Math.max(tokens, FIRST_CACHE_CAPACITY)), dtype,
        ...(window && { window }),
      });
      return /** @type {KVCache} */ (this.#cache);
    }
    const rows = cache[CACHE_ROWS], capacity = cache.capacity;
    if (rows + tokens <= capacity) return cache;
    const keep = window ? Math.min(rows, window - 1) : rows;
    if (window && keep + tokens <= capacity && 2 * keep <= capacity) {
      cache[CACHE_COMPACT]();
    } else {
      cache[CACHE_RESERVE](Math.min(limit, Math.max(rows + tokens, 2 * capacity)));
    }
    return cache;
  }

  /**
   * The module called as a function, like PyTorch's module(x).
   * @param {Float32Array} x
   * @param {number[]} shape
   * @param {ForwardOptions} [options]
   * @returns {Float32Array | ForwardResult}
   */
  call(x, shape, options) {
    return this.forward(x, shape, options);
  }
}

// The book's positional arguments; contextLength and dropout only for the
// causal modules (SelfAttention_v2 has neither).
/**
 * @param {number} dIn
 * @param {number} dOut
 * @param {boolean} qkvBias
 * @param {[contextLength: number, dropout: number]} [causalArgs]
 */
export function checkModuleArgs(dIn, dOut, qkvBias, causalArgs) {
  checkInteger('dIn', dIn);
  checkInteger('dOut', dOut);
  if (causalArgs) {
    checkInteger('contextLength', causalArgs[0]);
    checkProbability('dropout', causalArgs[1]);
  }
  checkBoolean('qkvBias', qkvBias);
}

/**
 * Modules with one Q/K/V projection each, split into numHeads heads (K and
 * V into numKVGroups heads for grouped-query attention).
 */
export class ProjectedAttention extends AttentionLayer {
  /**
   * @param {number} dIn
   * @param {number} dOut
   * @param {number | undefined} contextLength
   * @param {number} dropout
   * @param {boolean} causal
   * @param {boolean} qkvBias
   * @param {number} numHeads
   * @param {number} [numKVGroups]  grouped-query attention (GroupedQueryAttention's layout)
   */
  constructor(dIn, dOut, contextLength, dropout, causal, qkvBias, numHeads, numKVGroups) {
    super(dIn, contextLength, dropout, causal);
    const { Linear } = bindingOf(new.target).classes;
    this.dOut = dOut;
    this.numHeads = numHeads;
    this.headDim = dOut / numHeads;
    this.outputDim = dOut;
    // Registration order is the state dict's (and construction order the
    // generator's draws).
    if (numKVGroups === undefined) {
      // The book's __init__ order: W_query, W_key, W_value (then out_proj).
      this.W_query = this.registerModule('W_query', new Linear(dIn, dOut, qkvBias));
      this.W_key = this.registerModule('W_key', new Linear(dIn, dOut, qkvBias));
      this.W_value = this.registerModule('W_value', new Linear(dIn, dOut, qkvBias));
      fixFields(this, 'dOut', 'numHeads', 'headDim', 'outputDim', 'W_query', 'W_key', 'W_value');
      return;
    }
    // The Llama chapter's GroupedQueryAttention.__init__ order, without
    // biases: W_key, W_value (numKVGroups heads), W_query, out_proj.
    this.numKVGroups = numKVGroups;
    this.groupSize = numHeads / numKVGroups;
    this.W_key = this.registerModule('W_key', new Linear(dIn, numKVGroups * this.headDim, false));
    this.W_value = this.registerModule('W_value', new Linear(dIn, numKVGroups * this.headDim, false));
    this.W_query = this.registerModule('W_query', new Linear(dIn, dOut, false));
    this.outProj = this.registerModule('out_proj', new Linear(dOut, dOut, false));
    fixFields(this, 'dOut', 'numHeads', 'headDim', 'outputDim', 'numKVGroups', 'groupSize',
      'W_key', 'W_value', 'W_query', 'outProj');
  }

  /**
   * Head `head`'s QK circuit [dIn, dIn] (circuits.mjs): the score of query
   * x_i and key x_j is x_i · W_QK · x_jᵀ (before 1/√d; biases and RoPE left out).
   * @param {number} head
   * @returns {Float32Array}
   */
  qkCircuit(head) {
    return qkCircuit(this.#circuitEngine(), this.#circuitHead(head), head);
  }

  /**
   * Head `head`'s OV circuit [dIn, dOut]: what it writes for a key x_j it
   * attends to fully, x_j · W_OV (out_proj's bias left out).
   * @param {number} head
   * @returns {Float32Array}
   */
  ovCircuit(head) {
    return ovCircuit(this.#circuitEngine(), this.#circuitHead(head), head);
  }

  /** @param {number} head */
  #circuitHead(head) {
    const m = checkCircuitModule('this module', this);
    checkInteger('head', head, 0);
    if (head >= this.numHeads) throw new RangeError(`head must be below numHeads ${this.numHeads}, got ${head}`);
    return m;
  }

  #circuitEngine() {
    const engine = bindingOf(/** @type {any} */ (this.constructor)).engine;
    engine.checkAlive();
    return engine;
  }

  /** @returns {LayerParams} */
  layerParams() {
    // RoPE: GroupedQueryAttention's.
    const rope = /** @type {this & Partial<Pick<GroupedQueryAttention, 'ropeBase' | 'freqConfig'>>} */ (this);
    // First: storedWeights() re-stores a replaced weight. Stored weights
    // are read where they are: their float32 arrays are not made.
    const stored = storedProjections(this.#projections());
    /** @param {Linear | undefined} linear */
    const weight = (linear) => (stored ? null : linear?.weight ?? null);
    return {
      stored,
      numHeads: this.numHeads, headDim: this.headDim,
      numKVHeads: this.numKVGroups, ropeBase: rope.ropeBase,
      ropeScaling: rope.freqConfig ?? undefined,
      wQuery: weight(this.W_query), bQuery: this.W_query.bias,
      wKey: weight(this.W_key), bKey: this.W_key.bias,
      wValue: weight(this.W_value), bValue: this.W_value.bias,
      wOut: weight(this.outProj), bOut: this.outProj?.bias ?? null,
    };
  }

  // The gradient arrays in layerParams' layout (the current ones, or
  // zeros) for a backward to accumulate into; then the engine's sums kept
  // in them.
  /** @returns {LayerGrads} */
  layerGrads() {
    /** @type {LayerGrads} */
    const grads = {};
    for (const [w, b, linear] of this.#projections()) {
      grads[w] = gradOrZeros(linear.weightGrad, linear.weight.length);
      grads[b] = linear.bias && gradOrZeros(linear.biasGrad, linear.bias.length);
    }
    return grads;
  }

  // `grads` holds an array for each projection's weight (and bias, where
  // it has one), and the engine's `sums` one for each of those.
  /**
   * @param {LayerGrads} grads
   * @param {LayerGrads} sums
   */
  keepLayerGrads(grads, sums) {
    for (const [w, b, linear] of this.#projections()) {
      keepGrad(linear, 'weight', /** @type {Float32Array} */ (grads[w]), /** @type {Float32Array} */ (sums[w]));
      if (linear.bias) keepGrad(linear, 'bias', /** @type {Float32Array} */ (grads[b]), /** @type {Float32Array} */ (sums[b]));
    }
  }

  /**
   * The projections with their layer names: weight, bias.
   * @returns {[LayerArrayName, LayerArrayName, Linear][]}
   */
  #projections() {
    /** @type {[LayerArrayName, LayerArrayName, Linear][]} */
    const p = [['wQuery', 'bQuery', this.W_query], ['wKey', 'bKey', this.W_key], ['wValue', 'bValue', this.W_value]];
    return this.outProj ? [...p, ['wOut', 'bOut', this.outProj]] : p;
  }
}

/**
 * The projections' stored weights for one layer call (null when they are
 * float32); they must share one weightsDtype (quantize() the module).
 * @param {[LayerArrayName, LayerArrayName, Linear][]} projections
 * @returns {LayerParams['stored']}
 */
function storedProjections(projections) {
  const dtypes = [...new Set(projections.map(([, , linear]) => linear.weightsDtype))];
  if (dtypes.length > 1) {
    throw new RangeError(`the projections' weightsDtype must be one dtype (quantize() the whole module), ` +
      `got ${dtypes.map((d) => `'${d}'`).join(' and ')}`);
  }
  if (dtypes[0] === 'float32') return null;
  /** @type {NonNullable<LayerParams['stored']>} */
  const stored = { dtype: /** @type {'bfloat16' | 'int8'} */ (dtypes[0]) };
  for (const [key, , linear] of projections) stored[/** @type {'wQuery'} */ (key)] = linear.storedWeights();
  return stored;
}
