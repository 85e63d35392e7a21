// Types for the causal-attention package: dist/index.d.mts (import) and
// dist/index.d.cts (require) are copies of this file. They need no
// @types/node and no lib beyond ES2022 (DOM only for nothing: a Node project
// without DOM types compiles too).
//
// Tensors are row-major Float32Arrays:
//   q [batch, heads, queryLength, headDim]
//   k [batch, kvHeads, keyLength, headDim]   (kvHeads defaults to heads)
//   v [batch, kvHeads, keyLength, valueDim]
//   output  [batch, heads, queryLength, valueDim]
//   weights [batch, heads, queryLength, keyLength]
//   logSumExp [batch, heads, queryLength]

declare global {
  // The well-known symbols of explicit resource management (TypeScript's lib
  // "esnext.disposable" and @types/node declare them the same way), so that
  // `[Symbol.dispose]()` compiles with lib ES2022. The runtime defines them
  // in Node >= 20 and Chromium >= 134; `using` itself needs lib
  // "esnext.disposable" (TypeScript >= 5.2).
  interface SymbolConstructor {
    readonly dispose: unique symbol;
    readonly asyncDispose: unique symbol;
  }
}

/** Which keys each query may see. `true` is `'top-left'`. */
export type CausalAlignment = boolean | 'top-left' | 'bottom-right';

/** How the causal mask is applied (chapter 3 teaches both). */
export type MaskStrategy = 'neg-inf' | 'renormalize';

/**
 * One attention computation: the shapes (integers >= 1) and the options of
 * {@link CausalAttentionRuntime.attention} that change what it computes.
 * {@link CausalAttentionRuntime.attentionBackward} takes the forward's.
 */
export interface AttentionComputation {
  /** Batch size B. Required. */
  batch: number;
  /** Number of heads H. Required. */
  heads: number;
  /**
   * Key/value heads (grouped-query attention; 1 = multi-query). Default:
   * heads. Query head h reads KV head ⌊h / (heads / kvHeads)⌋, as PyTorch's
   * scaled_dot_product_attention(enable_gqa=True); heads must be a multiple.
   * attentionBackward sums the gradients of a shared head over its group.
   */
  kvHeads?: number;
  /** Query positions Tq. Required. */
  queryLength: number;
  /** Key (and value) positions Tk. Default: queryLength. */
  keyLength?: number;
  /** Size D of each query and key vector. Required. */
  headDim: number;
  /** Size Dv of each value vector (and output vector). Default: headDim. */
  valueDim?: number;
  /**
   * Default true ('top-left': key j visible to query i iff j <= i, like
   * PyTorch's is_causal). 'bottom-right': j <= i + keyLength - queryLength
   * (the last query sees every key, as in decoding with cached keys).
   */
  causal?: CausalAlignment;
  /** Default 'neg-inf'. 'renormalize': softmax, multiply by the triangle, renormalise rows. */
  maskStrategy?: MaskStrategy;
  /** Multiplies Q·Kᵀ. Default 1/sqrt(headDim). Must be finite. */
  scale?: number;
  /** Dropout probability on the weights, in [0, 1). Default 0. */
  dropout?: number;
  /** Dropout acts only when true. Default false. */
  training?: boolean;
  /**
   * Seed of the dropout mask: same seed, same mask (Node, browsers, either
   * build, any thread count, with or without weights). Default: drawn from
   * the runtime's generator (see manualSeed). The masks cannot match
   * PyTorch's (PyTorch's own differ across devices).
   */
  seed?: number | bigint;
}

/** Options of {@link CausalAttentionRuntime.attention}: the computation and what to return. */
export interface AttentionOptions extends AttentionComputation {
  /** Also return the [B, H, Tq, Tk] weights (post-dropout when dropout ran). Default false. */
  returnWeights?: boolean;
  /** Also return each row's log-sum-exp [B, H, Tq], what attentionBackward needs. Default false. */
  returnLogSumExp?: boolean;
  /** Write the output here instead of a new array (length B·H·Tq·Dv). */
  out?: Float32Array;
  /** Write the weights here (needs returnWeights; length B·H·Tq·Tk). */
  weightsOut?: Float32Array;
}

/** What attention() returns: new arrays, or the `out` / `weightsOut` arrays given. */
export interface AttentionResult {
  /** [batch, heads, queryLength, valueDim]. */
  output: Float32Array;
  /** [batch, heads, queryLength, keyLength]; present when returnWeights was true. */
  weights?: Float32Array;
  /** [batch, heads, queryLength]; present when returnLogSumExp was true (-Infinity: a row that sees no key). */
  logSumExp?: Float32Array;
  /** With returnLogSumExp, when dropout ran: its mask's seed (drawn when none was given), for the backward. */
  seed?: bigint;
}

/** attention(..., { returnWeights: true }). */
export interface AttentionResultWithWeights {
  /** [batch, heads, queryLength, valueDim]. */
  output: Float32Array;
  /** [batch, heads, queryLength, keyLength]; each row sums to 1 unless dropout ran. */
  weights: Float32Array;
  /** [batch, heads, queryLength]; present when returnLogSumExp was true. */
  logSumExp?: Float32Array;
  /** With returnLogSumExp, when dropout ran: its mask's seed. */
  seed?: bigint;
}

/** What attentionBackward returns: the gradients, shaped like q, k and v. */
export interface AttentionGradients {
  /** [batch, heads, queryLength, headDim]. */
  gradQ: Float32Array;
  /** [batch, kvHeads, keyLength, headDim]; summed over the query heads that share a key/value head. */
  gradK: Float32Array;
  /** [batch, kvHeads, keyLength, valueDim]. */
  gradV: Float32Array;
}

/** A state dict: PyTorch parameter names to values (row-major [out, in] for weights). */
export type StateDict = Record<string, Float32Array>;
/** What loadStateDict accepts: Float32Arrays, flat or nested number arrays (tensor.tolist()). */
export type StateDictInput = Record<string, Float32Array | number[] | number[][]>;

/** One parameter as an optimizer sees it (module.parameters()): live arrays. */
export interface Parameter {
  /** Its state-dict name. */
  readonly name: string;
  /** The parameter's values (live: writes change the module). */
  readonly data: Float32Array;
  /** Its gradient (live), or null before a backward reaches it and after zeroGrad(). */
  grad: Float32Array | null;
}

/**
 * What every module has, as nn.Module: registered children, modes,
 * parameters, state dicts and gradients. `ca.Module` is this class itself
 * (shared by every runtime): extend it for a model of your own and register
 * its parts with registerModule.
 */
export interface Module {
  /** True after construction, as in PyTorch. */
  training: boolean;
  /**
   * Training mode (true, the default: dropout acts, forward keeps what backward needs) or
   * evaluation mode, for this module and every submodule (heads, projections, list entries);
   * returns the module.
   */
  train(mode?: boolean): this;
  /** Evaluation mode: train(false), for this module and every submodule. Returns the module. */
  eval(): this;
  /**
   * Registers `module` as a child named `name` (PyTorch's register_module): its state-dict
   * prefix (`name.`; no '.' in it), following this module's mode; its parameters come after
   * this module's own and earlier children's. Returns the module (`this.fc = this.registerModule('fc', new ca.Linear(3, 4))`).
   */
  registerModule<M extends Module>(name: string, module: M): M;
  /** Registers the Float32Array at `this[key]` as a parameter named `name` (default key); its gradient lives at `${key}Grad`. */
  registerParameter(name: string, key?: string): void;
  /** The direct children, in registration order. */
  children(): Module[];
  /** [name, child] of each direct child, in registration order. */
  namedChildren(): [string, Module][];
  /** [state-dict name, Parameter] of every parameter: own ones, then each child's under `child.`; `prefix` prepended. */
  namedParameters(prefix?: string): [string, Parameter][];
  /** Every parameter, in the state dict's order. */
  parameters(): Parameter[];
  /**
   * Parameters by PyTorch name, copies (`W_query.weight`, `out_proj.bias`,
   * `heads.0.W_key.weight`, `0.weight` in a ModuleList), `prefix` prepended.
   */
  stateDict(prefix?: string): StateDict;
  /**
   * Loads parameters by PyTorch name: checks every name and size first, reports all
   * mismatches in one error (RangeError; TypeError when a value is not numeric) and loads
   * all or nothing.
   */
  loadStateDict(dict: StateDictInput): this;
  /** The gradients by state-dict name: the live arrays (clip them in place), or null where no backward reached. */
  gradients(): Record<string, Float32Array | null>;
  /**
   * Every gradient to null (the default, as PyTorch's zero_grad(): the next backward
   * allocates it) or, with setToNone false, to zeros in place (the same arrays).
   */
  zeroGrad(setToNone?: boolean): void;
}

/**
 * nn.ModuleList: modules registered as children '0', '1', ... (state-dict
 * names `0.weight`, `1.W_query.weight`, ...), for a model that calls them
 * in its own way. Indexable (entries cannot be reassigned) and iterable.
 */
export interface ModuleList<M extends Module = Module> extends Module, Iterable<M> {
  /** Number of modules. */
  readonly length: number;
  /** The module at an index. */
  readonly [index: number]: M;
  /** Adds a module as the next child. Returns the list. */
  append(module: M): this;
  /** Appends every module of an iterable. Returns the list. */
  extend(modules: Iterable<M>): this;
  /** The module at `index` (negative counts from the end), or undefined. */
  at(index: number): M | undefined;
}

/**
 * nn.Sequential: a ModuleList whose forward runs each module's forward on
 * the one before's output (the shape passed on keeps all but the last axis
 * and takes the output's width; an Embedding first takes indices and its
 * shape), and whose backward runs the backwards in reverse.
 */
export interface Sequential<M extends Module = Module> extends ModuleList<M> {
  /** The last module's output for x (or indices) of shape `shape`, the first module's input. */
  forward(x: Float32Array | Int32Array | Uint32Array | number[], shape?: number[]): Float32Array;
  /** The gradient of the first module's input (null when it took indices); every parameter's gradient accumulates. */
  backward(gradOutput: Float32Array): Float32Array | null;
}

/** nn.Linear(inFeatures, outFeatures, bias = true) with PyTorch's seeded init. */
export interface Linear extends Module {
  /** Size of each input row. */
  readonly inFeatures: number;
  /** Size of each output row. */
  readonly outFeatures: number;
  /** [outFeatures, inFeatures], row-major (live: writes change the layer). */
  weight: Float32Array;
  /** [outFeatures], or null without bias. */
  bias: Float32Array | null;
  /** The gradient of weight: null until a backward, then one array every backward adds into. */
  weightGrad: Float32Array | null;
  /** The gradient of bias; null until a backward (and without bias), then one array every backward adds into. */
  biasGrad: Float32Array | null;
  /** y = x · weightᵀ + bias for x of shape [..., inFeatures]; in training mode it keeps x for backward(). */
  forward(x: Float32Array, shape: number[]): Float32Array;
  /**
   * The last training forward's backward: gradOutput [..., outFeatures] → the gradient of x;
   * weightGrad, biasGrad accumulate. A rejected gradOutput (wrong type or length) leaves the
   * forward for a valid one.
   */
  backward(gradOutput: Float32Array): Float32Array;
}

/**
 * nn.Embedding(numEmbeddings, embeddingDim), initialised N(0, 1) with
 * PyTorch's normal_ sequence: manualSeed(123) then `new Embedding(6, 3)` is
 * the book's chapter-2 table (0.3374, -0.1778, -0.1690, ...). Tables of fewer
 * than 16 values use the same rule, which is not PyTorch's there.
 */
export interface Embedding extends Module {
  /** Rows of the table. */
  readonly numEmbeddings: number;
  /** Width of each row. */
  readonly embeddingDim: number;
  /** [numEmbeddings, embeddingDim] (live). */
  weight: Float32Array;
  /** The gradient of weight: null until a backward, then one array every backward adds into. */
  weightGrad: Float32Array | null;
  /** The rows of `indices` (shape default [indices.length]): [...shape, embeddingDim]. */
  forward(indices: Int32Array | Uint32Array | number[], shape?: number[]): Float32Array;
  /**
   * Adds gradOutput's rows to weightGrad at the forward's indices; returns null (indices have
   * no gradient). A rejected gradOutput leaves the forward for a valid one.
   */
  backward(gradOutput: Float32Array): null;
}

/** A parameter an optimizer can update without a module: its values and its gradient. */
export interface ParameterLike {
  /** The values, updated in place. */
  readonly data: Float32Array;
  /** The gradient (same length), or null: skipped by step(). */
  grad: Float32Array | null;
}

/** What an optimizer updates: a module, or an array of modules and parameters. */
export type Parameters = Module | Array<Module | Parameter | ParameterLike>;

/** Options of {@link CausalAttentionRuntime.crossEntropy}. */
export interface CrossEntropyOptions {
  /** Targets equal to this count for nothing (PyTorch's ignore_index). Default -100. */
  ignoreIndex?: number;
}

/** What {@link CausalAttentionRuntime.crossEntropy} returns. */
export interface CrossEntropyResult {
  /** The mean loss over the targets not ignored (NaN when all are), rounded to float32. */
  loss: number;
  /** Its gradient with respect to the logits, [N, C]; zero rows for ignored targets. */
  gradLogits: Float32Array;
}

/** Options of {@link CausalAttentionRuntime.optim}.SGD, PyTorch's names and defaults. */
export interface SGDOptions {
  /** Learning rate. Default 1e-3. */
  lr?: number;
  /** Momentum factor. Default 0. */
  momentum?: number;
  /** Dampening of the momentum. Default 0. */
  dampening?: number;
  /** L2 penalty added to the gradient. Default 0. */
  weightDecay?: number;
  /** Nesterov momentum (needs momentum > 0, dampening 0). Default false. */
  nesterov?: boolean;
}

/** Options of {@link CausalAttentionRuntime.optim}.AdamW, PyTorch's names and defaults. */
export interface AdamWOptions {
  /** Learning rate. Default 1e-3. */
  lr?: number;
  /** Decay rates of the two moments. Default [0.9, 0.999]. */
  betas?: [number, number];
  /** Added to the denominator. Default 1e-8. */
  eps?: number;
  /** Decoupled weight decay (p *= 1 - lr·weightDecay). Default 1e-2. */
  weightDecay?: number;
}

/**
 * What both optimizers share: PyTorch's defaults and single-tensor update
 * rules, each operation rounded to float32 as PyTorch's tensors are.
 */
export interface Optimizer {
  /** The parameters step() updates. */
  readonly params: readonly Parameter[];
  /**
   * One update of every parameter that has a gradient (those whose grad is
   * null are skipped). All or nothing: every gradient is checked first (a
   * Float32Array of its parameter's length: else TypeError, or RangeError for
   * a wrong length), so a step that throws has changed no parameter.
   */
  step(): void;
  /** Every parameter's gradient to null (default) or zeros. */
  zeroGrad(setToNone?: boolean): void;
}

/** torch.optim.SGD. */
export interface SGD extends Optimizer {
  /** Learning rate. */
  readonly lr: number;
  /** Momentum factor. */
  readonly momentum: number;
  /** Dampening of the momentum. */
  readonly dampening: number;
  /** L2 penalty. */
  readonly weightDecay: number;
  /** Nesterov momentum. */
  readonly nesterov: boolean;
}

/**
 * torch.optim.AdamW: decoupled weight decay (p *= 1 - lr·weightDecay), bias
 * corrections 1 - β^t.
 */
export interface AdamW extends Optimizer {
  /** Learning rate. */
  readonly lr: number;
  /** Decay rates of the two moments. */
  readonly betas: readonly [number, number];
  /** Added to the denominator. */
  readonly eps: number;
  /** Decoupled weight decay. */
  readonly weightDecay: number;
}

/** Options of a module's forward(). */
export interface ForwardOptions {
  /** Also return the [batch, heads, tokens, tokens] weights (post-dropout when dropout ran). */
  returnWeights?: boolean;
  /** Also return the raw scores Q·Kᵀ [batch, heads, tokens, tokens] (before scaling and masking). */
  returnScores?: boolean;
  /**
   * Also return the projected heads the attention ran on, each
   * [batch, heads, tokens, headDim] (the book's `.view(b, T, H, hd).transpose(1, 2)`).
   */
  returnQKV?: boolean;
  /** How the causal mask is applied. Default 'neg-inf'. */
  maskStrategy?: MaskStrategy;
  /** Dropout seed; default: drawn from the runtime's generator. */
  seed?: number | bigint;
  /** Write the output here (length batch · tokens · outputDim). */
  out?: Float32Array;
  /**
   * The book's ch04/03 KV cache: append this call's keys and values to the
   * module's cache and attend over all of it (positions continue: a prompt,
   * then one token per call, gives one full forward's outputs). Weights and
   * scores then span every cached key. resetCache() starts over. The cache
   * grows by doubling up to contextLength; more tokens, or another batch
   * size before resetCache(), is a RangeError. Such a forward has no backward.
   */
  useCache?: boolean;
}

/** What forward() returns with any of the return* options. */
export interface ForwardResult {
  /** [batch, tokens, outputDim]. */
  output: Float32Array;
  /** [batch, heads, tokens, tokens]; present with returnWeights. */
  weights?: Float32Array;
  /** [batch, heads, tokens, tokens]; present with returnScores. */
  scores?: Float32Array;
  /** [batch, heads, tokens, headDim]; present with returnQKV. */
  queries?: Float32Array;
  /** [batch, heads, tokens, headDim]; present with returnQKV. */
  keys?: Float32Array;
  /** [batch, heads, tokens, headDim]; present with returnQKV. */
  values?: Float32Array;
}

/** forward(..., { returnWeights: true }). */
export interface ForwardResultWithWeights extends ForwardResult {
  /** [batch, heads, tokens, tokens] (post-dropout when dropout ran). */
  weights: Float32Array;
}

/** forward(..., { returnScores: true }). */
export interface ForwardResultWithScores extends ForwardResult {
  /** [batch, heads, tokens, tokens]: Q·Kᵀ before scaling and masking. */
  scores: Float32Array;
}

/** forward(..., { returnQKV: true }). */
export interface ForwardResultWithQKV extends ForwardResult {
  /** [batch, heads, tokens, headDim]. */
  queries: Float32Array;
  /** [batch, heads, tokens, headDim]. */
  keys: Float32Array;
  /** [batch, heads, tokens, headDim]. */
  values: Float32Array;
}

/** Shared by the four modules. Parameters are JS-owned: no dispose needed. */
export interface AttentionModule extends Module {
  /** Size of each input token vector (the last axis of x). */
  readonly dIn: number;
  /** Number of attention heads. */
  readonly numHeads: number;
  /** Width of the output's last axis. */
  readonly outputDim: number;
  /** Most tokens a forward takes (the size of the book's mask buffer); undefined for SelfAttention. */
  readonly contextLength: number | undefined;
  /** Dropout probability in [0, 1); settable (validated), like nn.Dropout's p. */
  dropout: number;
  /**
   * x: [batch, tokens, dIn] (or [tokens, dIn]) → [batch, tokens, outputDim].
   * Throws a RangeError when tokens > contextLength.
   */
  forward(x: Float32Array, shape: number[],
    options?: ForwardOptions & { returnWeights?: false; returnScores?: false; returnQKV?: false }): Float32Array;
  /** With returnWeights: `{ output, weights }` (and scores, QKV when asked). */
  forward(x: Float32Array, shape: number[],
    options: ForwardOptions & { returnWeights: true }): ForwardResultWithWeights;
  /** With returnScores: `{ output, scores }` (and weights, QKV when asked). */
  forward(x: Float32Array, shape: number[],
    options: ForwardOptions & { returnScores: true }): ForwardResultWithScores;
  /** With returnQKV: `{ output, queries, keys, values }` (and weights, scores when asked). */
  forward(x: Float32Array, shape: number[],
    options: ForwardOptions & { returnQKV: true }): ForwardResultWithQKV;
  /** Options known only at run time: the output array, or a {@link ForwardResult}. */
  forward(x: Float32Array, shape: number[], options: ForwardOptions): Float32Array | ForwardResult;
  /** Same as forward (like calling a PyTorch module). */
  call(x: Float32Array, shape: number[], options?: ForwardOptions): Float32Array | ForwardResult;
  /**
   * The last training forward's backward: gradOutput [batch, tokens, outputDim]
   * → the gradient of x [batch, tokens, dIn]; every parameter's gradient
   * accumulates (+=) into its array. A training-mode forward keeps what it
   * needs (x, the projected Q, K, V, the attention output, its log-sum-exp,
   * the dropout seed). One backward per forward, as PyTorch frees its graph;
   * without a training forward before it, a TypeError says which; a rejected
   * gradOutput (wrong type or length) leaves the forward for a valid one. It
   * uses the parameters as they are when it runs: update them after it, not
   * between forward and backward. GroupedQueryAttention sums a shared
   * key/value head's gradients over its group and transposes RoPE's rotation.
   */
  backward(gradOutput: Float32Array): Float32Array;
  /** Tokens in the KV cache of forward(..., { useCache: true }); 0 without one. */
  readonly cacheLength: number;
  /** Empties the KV cache and frees its wasm memory (the book's reset_cache()). */
  resetCache(): this;
  /** Frees the module's wasm memory (its KV cache); the module stays usable. Idempotent. */
  dispose(): void;
  /** dispose(), for `using`. */
  [Symbol.dispose](): void;
}

/** The book's SelfAttention_v2: no mask, no dropout. */
export interface SelfAttention extends AttentionModule {
  /** Output width: numHeads · head size. */
  readonly dOut: number;
  /** The query projection (`W_query.weight` is [dOut, dIn]). */
  W_query: Linear;
  /** The key projection. */
  W_key: Linear;
  /** The value projection. */
  W_value: Linear;
}
/** The book's CausalAttention (listing 3.3): SelfAttention with the causal mask and dropout. */
export interface CausalAttention extends SelfAttention {}
/** Listing 3.4: numHeads independent CausalAttention heads, concatenated (output width numHeads · dOut). */
export interface MultiHeadAttentionWrapper extends AttentionModule {
  /** Output width of each head. */
  readonly dOut: number;
  /** The heads (an Array; registered as the child `heads`: `heads.0.W_query.weight`, ... in the state dict). */
  readonly heads: CausalAttention[];
}
/** Listing 3.5: dOut split into numHeads heads of dOut / numHeads, then out_proj. */
export interface MultiHeadAttention extends SelfAttention {
  /** dOut / numHeads. */
  readonly headDim: number;
  /** The output projection `out_proj` (a Linear with bias). */
  outProj: Linear;
}

/**
 * The Llama chapter's GroupedQueryAttention: W_key/W_value [numKVGroups ·
 * headDim, dIn], W_query [dOut, dIn], out_proj [dOut, dOut], no biases,
 * created (and seeded) in the book's `__init__` order, so its state dicts
 * load 1:1. RoPE on queries and keys as the book's compute_rope_params /
 * apply_rope, with float32 tables; the head size must be even. Its float32
 * steps are ported from the book's code and PyTorch's operators (tested
 * against that port and float64 finite differences, not against PyTorch).
 */
export interface GroupedQueryAttention extends MultiHeadAttention {
  /** Key/value heads, each shared by groupSize query heads. */
  readonly numKVGroups: number;
  /** numHeads / numKVGroups: query heads per key/value head. */
  readonly groupSize: number;
  /** RoPE's theta base. */
  readonly ropeBase: number;
  /** Llama 3.1's RoPE frequency adjustment (frozen), or null for none. */
  readonly freqConfig: Readonly<RopeFreqConfig> | null;
  /** Positions RoPE covers: at most this many tokens per forward (and in the cache). */
  readonly contextLength: number;
}

/**
 * Llama 3.1 and 3.2's RoPE frequency adjustment (the book's freq_config of
 * compute_rope_params; Hugging Face's rope_scaling with rope_type "llama3"):
 * frequencies whose wavelength 2π / inv_freq exceeds originalContextLength /
 * lowFreqFactor are divided by factor, those below originalContextLength /
 * highFreqFactor kept, those between interpolated. Llama 3.2 1B/3B:
 * { factor: 32, lowFreqFactor: 1, highFreqFactor: 4, originalContextLength: 8192 }
 * (Llama 3.1: factor 8). All four are required: positive, lowFreqFactor < highFreqFactor.
 */
export interface RopeFreqConfig {
  /** What the longest wavelengths' frequencies are divided by (freq_config["factor"]). */
  factor: number;
  /** Wavelengths above originalContextLength / lowFreqFactor are divided by factor. */
  lowFreqFactor: number;
  /** Wavelengths below originalContextLength / highFreqFactor are kept. */
  highFreqFactor: number;
  /** The context length the model was first trained at (8192 for Llama 3). */
  originalContextLength: number;
}

/** Options of the GroupedQueryAttention constructor (beyond the book's positional arguments). */
export interface GroupedQueryAttentionOptions {
  /** Positions RoPE covers (compute_rope_params' context_length); default 4096. */
  contextLength?: number;
  /** RoPE's theta base; default 10 000 (Llama 3: 500 000). */
  ropeBase?: number;
  /** Llama 3.1 / 3.2's frequency adjustment; default none (null). */
  freqConfig?: RopeFreqConfig | null;
}

/** Options of {@link CausalAttentionRuntime.createKVCache}: the sizes the cache holds. */
export interface KVCacheOptions {
  /** Sequences B. Required. */
  batch: number;
  /** Key/value heads Hkv. Required. */
  kvHeads: number;
  /** Size D of each key (and query) vector. Required. */
  headDim: number;
  /** Default: headDim. */
  valueDim?: number;
  /** Tokens it can hold per sequence; one whose bytes cannot fit a wasm32 heap is a RangeError. */
  capacity: number;
}

/** What a KV cache's attention takes: ca.attention's options minus the sizes the cache fixes. */
export type KVCacheAttentionOptions =
  Omit<AttentionOptions, 'batch' | 'kvHeads' | 'keyLength' | 'headDim' | 'valueDim'>;

/**
 * Keys [batch, kvHeads, capacity, headDim] and values resident in wasm
 * memory: append copies rows in once, attention sends only q in.
 */
export interface KVCache {
  /** Tokens held per sequence. */
  readonly length: number;
  /** Tokens it can hold per sequence. */
  readonly capacity: number;
  /** Sequences B. */
  readonly batch: number;
  /** Key/value heads Hkv. */
  readonly kvHeads: number;
  /** Size D of each key vector. */
  readonly headDim: number;
  /** Size Dv of each value vector. */
  readonly valueDim: number;
  /** Whether dispose() has run (answers after it, as the layout does). */
  readonly disposed: boolean;
  /**
   * k [batch, kvHeads, t, headDim], v [batch, kvHeads, t, valueDim]; t from
   * k's length. Past capacity: RangeError, nothing changes.
   */
  append(k: Float32Array, v: Float32Array): this;
  /**
   * q [batch, heads, queryLength, headDim] over every cached key, with the
   * weights [batch, heads, queryLength, length]; causal defaults to 'bottom-right'.
   */
  attention(q: Float32Array, options: KVCacheAttentionOptions & { returnWeights: true }): AttentionResultWithWeights;
  /**
   * q [batch, heads, queryLength, headDim] over every cached key → output
   * [batch, heads, queryLength, valueDim]; only q and the output cross.
   * returnLogSumExp gives each row's log-sum-exp [batch, heads, queryLength]
   * as ca.attention does: the outputs of one decode split over several
   * caches merge with it (weights e^(lse_i - max lse)).
   */
  attention(q: Float32Array, options: KVCacheAttentionOptions): AttentionResult;
  /** Keeps the first n tokens. */
  truncate(n: number): this;
  /** Empties it (keeps its memory). */
  reset(): this;
  /**
   * Frees its wasm memory; idempotent. Afterwards every method and `length`
   * throw a TypeError; `disposed` and the layout the cache was created with
   * (`capacity`, `batch`, `kvHeads`, `headDim`, `valueDim`) still answer, as
   * a closed file keeps its name: they describe it without using its memory,
   * so logging or serializing a disposed cache (a worker-mode handle's
   * snapshot included) does not throw.
   */
  dispose(): void;
  /** dispose(), for `using`. */
  [Symbol.dispose](): void;
}

/**
 * What init() resolves to: the engine and the book's module classes.
 *
 * Every argument is checked in JS before any wasm call: a wrong type is a
 * TypeError, a wrong value a RangeError, and the message names the argument
 * and gives the expected and the actual value (`q must have length 24 (batch
 * 1 × heads 2 × queryLength 3 × headDim 4), got length 23`). Unknown option
 * names are rejected (a typo would otherwise be ignored), and so are shapes
 * whose tensors cannot fit a 2 GiB wasm32 heap, before any allocation. The
 * runtime stays usable after any error.
 */
export interface CausalAttentionRuntime {
  /** Which wasm build runs: 'single' or 'threads' (pthreads). */
  readonly build: 'single' | 'threads';
  /** Threads used per call, the calling thread included. */
  readonly threads: number;
  /** Highway's SIMD target; 'WASM' means SIMD128. */
  readonly target: string;
  /**
   * The GEMM microkernel under Linear, the layer and their backward:
   * 'relaxed-simd' (f32x4.relaxed_madd, where the engine has relaxed SIMD
   * and init's gemmKernel is 'auto') or 'simd128'.
   */
  readonly gemmKernel: 'relaxed-simd' | 'simd128';
  /** Current size of this runtime's wasm memory, in bytes. */
  readonly memoryBytes: number;

  /**
   * Seeds the runtime's generator (PyTorch's mt19937), used for module
   * initialisation, rand() and default dropout seeds, like torch.manual_seed.
   */
  manualSeed(seed: number | bigint): this;

  /** The default attention scale 1/√headDim, rounded to float32 as the engine uses it. */
  defaultScale(headDim: number): number;

  /** torch.rand(shape): uniform [0, 1) draws, bit-identical to PyTorch on CPU for the same seed. */
  rand(shape: number[]): Float32Array;
  /** torch.rand(6, 3): the same with the dimensions as arguments. */
  rand(...shape: number[]): Float32Array;

  /** nn.Module, the base of every module (the same class in every runtime): extend it for a model of your own. */
  Module: {
    /** An empty module: register children with registerModule. */
    new (): Module;
  };
  /** nn.ModuleList. */
  ModuleList: {
    /** ModuleList(modules = []): each module registered as the next child ('0', '1', ...). */
    new <M extends Module = Module>(modules?: Iterable<M>): ModuleList<M>;
  };
  /** nn.Sequential. */
  Sequential: {
    /** Sequential(...modules): each registered as the next child ('0', '1', ...). */
    new <M extends Module = Module>(...modules: M[]): Sequential<M>;
  };
  /** PyTorch's nn.Linear; like every class here, initialised from the runtime's generator. */
  Linear: {
    /** nn.Linear(inFeatures, outFeatures, bias = true). */
    new (inFeatures: number, outFeatures: number, bias?: boolean): Linear;
  };
  /** PyTorch's nn.Embedding. */
  Embedding: {
    /** nn.Embedding(numEmbeddings, embeddingDim). */
    new (numEmbeddings: number, embeddingDim: number): Embedding;
  };
  /** The book's SelfAttention_v2. */
  SelfAttention: {
    /** SelfAttention_v2(dIn, dOut, qkvBias = false). */
    new (dIn: number, dOut: number, qkvBias?: boolean): SelfAttention;
  };
  /** The book's CausalAttention (listing 3.3). */
  CausalAttention: {
    /** CausalAttention(dIn, dOut, contextLength, dropout, qkvBias = false). */
    new (dIn: number, dOut: number, contextLength: number, dropout: number, qkvBias?: boolean): CausalAttention;
  };
  /** The book's MultiHeadAttentionWrapper (listing 3.4). */
  MultiHeadAttentionWrapper: {
    /** MultiHeadAttentionWrapper(dIn, dOut, contextLength, dropout, numHeads, qkvBias = false). */
    new (dIn: number, dOut: number, contextLength: number, dropout: number, numHeads: number,
      qkvBias?: boolean): MultiHeadAttentionWrapper;
  };
  /** The book's MultiHeadAttention (listing 3.5). */
  MultiHeadAttention: {
    /** MultiHeadAttention(dIn, dOut, contextLength, dropout, numHeads, qkvBias = false); dOut divisible by numHeads. */
    new (dIn: number, dOut: number, contextLength: number, dropout: number, numHeads: number,
      qkvBias?: boolean): MultiHeadAttention;
  };

  /** The Llama chapter's GroupedQueryAttention (ch05/07_gpt_to_llama), with RoPE. */
  GroupedQueryAttention: {
    /** GroupedQueryAttention(dIn, dOut, numHeads, numKVGroups, { contextLength, ropeBase, freqConfig }). */
    new (dIn: number, dOut: number, numHeads: number, numKVGroups: number,
      options?: GroupedQueryAttentionOptions): GroupedQueryAttention;
  };

  /** A key/value cache resident in wasm memory (dispose it when done). */
  createKVCache(options: KVCacheOptions): KVCache;

  /**
   * Scaled dot-product attention (SIMD kernels) with weights: q [B, H, Tq, D],
   * k [B, kvHeads, Tk, D], v [B, kvHeads, Tk, Dv] → `{ output, weights }`.
   * Non-finite inputs: a query row that sees a NaN or ±∞ score gets NaN
   * weights and output; NaN/∞ in a value row reaches exactly the outputs of
   * the queries that see that key; other rows are unaffected.
   */
  attention(
    q: Float32Array, k: Float32Array, v: Float32Array,
    options: AttentionOptions & { returnWeights: true }): AttentionResultWithWeights;
  /** Scaled dot-product attention (SIMD kernels): `{ output }`, weights only with returnWeights. */
  attention(
    q: Float32Array, k: Float32Array, v: Float32Array,
    options: AttentionOptions): AttentionResult;

  /** The scalar reference (double accumulation): the kernels' oracle. Slow. With weights. */
  attentionReference(
    q: Float32Array, k: Float32Array, v: Float32Array,
    options: AttentionOptions & { returnWeights: true }): AttentionResultWithWeights;
  /** The scalar reference (double accumulation): the kernels' oracle. Slow. */
  attentionReference(
    q: Float32Array, k: Float32Array, v: Float32Array,
    options: AttentionOptions): AttentionResult;

  /**
   * The gradients of attention with respect to q, k and v, given the
   * gradient of its output and the forward's output and logSumExp (from
   * returnLogSumExp: each row's log Σ exp(scale·q·k) over the keys it sees,
   * -Infinity for none). options are the forward's; when dropout ran, its
   * seed (the forward's result has the one it drew): the mask is regenerated,
   * never stored. A shared key/value head's gradients are summed over its
   * group; both mask strategies have the same gradient; rows that see no key
   * and keys no query sees get zero gradient. NaN/∞ propagate over the
   * visible (query, key) pairs only: NaN in row i of gradOutput, output or
   * logSumExp reaches gradQ row i and the gradK/gradV rows of the keys row i
   * sees; NaN in k/v row j reaches gradQ of the rows that see key j and
   * gradK/gradV row j.
   */
  attentionBackward(
    gradOutput: Float32Array, q: Float32Array, k: Float32Array, v: Float32Array,
    output: Float32Array, logSumExp: Float32Array, options: AttentionComputation): AttentionGradients;
  /** The same with the scalar reference (double accumulation). Slow. */
  attentionBackwardReference(
    gradOutput: Float32Array, q: Float32Array, k: Float32Array, v: Float32Array,
    output: Float32Array, logSumExp: Float32Array, options: AttentionComputation): AttentionGradients;

  /**
   * torch.randint(low, high, shape): PyTorch's CPU draws for the same seed,
   * as an Int32Array (manualSeed(0), randint(0, 10, [10]): 4, 9, 3, 0, 3, 9,
   * 7, 3, 7, 3).
   */
  randint(low: number, high: number, shape: number[]): Int32Array;

  /**
   * cross_entropy with mean reduction: logits [N, C], targets N class
   * indices; targets equal to ignoreIndex (default -100) count for nothing.
   */
  crossEntropy(logits: Float32Array, targets: Int32Array | Uint32Array | number[],
    options?: CrossEntropyOptions): CrossEntropyResult;

  /** torch.optim: SGD and AdamW with PyTorch's defaults and update rules. */
  readonly optim: {
    /** torch.optim.SGD. */
    SGD: {
      /** new optim.SGD(params, { lr, momentum, dampening, weightDecay, nesterov }). */
      new (params: Parameters, options?: SGDOptions): SGD;
    };
    /** torch.optim.AdamW. */
    AdamW: {
      /** new optim.AdamW(params, { lr, betas, eps, weightDecay }). */
      new (params: Parameters, options?: AdamWOptions): AdamW;
    };
  };

  /**
   * Ends this runtime: frees its KV caches, and every later use of it, its
   * modules and its caches is a TypeError. Other runtimes init() gave keep
   * working; the last one's dispose() frees the engine (its wasm memory and
   * worker threads). Idempotent.
   */
  dispose(): void;
  /**
   * dispose(), for `using ca = await init()`: explicit resource management,
   * in Node >= 24 and Chromium >= 134, or compiled for older targets by
   * TypeScript >= 5.2 with lib esnext.disposable (a syntax error in Node 20
   * and 22).
   */
  [Symbol.dispose](): void;
}

/** Options of {@link init}. */
export interface InitOptions {
  /**
   * 'auto' (default): the pthreads build where it can run (Node; browsers
   * when crossOriginIsolated) and more than one thread is wanted, else the
   * single-threaded build. 'single' / 'threads' force one.
   */
  build?: 'auto' | 'single' | 'threads';
  /**
   * 'auto' (default: the machine's cores, at most 16) or 1..16. Work is
   * split over batch × heads × query blocks (small calls stay on the calling
   * thread) and every output element is computed by one thread, so results
   * are bit-identical for any thread count.
   */
  threads?: 'auto' | number;
  /**
   * true: run the engine in a dedicated worker (a Web Worker in browsers, a
   * worker_threads Worker in Node) and resolve to a {@link RemoteRuntime}: the
   * same API, every call returning a promise, so the calling thread never
   * blocks. `build` and `threads` then apply inside the worker. Default false.
   */
  worker?: boolean;
  /**
   * Milliseconds until a load that has not finished rejects (a .wasm or
   * worker that is not served, a worker that never answers), naming the
   * file. Default 30000; Infinity waits forever.
   */
  timeout?: number;
  /**
   * 'auto' (default): the relaxed-SIMD GEMM kernel where the engine has
   * relaxed SIMD (Chromium; Node 20 only with --experimental-wasm-relaxed-simd),
   * else SIMD128. 'simd128': always SIMD128, so Linear, the modules and
   * training give the same bits in every engine (the relaxed kernel fuses
   * each multiply-add, which rounds differently). Attention itself is
   * SIMD128 everywhere.
   */
  gemmKernel?: 'auto' | 'simd128';
}

/**
 * Loads the engine and resolves to a runtime of the caller's own: every
 * call a new one, with its own generator (manualSeed) and its own lifetime
 * (dispose() ends that runtime, its modules and its KV caches only). Calls
 * with the same resolved options share the loaded engine underneath (in
 * worker mode, the worker), which the last of their runtimes' dispose()
 * frees. Rejects with a TypeError or RangeError for bad options, and with an Error
 * naming the file when the .wasm or a worker cannot load. This overload:
 * worker mode, the engine in a dedicated worker.
 */
export function init(options: InitOptions & { worker: true }): Promise<RemoteRuntime>;
/** The engine on the calling thread (default). */
export function init(options?: InitOptions & { worker?: false }): Promise<CausalAttentionRuntime>;
/** `worker` known only at run time. */
export function init(options: InitOptions): Promise<CausalAttentionRuntime | RemoteRuntime>;

// ---------------------------------------------------------------------------
// Worker mode: how an API looks from the calling thread.

/** Values a handle's snapshot holds (read synchronously). */
type Primitive = string | number | boolean | bigint | symbol | null | undefined;
/** Any function (a method). */
type AnyFunction = (...args: any[]) => any;
/** Any class. */
type AnyConstructor = abstract new (...args: any[]) => any;
/** Copied as is: primitives, typed arrays, buffers. */
type Copied = Primitive | ArrayBufferView | ArrayBuffer | Date | RegExp;
/** Objects with methods stay in the worker (handles); others are data (copied). */
type HasMethods<T> = { [K in keyof T]-?: T[K] extends AnyFunction | AnyConstructor ? K : never }[keyof T] extends never
  ? false : true;
/** The string keys of T (symbol-keyed members do not cross to the worker). */
type StringKeys<T> = { [K in keyof T]: K extends string ? K : never }[keyof T];

/** What a remote call resolves to: data copied, objects with methods as handles. */
export type RemoteResult<T> =
  T extends Copied ? T
  : T extends AnyFunction | AnyConstructor ? Remote<T>
  : T extends readonly (infer U)[] ? RemoteResult<U>[]
  : T extends object ? (HasMethods<T> extends true ? Remote<T> : { [K in keyof T]: RemoteResult<T[K]> })
  : T;

/** Arguments of a remote call: data (copied), or handles the worker returned. */
type RemoteArgs<A extends readonly unknown[]> = {
  [I in keyof A]: A[I] extends Copied ? A[I] : HasMethods<A[I]> extends true ? A[I] | Remote<A[I]> : A[I];
};

/** A method called through the worker: the same overloads (up to five), returning promises. */
export type RemoteMethod<F> =
  F extends {
    (...a: infer A1): infer R1; (...a: infer A2): infer R2; (...a: infer A3): infer R3;
    (...a: infer A4): infer R4; (...a: infer A5): infer R5;
  }
    ? ((...a: RemoteArgs<A1>) => Promise<RemoteResult<R1>>) & ((...a: RemoteArgs<A2>) => Promise<RemoteResult<R2>>)
      & ((...a: RemoteArgs<A3>) => Promise<RemoteResult<R3>>) & ((...a: RemoteArgs<A4>) => Promise<RemoteResult<R4>>)
      & ((...a: RemoteArgs<A5>) => Promise<RemoteResult<R5>>)
    : never;

/** A class constructed in the worker: `await new ca.CausalAttention(...)` gives a handle. */
export type RemoteConstructor<C> = C extends abstract new (...args: infer A) => infer I
  ? new (...args: RemoteArgs<A>) => Promise<Remote<I>> : never;

/**
 * A property reached through a handle without a snapshot: awaiting it reads
 * it (a copy, or a handle); its own methods and properties are reachable too
 * (`await layer.W_query.forward(x, shape)`).
 */
export type RemoteProperty<V> = PromiseLike<RemoteResult<V>> & (
  V extends Copied ? unknown
  : V extends readonly (infer U)[] ? { readonly [index: number]: RemoteMember<U> }
  : V extends object ? { readonly [K in StringKeys<V>]: RemoteMember<V[K]> }
  : unknown);

/** A member reached through a handle: a constructor, a method, or an awaited property. */
type RemoteMember<V> =
  V extends AnyConstructor ? RemoteConstructor<V>
  : V extends AnyFunction ? RemoteMethod<V>
  : RemoteProperty<V>;

/**
 * A handle: an object that lives in the worker (module instances, caches,
 * the runtime itself: whatever is not plain data). Methods return promises;
 * `new` on a class resolves to a handle. The same object always comes back
 * as the same handle (`await layer.eval() === layer`). Primitive properties
 * (numbers, strings, booleans) read synchronously from a snapshot refreshed
 * after every call through this handle (`ca.build`, `layer.training`); other
 * properties are {@link RemoteProperty} (awaited). Properties cannot be
 * assigned (TypeError): call a method. Handles the caller drops are
 * released in the worker. The names JS and libraries read by convention
 * (toJSON, toString, valueOf, constructor, inspect, Symbol.iterator,
 * Symbol.toPrimitive, ...) answer as on a plain object, without a call to
 * the worker: JSON.stringify(layer) gives the snapshot, `${layer}` a tag.
 */
export type Remote<T> = {
  readonly [K in StringKeys<T>]: T[K] extends Primitive ? T[K] : RemoteMember<T[K]>;
} & (T extends AnyConstructor ? RemoteConstructor<T> : unknown)
  & (T extends AnyFunction ? RemoteMethod<T> : unknown);

/**
 * What init({ worker: true }) resolves to: the runtime in a worker, the same
 * API with every call returning a promise. The proxy knows no method names:
 * property reads, calls and `new` are forwarded by path, so every function,
 * class and option works the same way. Arguments (numbers, strings,
 * Float32Arrays, plain objects and arrays of them, handles) are copied to the
 * worker, so the caller keeps its arrays; results are copied in the worker
 * and the copies transferred. An argument array the worker returns (`out`,
 * `weightsOut`) is written back into the caller's own array, which the result
 * then holds. Shared, circular and deeply nested arguments arrive as they
 * are. Functions, other class instances and handles of another worker-mode
 * runtime cannot be sent (TypeError). Errors arrive as the same class with
 * the same message, for any argument that can be sent (a detached array is
 * the empty array the engine sees locally). After dispose(), calls reject
 * with the usual "has been disposed" TypeError.
 */
export type RemoteRuntime = Remote<CausalAttentionRuntime> & {
  /**
   * Disposes this runtime in the worker; the last runtime sharing the worker
   * then terminates it. Idempotent.
   */
  dispose(): Promise<void>;
  /**
   * The last runtime sharing the worker: terminates it at once (pending
   * calls reject); otherwise disposes this runtime in the worker.
   */
  [Symbol.dispose](): void;
  /** Same as dispose(). */
  [Symbol.asyncDispose](): Promise<void>;
};
