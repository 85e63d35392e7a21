// The attention modules of chapter 3, mirroring the book's PyTorch classes:
// same constructor arguments, parameter names and layouts (W_query.weight is
// [dOut, dIn] row-major), seeded initialisation identical to PyTorch's (the
// projections made in the book's __init__ order), and the Llama chapter's
// GroupedQueryAttention.
//
// Each forward copies x and the parameters into the runtime's scratch heap
// and runs one C++ layer forward (src/layer.cc: projections, RoPE, split
// heads, attention, merge, out_proj); each backward copies them and the kept
// activations in again and runs the layer's backward, accumulating into the
// projections' gradient arrays. The only wasm memory a module holds is its
// KV cache between a forward(..., { useCache: true }) and resetCache() (or
// dispose()).

import { CACHE_ADVANCE, CACHE_RESERVE, CACHE_VIEW } from '../engine/kv-cache.mjs';
import {
  checkBoolean, checkFinite, checkInteger, checkOptionNames, checkProbability,
  checkShape, checkTensor, describe, product, resolveAttentionOptions,
} from '../engine/validate.mjs';
import { Kept, Module, bindingOf, gradOrZeros, keepGrad } from './module.mjs';

const FORWARD_OPTIONS = [
  'returnWeights', 'returnScores', 'returnQKV', 'maskStrategy', 'seed', 'out', 'useCache',
];

/** A module's first cache holds this many tokens (or contextLength); it doubles as needed. */
const FIRST_CACHE_CAPACITY = 256;

/** Shared by the attention modules. */
class AttentionLayer extends Module {
  #engine;
  #causal;
  #dropout;
  #cache = null;
  #kept = new Kept();

  constructor(dIn, contextLength, dropout, causal) {
    super();
    this.#engine = bindingOf(new.target).engine;
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
    const layerOptions = { batch, tokens, attention, cache: cache?.[CACHE_VIEW]() };
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
    this.#engine.checkAlive();
    const { x, options, saved } = this.#kept.take(({ options: { batch, tokens } }) => checkTensor('gradOutput',
      gradOutput, batch * tokens * this.outputDim, `batch ${batch} × tokens ${tokens} × output width ${this.outputDim}`));
    const grads = this.layerGrads();
    const { gradX, grads: sums } = this.#engine.layerBackward({
      params: this.layerParams(), grads, x, dIn: this.dIn, options, saved, gradY: gradOutput,
    });
    this.keepLayerGrads(grads, sums);
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
      this.#cache = this.#engine.createCache({
        batch, kvHeads: this.numKVGroups ?? this.numHeads, headDim: params.headDim,
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
  }

  layerParams() {
    return {
      numHeads: this.numHeads, headDim: this.headDim,
      numKVHeads: this.numKVGroups, ropeBase: this.ropeBase,
      ropeScaling: this.freqConfig ?? undefined,
      wQuery: this.W_query.weight, bQuery: this.W_query.bias,
      wKey: this.W_key.weight, bKey: this.W_key.bias,
      wValue: this.W_value.weight, bValue: this.W_value.bias,
      wOut: this.outProj?.weight ?? null, bOut: this.outProj?.bias ?? null,
    };
  }

  // The gradient arrays in layerParams' layout (the current ones, or
  // zeros) for a backward to accumulate into; then the engine's sums kept
  // in them.
  layerGrads() {
    const grads = {};
    for (const [key, linear] of this.#projections()) {
      grads[`w${key}`] = gradOrZeros(linear.weightGrad, linear.weight.length);
      grads[`b${key}`] = linear.bias && gradOrZeros(linear.biasGrad, linear.bias.length);
    }
    return grads;
  }

  keepLayerGrads(grads, sums) {
    for (const [key, linear] of this.#projections()) {
      keepGrad(linear, 'weight', grads[`w${key}`], sums[`w${key}`]);
      if (linear.bias) keepGrad(linear, 'bias', grads[`b${key}`], sums[`b${key}`]);
    }
  }

  #projections() {
    const p = [['Query', this.W_query], ['Key', this.W_key], ['Value', this.W_value]];
    return this.outProj ? [...p, ['Out', this.outProj]] : p;
  }
}

/** SelfAttention_v2: Q/K/V projections, softmax(QKᵀ/√dOut)·V, no mask. */
export class SelfAttention extends ProjectedAttention {
  constructor(dIn, dOut, qkvBias = false) {
    checkModuleArgs(dIn, dOut, qkvBias);
    super(dIn, dOut, undefined, 0, false, qkvBias, 1);
  }
}

/** The book's CausalAttention (listing 3.3). */
export class CausalAttention extends ProjectedAttention {
  constructor(dIn, dOut, contextLength, dropout, qkvBias = false) {
    checkModuleArgs(dIn, dOut, qkvBias, [contextLength, dropout]);
    super(dIn, dOut, contextLength, dropout, true, qkvBias, 1);
  }
}

/** numHeads independent CausalAttention heads, concatenated (listing 3.4). */
export class MultiHeadAttentionWrapper extends AttentionLayer {
  constructor(dIn, dOut, contextLength, dropout, numHeads, qkvBias = false) {
    checkModuleArgs(dIn, dOut, qkvBias, [contextLength, dropout]);
    checkInteger('numHeads', numHeads);
    super(dIn, contextLength, dropout, true);
    this.dOut = dOut;
    this.numHeads = numHeads;
    this.outputDim = numHeads * dOut;
    const { CausalAttention, ModuleList } = bindingOf(new.target).classes;
    /** The heads (an Array); registered as the child 'heads' (heads.0.W_query.weight, ...). */
    this.heads = Array.from({ length: numHeads },
      () => new CausalAttention(dIn, dOut, contextLength, dropout, qkvBias));
    this.registerModule('heads', new ModuleList(this.heads));
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

  // The heads' gradients stacked like layerParams (zeros where null) for
  // the engine to accumulate into; its sums split back into the heads'
  // gradient arrays.
  layerGrads() {
    const grads = {};
    for (const [key, name] of WRAPPER_PROJECTIONS) {
      const linears = this.heads.map((h) => h[name]);
      grads[`w${key}`] = stack(linears.map((l) => gradOrZeros(l.weightGrad, l.weight.length)));
      grads[`b${key}`] = stack(linears.map((l) => l.bias && gradOrZeros(l.biasGrad, l.bias.length)));
    }
    return grads;
  }

  keepLayerGrads(grads, sums) {
    for (const [key, name] of WRAPPER_PROJECTIONS) {
      this.heads.forEach((h, i) => {
        const linear = h[name];
        for (const [param, all] of [['weight', sums[`w${key}`]], ['bias', sums[`b${key}`]]]) {
          const n = linear[param]?.length;
          if (n) keepGrad(linear, param, gradOrZeros(linear[`${param}Grad`], n), all.subarray(i * n, (i + 1) * n));
        }
      });
    }
  }
}

/** The book's MultiHeadAttention (listing 3.5): split heads, out_proj. */
export class MultiHeadAttention extends ProjectedAttention {
  constructor(dIn, dOut, contextLength, dropout, numHeads, qkvBias = false) {
    checkModuleArgs(dIn, dOut, qkvBias, [contextLength, dropout]);
    checkInteger('numHeads', numHeads);
    if (dOut % numHeads !== 0) {
      throw new RangeError(`dOut must be divisible by numHeads, got dOut ${dOut} and numHeads ${numHeads}`);
    }
    super(dIn, dOut, contextLength, dropout, true, qkvBias, numHeads);
    const { Linear } = bindingOf(new.target).classes;
    this.outProj = this.registerModule('out_proj', new Linear(dOut, dOut, true));
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
export class GroupedQueryAttention extends ProjectedAttention {
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

