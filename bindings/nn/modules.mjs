// The attention modules of chapter 3, mirroring the book's PyTorch classes:
// same constructor arguments, parameter names and layouts (W_query.weight is
// [dOut, dIn] row-major), seeded initialisation identical to PyTorch's
// (nn.Linear's reset_parameters drawn from the runtime's mt19937 in the
// book's __init__ order), train()/eval(), stateDict()/loadStateDict(); and
// the pieces a model needs around them (Linear, Embedding).
//
// Training follows PyTorch's contract: a forward in training mode keeps what
// its backward needs; backward(gradOutput) returns the gradient of the input
// and accumulates (+=) each parameter's gradient (weightGrad, biasGrad:
// null until a backward, like .grad); gradients() names them as the state
// dict does; zeroGrad() resets them; parameters() hands them to an optimizer
// (optim.mjs).
//
// Parameters and gradients are JS-owned Float32Arrays. Each forward copies x
// and the parameters into the runtime's scratch heap and runs one C++ layer
// forward (src/layer.cc: projections, RoPE, split heads, attention, merge,
// out_proj); each backward copies them and the kept activations in again and
// runs the layer's backward. The only wasm memory a module holds is its KV
// cache between a forward(..., { useCache: true }) and resetCache() (or
// dispose()).

import { CACHE_ADVANCE, CACHE_RESERVE, CACHE_VIEW } from '../engine/kv-cache.mjs';
import {
  checkBoolean, checkFinite, checkIndices, checkInteger, checkOptionNames, checkProbability,
  checkShape, checkTensor, describe, product, resolveAttentionOptions,
} from '../engine/validate.mjs';

const FORWARD_OPTIONS = [
  'returnWeights', 'returnScores', 'returnQKV', 'maskStrategy', 'seed', 'out', 'useCache',
];

/** The core's KVCacheView for a forward without a cache. */
const NO_CACHE = Object.freeze({ keys: 0, values: 0, capacity: 0, length: 0 });

/** A module's first cache holds this many tokens (or contextLength); it doubles as needed. */
const FIRST_CACHE_CAPACITY = 256;

/** The nn.Linear weight bound, computed in double exactly as PyTorch does. */
function kaimingBound(fanIn) {
  const a = Math.sqrt(5);
  const gain = Math.sqrt(2.0 / (1 + a * a));
  return Math.sqrt(3.0) * (gain / Math.sqrt(fanIn));
}

/**
 * One parameter of a module, as an optimizer sees it: its name (as in the
 * state dict), `data` (the live Float32Array) and `grad` (the live gradient
 * array, or null before the first backward and after zeroGrad()).
 */
export class Parameter {
  #owner;
  #key;

  constructor(name, owner, key) {
    this.name = name;
    this.#owner = owner;
    this.#key = key;
    Object.freeze(this);
  }

  get data() {
    return this.#owner[this.#key];
  }

  get grad() {
    return this.#owner[`${this.#key}Grad`];
  }

  set grad(value) {
    this.#owner[`${this.#key}Grad`] = value;
  }
}

/** What nn.Module gives every module here: modes, parameters, gradients. */
class Module {
  constructor() {
    /** As nn.Module: modules start in training mode. */
    this.training = true;
  }

  /** Sets training mode (dropout acts, and forward keeps what backward needs). Returns this. */
  train(mode = true) {
    checkBoolean('mode', mode);
    this.training = mode;
    for (const child of this.children()) child.train(mode);
    return this;
  }

  /** Evaluation mode: train(false). Returns this. */
  eval() {
    return this.train(false);
  }

  /** Sub-modules whose mode follows this one's. */
  children() {
    return [];
  }

  /** Every parameter, in the state dict's order (see Parameter). */
  parameters() {
    return this.parameterSlots().map(([name, owner, key]) => new Parameter(name, owner, key));
  }

  /**
   * The parameters' gradients by state-dict name: the live arrays (so that,
   * as with PyTorch's .grad, clipping them in place changes what an
   * optimizer sees), or null for a parameter no backward has reached.
   */
  gradients() {
    return Object.fromEntries(this.parameters().map((p) => [p.name, p.grad]));
  }

  /**
   * Resets every gradient: to null (setToNone, the default, as PyTorch's
   * zero_grad()) or to zeros.
   */
  zeroGrad(setToNone = true) {
    checkBoolean('setToNone', setToNone);
    for (const p of this.parameters()) {
      if (setToNone) p.grad = null;
      else p.grad?.fill(0);
    }
  }
}

/**
 * The activations a training forward kept, handed to one backward. Throws
 * (TypeError) when there are none, saying why.
 */
class Kept {
  #value = null;
  #evalForward = false;
  #unsupported;

  /**
   * After a forward: in training mode, keeps what `make()` returns (called
   * only then: eval mode copies nothing); in eval mode, drops what it had.
   * `unsupported` (a reason) drops it too, and backward() then says why.
   */
  set(training, make, unsupported) {
    this.#value = training && !unsupported ? make() : null;
    this.#evalForward = !training;
    this.#unsupported = training ? unsupported : undefined;
  }

  /** Takes them (one backward per forward, as PyTorch frees its graph). */
  take() {
    const value = this.#value;
    if (!value && this.#unsupported) {
      throw new TypeError(`backward() cannot follow the last forward(): ${this.#unsupported}`);
    }
    if (!value) {
      throw new TypeError(this.#evalForward
        ? 'backward() needs a forward() in training mode; the last forward() ran in eval mode (call train() and forward() again)'
        : 'backward() needs a forward() in training mode first (each forward() allows one backward())');
    }
    this.#value = null;
    return value;
  }
}

/** Checks a gradOutput against the shape its forward produced. */
function checkGradOutput(gradOutput, length, how) {
  return checkTensor('gradOutput', gradOutput, length, how);
}

/** A gradient array to accumulate into: the current one, or zeros. */
const gradOrZeros = (grad, length) => grad ?? new Float32Array(length);

/** A value from a state dict as a Float32Array, or an error string. */
function toFloat32(value) {
  if (value instanceof Float32Array) return value;
  if (Array.isArray(value)) {
    const flat = value.flat(Infinity);
    if (flat.every((x) => typeof x === 'number')) return Float32Array.from(flat);
  }
  return null;
}

/**
 * Defines the classes for one runtime. `engine` provides:
 *   generator            the runtime's MT19937 (manualSeed)
 *   checkAlive()         throws after dispose
 *   layerForward(call)   runs src/layer.h's layer on copies of the arrays
 *                        (with call.keep, also returns `saved`: the
 *                        activations AttentionLayerBackward needs)
 *   layerBackward(call)  runs its backward → { gradX, grads }
 *   linearForward(...)   runs Linear
 *   linearBackward(...)  runs LinearBackward → { gradX, weightGrad, biasGrad }
 *   createCache(layout)  a KVCache (bindings/engine/kv-cache.mjs) for useCache
 */
export function defineModules(engine) {
  class Linear extends Module {
    #kept = new Kept();

    /** nn.Linear(inFeatures, outFeatures, bias = true), PyTorch's init. */
    constructor(inFeatures, outFeatures, bias = true) {
      engine.checkAlive();
      super();
      checkInteger('inFeatures', inFeatures);
      checkInteger('outFeatures', outFeatures);
      checkBoolean('bias', bias);
      this.inFeatures = inFeatures;
      this.outFeatures = outFeatures;
      const g = engine.generator;
      const wb = kaimingBound(inFeatures);
      this.weight = new Float32Array(outFeatures * inFeatures);
      for (let i = 0; i < this.weight.length; i++) this.weight[i] = g.nextFloat(-wb, wb);
      this.bias = null;
      if (bias) {
        const bb = 1 / Math.sqrt(inFeatures);
        this.bias = new Float32Array(outFeatures);
        for (let i = 0; i < outFeatures; i++) this.bias[i] = g.nextFloat(-bb, bb);
      }
      /** Gradients [outFeatures, inFeatures] and [outFeatures]: null until a backward. */
      this.weightGrad = null;
      this.biasGrad = null;
    }

    /**
     * y = x · weightᵀ + bias for x of shape [..., inFeatures]. In training
     * mode it keeps (a copy of) x for backward().
     */
    forward(x, shape) {
      engine.checkAlive();
      const dims = checkShape('shape', shape, 1, 8);
      if (dims[dims.length - 1] !== this.inFeatures) {
        throw new RangeError(`shape[${dims.length - 1}] must be inFeatures ${this.inFeatures}, got ${dims[dims.length - 1]}`);
      }
      checkTensor('x', x, product(...dims), `shape [${dims.join(', ')}]`);
      const rows = product(...dims.slice(0, -1));
      const y = engine.linearForward(x, rows, this.inFeatures, this.outFeatures, this.weight, this.bias);
      this.#kept.set(this.training, () => ({ x: x.slice(), rows, dims }));
      return y;
    }

    /**
     * The backward of the last training forward: gradOutput [..., outFeatures]
     * → the gradient of x [..., inFeatures]; weightGrad += gradOutputᵀ · x,
     * biasGrad += the column sums of gradOutput.
     */
    backward(gradOutput) {
      engine.checkAlive();
      const { x, rows, dims } = this.#kept.take();
      checkGradOutput(gradOutput, rows * this.outFeatures,
        `shape [${[...dims.slice(0, -1), this.outFeatures].join(', ')}]`);
      const r = engine.linearBackward(x, rows, this.inFeatures, this.outFeatures, this.weight,
        gradOutput, gradOrZeros(this.weightGrad, this.weight.length),
        this.bias && gradOrZeros(this.biasGrad, this.bias.length));
      this.weightGrad = r.weightGrad;
      if (this.bias) this.biasGrad = r.biasGrad;
      return r.gradX;
    }

    /** Parameters by name (copies), `prefix` prepended. */
    stateDict(prefix = '') {
      const dict = { [`${prefix}weight`]: this.weight.slice() };
      if (this.bias) dict[`${prefix}bias`] = this.bias.slice();
      return dict;
    }

    /** [name, owner, key] of each parameter, `prefix` prepended. */
    parameterSlots(prefix = '') {
      const slots = [[`${prefix}weight`, this, 'weight']];
      if (this.bias) slots.push([`${prefix}bias`, this, 'bias']);
      return slots;
    }
  }

  /**
   * nn.Embedding(numEmbeddings, embeddingDim): a lookup table [numEmbeddings,
   * embeddingDim], initialised N(0, 1) with PyTorch's normal_ sequence for
   * the runtime's generator (so manualSeed(123) gives the book's chapter-2
   * table).
   */
  class Embedding extends Module {
    #kept = new Kept();

    constructor(numEmbeddings, embeddingDim) {
      engine.checkAlive();
      super();
      checkInteger('numEmbeddings', numEmbeddings);
      checkInteger('embeddingDim', embeddingDim);
      if (!(numEmbeddings * embeddingDim <= 2 ** 28)) {
        throw new RangeError(`numEmbeddings × embeddingDim must be at most 2^28, got ${numEmbeddings} × ${embeddingDim}`);
      }
      this.numEmbeddings = numEmbeddings;
      this.embeddingDim = embeddingDim;
      this.weight = engine.generator.normalFloats(numEmbeddings * embeddingDim);
      /** Gradient [numEmbeddings, embeddingDim]: null until a backward. */
      this.weightGrad = null;
    }

    /**
     * indices: integers in [0, numEmbeddings) (an Int32Array, Uint32Array or
     * Array), of shape `shape` (default [indices.length]). Returns their rows,
     * a Float32Array [...shape, embeddingDim]. In training mode it keeps the
     * indices for backward().
     */
    forward(indices, shape) {
      engine.checkAlive();
      const ids = checkIndices('indices', indices, this.numEmbeddings);
      const dims = shape === undefined ? [ids.length] : checkShape('shape', shape, 1, 8);
      if (product(...dims) !== ids.length) {
        throw new RangeError(`indices must have length ${product(...dims)} (shape [${dims.join(', ')}]), got length ${ids.length}`);
      }
      const dim = this.embeddingDim;
      const out = new Float32Array(ids.length * dim);
      for (let n = 0; n < ids.length; n++) {
        out.set(this.weight.subarray(ids[n] * dim, (ids[n] + 1) * dim), n * dim);
      }
      this.#kept.set(this.training, () => ({ ids, dims }));
      return out;
    }

    /**
     * The backward of the last training forward: row n of gradOutput
     * [...shape, embeddingDim] is added to weightGrad's row indices[n], in
     * order. Returns null (indices have no gradient).
     */
    backward(gradOutput) {
      engine.checkAlive();
      const { ids, dims } = this.#kept.take();
      const dim = this.embeddingDim;
      checkGradOutput(gradOutput, ids.length * dim, `shape [${[...dims, dim].join(', ')}]`);
      const grad = gradOrZeros(this.weightGrad, this.weight.length);
      for (let n = 0; n < ids.length; n++) {
        const row = ids[n] * dim;
        for (let c = 0; c < dim; c++) grad[row + c] += gradOutput[n * dim + c];
      }
      this.weightGrad = grad;
      return null;
    }

    stateDict(prefix = '') {
      return { [`${prefix}weight`]: this.weight.slice() };
    }

    parameterSlots(prefix = '') {
      return [[`${prefix}weight`, this, 'weight']];
    }
  }

  /** Shared by the attention modules. */
  class AttentionLayer extends Module {
    #causal;
    #dropout;
    #cache = null;
    #kept = new Kept();

    constructor(dIn, contextLength, dropout, causal) {
      engine.checkAlive();
      super();
      this.#causal = causal;
      this.dIn = dIn;
      this.contextLength = contextLength;
      this.#dropout = dropout;
    }

    /**
     * The dropout probability on the attention weights, in [0, 1); settable
     * like nn.Dropout's p (the wrapper passes it on to its heads).
     */
    get dropout() {
      return this.#dropout;
    }

    set dropout(p) {
      this.#dropout = checkProbability('dropout', p);
      for (const head of this.heads ?? []) head.dropout = p;
    }

    children() {
      return this.heads ?? [];
    }

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
     * outputs; keys = cached + tokens).
     * In training mode (without useCache) it keeps what backward() needs:
     * x, the projected heads, the attention output and its log-sum-exp, the
     * dropout seed.
     */
    forward(x, shape, options) {
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
      // With a cache the new tokens come after the cached ones: the mask's
      // bottom-right alignment (the same triangle without one).
      const causal = useCache && this.#causal ? 'bottom-right' : this.#causal;
      const attention = resolveAttentionOptions('options', {
        causal, maskStrategy: o.maskStrategy, dropout: this.dropout,
        training: this.training, seed: o.seed,
      }, engine.generator);
      const outputLength = batch * tokens * this.outputDim;
      if (o.out !== undefined) {
        checkTensor('options.out', o.out, outputLength,
          `batch ${batch} × tokens ${tokens} × output width ${this.outputDim}`);
      }
      const params = this.layerParams();
      const cache = useCache ? this.#cacheFor(batch, tokens, params) : null;
      const layerOptions = { batch, tokens, attention, cache: cache ? cache[CACHE_VIEW]() : NO_CACHE };
      const keep = this.training && !useCache;
      const result = engine.layerForward({
        params, x, dIn, options: layerOptions,
        returnWeights, returnScores, returnQKV, out: o.out, keep,
      });
      cache?.[CACHE_ADVANCE](tokens);
      this.#kept.set(this.training, () => ({ x: x.slice(), options: layerOptions, saved: result.saved }),
        useCache ? 'it used the KV cache (useCache), which has no backward' : undefined);
      delete result.saved;
      return returnWeights || returnScores || returnQKV ? result : result.output;
    }

    /**
     * The backward of the last training forward: gradOutput [batch, tokens,
     * outputDim] → the gradient of x [batch, tokens, dIn] (a Float32Array);
     * every parameter's gradient accumulates (+=). Uses the parameters as
     * they are now: change them after backward(), not between (PyTorch
     * would refuse).
     */
    backward(gradOutput) {
      engine.checkAlive();
      const { x, options, saved } = this.#kept.take();
      const { batch, tokens } = options;
      checkGradOutput(gradOutput, batch * tokens * this.outputDim,
        `batch ${batch} × tokens ${tokens} × output width ${this.outputDim}`);
      const { gradX, grads } = engine.layerBackward({
        params: this.layerParams(), grads: this.layerGrads(), x, dIn: this.dIn, options, saved,
        gradY: gradOutput,
      });
      this.setLayerGrads(grads);
      return gradX;
    }

    /** Tokens in the module's KV cache (0 without one). */
    get cacheLength() {
      return this.#cache?.length ?? 0;
    }

    /**
     * Empties the KV cache of forward(..., { useCache: true }) and frees its
     * wasm memory, like the book's reset_cache(). Returns the module.
     */
    resetCache() {
      this.#cache?.dispose();
      this.#cache = null;
      return this;
    }

    /** Frees what the module holds in wasm memory (its KV cache). The module stays usable. */
    dispose() {
      this.resetCache();
    }

    [Symbol.dispose]() {
      this.dispose();
    }

    // The cache for `tokens` more tokens: created on first use, grown by
    // doubling (never past contextLength).
    #cacheFor(batch, tokens, params) {
      const limit = this.contextLength ?? Infinity;
      const cache = this.#cache;
      const held = cache?.length ?? 0;
      if (cache && cache.batch !== batch) {
        throw new RangeError(
          `useCache: the cache holds sequences of batch ${cache.batch}, got batch ${batch}; call resetCache() first`);
      }
      if (held + tokens > limit) {
        throw new RangeError(
          `useCache: the cache would hold ${held + tokens} tokens, past contextLength ${limit} ` +
          `(it holds ${held}); call resetCache() first`);
      }
      const need = held + tokens;
      if (!cache) {
        this.#cache = engine.createCache({
          batch, kvHeads: params.numKVHeads || params.numHeads, headDim: params.headDim,
          valueDim: params.headDim, capacity: Math.min(limit, Math.max(need, FIRST_CACHE_CAPACITY)),
        });
      } else if (need > cache.capacity) {
        cache[CACHE_RESERVE](Math.min(limit, Math.max(need, 2 * cache.capacity)));
      }
      return this.#cache;
    }

    /** The module called as a function, like PyTorch's module(x). */
    call(x, shape, options) {
      return this.forward(x, shape, options);
    }

    /** Parameters by PyTorch name (copies of the arrays). */
    stateDict() {
      const dict = {};
      for (const [name, linear] of this.namedLinears()) Object.assign(dict, linear.stateDict(`${name}.`));
      return dict;
    }

    parameterSlots() {
      return this.namedLinears().flatMap(([name, linear]) => linear.parameterSlots(`${name}.`));
    }

    /**
     * Loads parameters by PyTorch name. Values may be Float32Arrays, flat
     * number arrays or nested arrays (tensor.tolist()). Every name and size
     * is checked first; all problems are reported in one error (RangeError,
     * or TypeError when a value is not numeric) and nothing is loaded.
     */
    loadStateDict(dict) {
      engine.checkAlive();
      if (dict === null || typeof dict !== 'object' || Array.isArray(dict)) {
        throw new TypeError(`stateDict must be an object of named parameters, got ${describe(dict)}`);
      }
      const expected = this.stateDict();
      const problems = [];
      let typeProblem = false;
      const loaded = {};
      for (const [name, current] of Object.entries(expected)) {
        if (!(name in dict)) {
          problems.push(`missing '${name}' (${current.length} values)`);
          continue;
        }
        const values = toFloat32(dict[name]);
        if (!values) {
          typeProblem = true;
          problems.push(`'${name}' must be a Float32Array or an array of numbers, got ${describe(dict[name])}`);
        } else if (values.length !== current.length) {
          problems.push(`'${name}' has ${values.length} values, expected ${current.length}`);
        } else {
          loaded[name] = values;
        }
      }
      for (const name of Object.keys(dict)) {
        if (!(name in expected)) problems.push(`unexpected '${name}'`);
      }
      if (problems.length) {
        const Err = typeProblem ? TypeError : RangeError;
        throw new Err(`loadStateDict: ${problems.length} problem${problems.length > 1 ? 's' : ''}: ${problems.join('; ')}`);
      }
      for (const [name, linear] of this.namedLinears()) {
        linear.weight.set(loaded[`${name}.weight`]);
        if (linear.bias) linear.bias.set(loaded[`${name}.bias`]);
      }
      return this;
    }
  }

  // The book's positional arguments; contextLength and dropout only for the
  // causal modules (SelfAttention_v2 has neither).
  function checkModuleArgs(dIn, dOut, qkvBias, causalArgs) {
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
  class ProjectedAttention extends AttentionLayer {
    constructor(dIn, dOut, contextLength, dropout, causal, qkvBias, numHeads, numKVGroups) {
      super(dIn, contextLength, dropout, causal);
      this.dOut = dOut;
      this.numHeads = numHeads;
      this.headDim = dOut / numHeads;
      this.outputDim = dOut;
      if (numKVGroups === undefined) {
        // The book's __init__ order: W_query, W_key, W_value (then out_proj).
        this.W_query = new Linear(dIn, dOut, qkvBias);
        this.W_key = new Linear(dIn, dOut, qkvBias);
        this.W_value = new Linear(dIn, dOut, qkvBias);
        return;
      }
      // The Llama chapter's GroupedQueryAttention.__init__ order, without
      // biases: W_key, W_value (numKVGroups heads), W_query, out_proj.
      this.numKVGroups = numKVGroups;
      this.groupSize = numHeads / numKVGroups;
      this.W_key = new Linear(dIn, numKVGroups * this.headDim, false);
      this.W_value = new Linear(dIn, numKVGroups * this.headDim, false);
      this.W_query = new Linear(dIn, dOut, false);
      this.outProj = new Linear(dOut, dOut, false);
    }

    layerParams() {
      return {
        numHeads: this.numHeads, headDim: this.headDim,
        numKVHeads: this.numKVGroups ?? 0, ropeBase: this.ropeBase ?? 0,
        ropeScaling: this.freqConfig ?? undefined,
        wQuery: this.W_query.weight, bQuery: this.W_query.bias,
        wKey: this.W_key.weight, bKey: this.W_key.bias,
        wValue: this.W_value.weight, bValue: this.W_value.bias,
        wOut: this.outProj?.weight ?? null, bOut: this.outProj?.bias ?? null,
      };
    }

    // The gradients in layerParams' layout (current values, or zeros), and
    // back after a backward.
    layerGrads() {
      const grads = {};
      for (const [key, linear] of this.#projections()) {
        grads[`w${key}`] = gradOrZeros(linear.weightGrad, linear.weight.length);
        grads[`b${key}`] = linear.bias && gradOrZeros(linear.biasGrad, linear.bias.length);
      }
      return grads;
    }

    setLayerGrads(grads) {
      for (const [key, linear] of this.#projections()) {
        linear.weightGrad = grads[`w${key}`];
        if (linear.bias) linear.biasGrad = grads[`b${key}`];
      }
    }

    #projections() {
      const p = [['Query', this.W_query], ['Key', this.W_key], ['Value', this.W_value]];
      return this.outProj ? [...p, ['Out', this.outProj]] : p;
    }

    namedLinears() {
      if (this.numKVGroups !== undefined) {
        return [['W_key', this.W_key], ['W_value', this.W_value], ['W_query', this.W_query],
          ['out_proj', this.outProj]];
      }
      const named = [['W_query', this.W_query], ['W_key', this.W_key], ['W_value', this.W_value]];
      return this.outProj ? [...named, ['out_proj', this.outProj]] : named;
    }
  }

  /** SelfAttention_v2: Q/K/V projections, softmax(QKᵀ/√dOut)·V, no mask. */
  class SelfAttention extends ProjectedAttention {
    constructor(dIn, dOut, qkvBias = false) {
      checkModuleArgs(dIn, dOut, qkvBias);
      super(dIn, dOut, undefined, 0, false, qkvBias, 1);
    }
  }

  /** The book's CausalAttention (listing 3.3). */
  class CausalAttention extends ProjectedAttention {
    constructor(dIn, dOut, contextLength, dropout, qkvBias = false) {
      checkModuleArgs(dIn, dOut, qkvBias, [contextLength, dropout]);
      super(dIn, dOut, contextLength, dropout, true, qkvBias, 1);
    }
  }

  /** numHeads independent CausalAttention heads, concatenated (listing 3.4). */
  class MultiHeadAttentionWrapper extends AttentionLayer {
    constructor(dIn, dOut, contextLength, dropout, numHeads, qkvBias = false) {
      checkModuleArgs(dIn, dOut, qkvBias, [contextLength, dropout]);
      checkInteger('numHeads', numHeads);
      super(dIn, contextLength, dropout, true);
      this.dOut = dOut;
      this.numHeads = numHeads;
      this.outputDim = numHeads * dOut;
      this.heads = Array.from({ length: numHeads },
        () => new CausalAttention(dIn, dOut, contextLength, dropout, qkvBias));
    }

    layerParams() {
      // The heads' projections stacked: one layer forward runs them all.
      const p = { numHeads: this.numHeads, headDim: this.dOut, wOut: null, bOut: null };
      for (const [key, name] of WRAPPER_PROJECTIONS) {
        p[`w${key}`] = stack(this.heads.map((h) => h[name].weight));
        p[`b${key}`] = stack(this.heads.map((h) => h[name].bias));
      }
      return p;
    }

    // The heads' gradients stacked like layerParams (zeros where null), and
    // split back onto the heads after a backward.
    layerGrads() {
      const grads = {};
      for (const [key, name] of WRAPPER_PROJECTIONS) {
        const linears = this.heads.map((h) => h[name]);
        grads[`w${key}`] = stack(linears.map((l) => gradOrZeros(l.weightGrad, l.weight.length)));
        grads[`b${key}`] = stack(linears.map((l) => l.bias && gradOrZeros(l.biasGrad, l.bias.length)));
      }
      return grads;
    }

    setLayerGrads(grads) {
      for (const [key, name] of WRAPPER_PROJECTIONS) {
        this.heads.forEach((h, i) => {
          const linear = h[name];
          const w = linear.weight.length;
          linear.weightGrad = grads[`w${key}`].slice(i * w, (i + 1) * w);
          if (linear.bias) {
            const b = linear.bias.length;
            linear.biasGrad = grads[`b${key}`].slice(i * b, (i + 1) * b);
          }
        });
      }
    }



    namedLinears() {
      return this.heads.flatMap((h, i) => h.namedLinears().map(([n, l]) => [`heads.${i}.${n}`, l]));
    }
  }

  /** The book's MultiHeadAttention (listing 3.5): split heads, out_proj. */
  class MultiHeadAttention extends ProjectedAttention {
    constructor(dIn, dOut, contextLength, dropout, numHeads, qkvBias = false) {
      checkModuleArgs(dIn, dOut, qkvBias, [contextLength, dropout]);
      checkInteger('numHeads', numHeads);
      if (dOut % numHeads !== 0) {
        throw new RangeError(`dOut must be divisible by numHeads, got dOut ${dOut} and numHeads ${numHeads}`);
      }
      super(dIn, dOut, contextLength, dropout, true, qkvBias, numHeads);
      this.outProj = new Linear(dOut, dOut, true);
    }
  }

  /**
   * The Llama chapter's GroupedQueryAttention(d_in, d_out, num_heads,
   * num_kv_groups) (ch05/07_gpt_to_llama): numKVGroups key/value heads
   * shared by groups of numHeads / numKVGroups query heads (never repeated
   * in memory), no biases, rotary position embedding on queries and keys as
   * compute_rope_params / apply_rope with theta base ropeBase (default
   * 10 000; Llama 3 uses 500 000) for up to contextLength positions
   * (default 4096, compute_rope_params'), the frequencies adjusted by
   * freqConfig as Llama 3.1 and 3.2 do (compute_rope_params' freq_config:
   * { factor, lowFreqFactor, highFreqFactor, originalContextLength }; none
   * by default), the causal mask, out_proj.
   */
  class GroupedQueryAttention extends ProjectedAttention {
    constructor(dIn, dOut, numHeads, numKVGroups, options) {
      const o = checkOptionNames('options', options, ['contextLength', 'ropeBase', 'freqConfig']);
      checkInteger('dIn', dIn);
      checkInteger('dOut', dOut);
      checkInteger('numHeads', numHeads);
      checkInteger('numKVGroups', numKVGroups);
      if (dOut % numHeads !== 0) {
        throw new RangeError(`dOut must be divisible by numHeads, got dOut ${dOut} and numHeads ${numHeads}`);
      }
      if (numHeads % numKVGroups !== 0) {
        throw new RangeError(
          `numHeads must be divisible by numKVGroups, got numHeads ${numHeads} and numKVGroups ${numKVGroups}`);
      }
      if ((dOut / numHeads) % 2 !== 0) {
        throw new RangeError(
          `the head size dOut / numHeads must be even for RoPE, got ${dOut} / ${numHeads} = ${dOut / numHeads}`);
      }
      const contextLength = checkInteger('options.contextLength', o.contextLength ?? 4096);
      const ropeBase = checkFinite('options.ropeBase', o.ropeBase ?? 10000);
      if (!(ropeBase > 0 && Number.isFinite(Math.fround(ropeBase)))) {
        throw new RangeError(`options.ropeBase must be a positive float32, got ${describe(ropeBase)}`);
      }
      const freqConfig = o.freqConfig === undefined || o.freqConfig === null
        ? null : checkFreqConfig('options.freqConfig', o.freqConfig);
      super(dIn, dOut, contextLength, 0, true, false, numHeads, numKVGroups);
      this.ropeBase = ropeBase;
      /** Llama 3.1's RoPE frequency adjustment (frozen), or null. */
      this.freqConfig = freqConfig;
    }
  }

  return {
    Linear, Embedding, SelfAttention, CausalAttention, MultiHeadAttentionWrapper, MultiHeadAttention,
    GroupedQueryAttention,
  };
}

/**
 * compute_rope_params' freq_config, checked: every field a positive float32,
 * lowFreqFactor < highFreqFactor. Returns a frozen copy.
 */
function checkFreqConfig(name, config) {
  const c = checkOptionNames(name, config, ['factor', 'lowFreqFactor', 'highFreqFactor', 'originalContextLength']);
  const out = {};
  for (const key of ['factor', 'lowFreqFactor', 'highFreqFactor', 'originalContextLength']) {
    const value = checkFinite(`${name}.${key}`, c[key]);
    if (!(value > 0 && Number.isFinite(Math.fround(value)) && Math.fround(value) > 0)) {
      throw new RangeError(`${name}.${key} must be a positive float32, got ${describe(value)}`);
    }
    out[key] = value;
  }
  if (!(Math.fround(out.lowFreqFactor) < Math.fround(out.highFreqFactor))) {
    throw new RangeError(`${name}.lowFreqFactor must be less than ${name}.highFreqFactor, ` +
      `got ${out.lowFreqFactor} and ${out.highFreqFactor}`);
  }
  return Object.freeze(out);
}

/** The wrapper's projections: layer key, each head's attribute. */
const WRAPPER_PROJECTIONS = [['Query', 'W_query'], ['Key', 'W_key'], ['Value', 'W_value']];

/** Arrays concatenated (null when the first is null: no bias). */
function stack(parts) {
  if (parts[0] === null) return null;
  const all = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const p of parts) {
    all.set(p, offset);
    offset += p.length;
  }
  return all;
}

