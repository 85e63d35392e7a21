// Types for the causal-attention package entry (dist/index.mjs).
//
// Tensors are row-major Float32Arrays:
//   q [batch, heads, queryLength, headDim]
//   k [batch, kvHeads, keyLength, headDim]   (kvHeads = heads unless GQA)
//   v [batch, kvHeads, keyLength, valueDim]
//   output  [batch, heads, queryLength, valueDim]
//   weights [batch, heads, queryLength, keyLength]

/** Which keys each query may see. `true` is `'top-left'`. */
export type CausalAlignment = boolean | 'top-left' | 'bottom-right';

/** How the causal mask is applied (chapter 3 teaches both). */
export type MaskStrategy = 'neg-inf' | 'renormalize';

export interface AttentionOptions {
  batch: number;
  heads: number;
  /**
   * Key/value heads (grouped-query attention; 1 = multi-query). Default:
   * heads. Query head h reads KV head ⌊h / (heads / kvHeads)⌋, as PyTorch's
   * scaled_dot_product_attention(enable_gqa=True); heads must be a multiple.
   */
  kvHeads?: number;
  queryLength: number;
  /** Default: queryLength. */
  keyLength?: number;
  headDim: number;
  /** Default: headDim. */
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
   * Seed of the dropout mask: same seed, same mask (Node, browsers, any
   * thread count). Default: drawn from the runtime's generator
   * (see manualSeed).
   */
  seed?: number | bigint;
  /** Also return the [B, H, Tq, Tk] weights (post-dropout when dropout ran). Default false. */
  returnWeights?: boolean;
  /** Write the output here instead of a new array (length B·H·Tq·Dv). */
  out?: Float32Array;
  /** Write the weights here (needs returnWeights; length B·H·Tq·Tk). */
  weightsOut?: Float32Array;
}

export interface AttentionResult {
  output: Float32Array;
  /** Present when returnWeights was true. */
  weights?: Float32Array;
}

export interface AttentionResultWithWeights {
  output: Float32Array;
  weights: Float32Array;
}

/** A state dict: PyTorch parameter names to values (row-major [out, in] for weights). */
export type StateDict = Record<string, Float32Array>;
/** What loadStateDict accepts: Float32Arrays, flat or nested number arrays (tensor.tolist()). */
export type StateDictInput = Record<string, Float32Array | number[] | number[][]>;

/** nn.Linear(inFeatures, outFeatures, bias = true) with PyTorch's seeded init. */
export interface Linear {
  readonly inFeatures: number;
  readonly outFeatures: number;
  /** [outFeatures, inFeatures], row-major (live: writes change the layer). */
  weight: Float32Array;
  /** [outFeatures], or null without bias. */
  bias: Float32Array | null;
  /** y = x · weightᵀ + bias for x of shape [..., inFeatures]. */
  forward(x: Float32Array, shape: number[]): Float32Array;
  stateDict(prefix?: string): StateDict;
}

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
  maskStrategy?: MaskStrategy;
  /** Dropout seed; default: drawn from the runtime's generator. */
  seed?: number | bigint;
  /** Write the output here (length batch · tokens · outputDim). */
  out?: Float32Array;
  /**
   * The book's ch04/03 KV cache: append this call's keys and values to the
   * module's cache and attend over all of it (positions continue: a prompt,
   * then one token per call, gives one full forward's outputs). Weights and
   * scores then span every cached key. resetCache() starts over.
   */
  useCache?: boolean;
}

export interface ForwardResult {
  output: Float32Array;
  weights?: Float32Array;
  scores?: Float32Array;
  queries?: Float32Array;
  keys?: Float32Array;
  values?: Float32Array;
}

/** Shared by the four modules. Parameters are JS-owned: no dispose needed. */
export interface AttentionModule {
  readonly dIn: number;
  readonly numHeads: number;
  /** Width of the output's last axis. */
  readonly outputDim: number;
  readonly contextLength: number | undefined;
  /** Dropout probability in [0, 1); settable (validated), like nn.Dropout's p. */
  dropout: number;
  /** True after construction, as in PyTorch. */
  training: boolean;
  train(mode?: boolean): this;
  eval(): this;
  /**
   * x: [batch, tokens, dIn] (or [tokens, dIn]) → [batch, tokens, outputDim].
   * Throws a RangeError when tokens > contextLength.
   */
  forward(x: Float32Array, shape: number[]): Float32Array;
  forward(x: Float32Array, shape: number[],
    options: ForwardOptions & ({ returnWeights: true } | { returnScores: true } | { returnQKV: true })): ForwardResult;
  forward(x: Float32Array, shape: number[], options?: ForwardOptions): Float32Array;
  /** Same as forward (like calling a PyTorch module). */
  call(x: Float32Array, shape: number[], options?: ForwardOptions): Float32Array | ForwardResult;
  /** Parameters by PyTorch name (copies). */
  stateDict(): StateDict;
  /** Checks every name and size, reports all mismatches in one error, loads all or nothing. */
  loadStateDict(dict: StateDictInput): this;
  /** Tokens in the KV cache of forward(..., { useCache: true }); 0 without one. */
  readonly cacheLength: number;
  /** Empties the KV cache and frees its wasm memory (the book's reset_cache()). */
  resetCache(): this;
  /** Frees the module's wasm memory (its KV cache); the module stays usable. Idempotent. */
  dispose(): void;
  [Symbol.dispose](): void;
}

/** The book's SelfAttention_v2: no mask, no dropout. */
export interface SelfAttention extends AttentionModule {
  readonly dOut: number;
  W_query: Linear;
  W_key: Linear;
  W_value: Linear;
}
export interface CausalAttention extends SelfAttention {}
export interface MultiHeadAttentionWrapper extends AttentionModule {
  readonly dOut: number;
  readonly heads: CausalAttention[];
}
export interface MultiHeadAttention extends SelfAttention {
  readonly headDim: number;
  outProj: Linear;
}
/**
 * The Llama chapter's GroupedQueryAttention: W_key/W_value [numKVGroups ·
 * headDim, dIn], W_query [dOut, dIn], out_proj [dOut, dOut], no biases,
 * RoPE on queries and keys.
 */
export interface GroupedQueryAttention extends MultiHeadAttention {
  readonly numKVGroups: number;
  /** numHeads / numKVGroups: query heads per key/value head. */
  readonly groupSize: number;
  /** RoPE's theta base. */
  readonly ropeBase: number;
  readonly contextLength: number;
}

export interface GroupedQueryAttentionOptions {
  /** Positions RoPE covers (compute_rope_params' context_length); default 4096. */
  contextLength?: number;
  /** RoPE's theta base; default 10 000 (Llama 3: 500 000). */
  ropeBase?: number;
}

export interface KVCacheOptions {
  batch: number;
  kvHeads: number;
  headDim: number;
  /** Default: headDim. */
  valueDim?: number;
  /** Tokens it can hold per sequence. */
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
  readonly capacity: number;
  readonly batch: number;
  readonly kvHeads: number;
  readonly headDim: number;
  readonly valueDim: number;
  readonly disposed: boolean;
  /**
   * k [batch, kvHeads, t, headDim], v [batch, kvHeads, t, valueDim]; t from
   * k's length. Past capacity: RangeError, nothing changes.
   */
  append(k: Float32Array, v: Float32Array): this;
  /** q [batch, heads, queryLength, headDim] over every cached key; causal defaults to 'bottom-right'. */
  attention(q: Float32Array, options: KVCacheAttentionOptions & { returnWeights: true }): AttentionResultWithWeights;
  attention(q: Float32Array, options: KVCacheAttentionOptions): AttentionResult;
  /** Keeps the first n tokens. */
  truncate(n: number): this;
  /** Empties it (keeps its memory). */
  reset(): this;
  /** Frees its wasm memory; idempotent; later use is a TypeError. */
  dispose(): void;
  [Symbol.dispose](): void;
}

export interface CausalAttentionRuntime {
  /** Which wasm build runs: 'single' or 'threads' (pthreads). */
  readonly build: 'single' | 'threads';
  /** Threads used per call, the calling thread included. */
  readonly threads: number;
  /** Highway's SIMD target; 'WASM' means SIMD128. */
  readonly target: string;
  /** Current size of this runtime's wasm memory, in bytes. */
  readonly memoryBytes: number;

  /**
   * Seeds the runtime's generator (PyTorch's mt19937), used for module
   * initialisation, rand() and default dropout seeds, like torch.manual_seed.
   */
  manualSeed(seed: number | bigint): this;

  /** The default attention scale 1/√headDim, rounded to float32 as the engine uses it. */
  defaultScale(headDim: number): number;

  /** torch.rand: rand([6, 3]) or rand(6, 3), bit-identical to PyTorch on CPU. */
  rand(shape: number[]): Float32Array;
  rand(...shape: number[]): Float32Array;

  Linear: new (inFeatures: number, outFeatures: number, bias?: boolean) => Linear;
  SelfAttention: new (dIn: number, dOut: number, qkvBias?: boolean) => SelfAttention;
  CausalAttention: new (dIn: number, dOut: number, contextLength: number, dropout: number,
    qkvBias?: boolean) => CausalAttention;
  MultiHeadAttentionWrapper: new (dIn: number, dOut: number, contextLength: number,
    dropout: number, numHeads: number, qkvBias?: boolean) => MultiHeadAttentionWrapper;
  MultiHeadAttention: new (dIn: number, dOut: number, contextLength: number, dropout: number,
    numHeads: number, qkvBias?: boolean) => MultiHeadAttention;
  GroupedQueryAttention: new (dIn: number, dOut: number, numHeads: number, numKVGroups: number,
    options?: GroupedQueryAttentionOptions) => GroupedQueryAttention;

  /** A key/value cache resident in wasm memory (dispose it when done). */
  createKVCache(options: KVCacheOptions): KVCache;

  /** Scaled dot-product attention (SIMD kernels). */
  attention(
    q: Float32Array, k: Float32Array, v: Float32Array,
    options: AttentionOptions & { returnWeights: true }): AttentionResultWithWeights;
  attention(
    q: Float32Array, k: Float32Array, v: Float32Array,
    options: AttentionOptions): AttentionResult;

  /** The scalar reference (double accumulation): the kernels' oracle. Slow. */
  attentionReference(
    q: Float32Array, k: Float32Array, v: Float32Array,
    options: AttentionOptions & { returnWeights: true }): AttentionResultWithWeights;
  attentionReference(
    q: Float32Array, k: Float32Array, v: Float32Array,
    options: AttentionOptions): AttentionResult;

  /** Frees wasm scratch memory and stops worker threads. Idempotent. */
  dispose(): void;
  [Symbol.dispose](): void;
}

export interface InitOptions {
  /**
   * 'auto' (default): the pthreads build where it can run (Node; browsers
   * when crossOriginIsolated) and more than one thread is wanted, else the
   * single-threaded build. 'single' / 'threads' force one.
   */
  build?: 'auto' | 'single' | 'threads';
  /** 'auto' (default: the machine's cores, at most 16) or 1..16. */
  threads?: 'auto' | number;
}

/** Loads the engine; calls with the same resolved options share a runtime. */
export function init(options?: InitOptions): Promise<CausalAttentionRuntime>;
