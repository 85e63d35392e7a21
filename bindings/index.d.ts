// Types for the causal-attention package entry (dist/index.mjs).
//
// Tensors are row-major Float32Arrays:
//   q [batch, heads, queryLength, headDim]
//   k [batch, kvHeads, keyLength, headDim]   (kvHeads defaults to heads)
//   v [batch, kvHeads, keyLength, valueDim]
//   output  [batch, heads, queryLength, valueDim]
//   weights [batch, heads, queryLength, keyLength]
//   logSumExp [batch, heads, queryLength]

/** Which keys each query may see. `true` is `'top-left'`. */
export type CausalAlignment = boolean | 'top-left' | 'bottom-right';

/** How the causal mask is applied (chapter 3 teaches both). */
export type MaskStrategy = 'neg-inf' | 'renormalize';

/** The options that describe one attention computation: the forward's and the backward's. */
export interface AttentionComputation {
  batch: number;
  heads: number;
  /**
   * Key/value heads (default heads); must divide heads. Query head h uses
   * key/value head floor(h / (heads / kvHeads)).
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
}

export interface AttentionOptions extends AttentionComputation {
  /** Also return the [B, H, Tq, Tk] weights (post-dropout when dropout ran). Default false. */
  returnWeights?: boolean;
  /** Also return each row's log-sum-exp [B, H, Tq] (what attentionBackward needs). Default false. */
  returnLogSumExp?: boolean;
  /** Write the output here instead of a new array (length B·H·Tq·Dv). */
  out?: Float32Array;
  /** Write the weights here (needs returnWeights; length B·H·Tq·Tk). */
  weightsOut?: Float32Array;
}

export interface AttentionResult {
  output: Float32Array;
  /** Present when returnWeights was true. */
  weights?: Float32Array;
  /** Present when returnLogSumExp was true; -Infinity for rows that see no key. */
  logSumExp?: Float32Array;
  /** With returnLogSumExp, when dropout ran: the seed of its mask (the backward needs it). */
  seed?: bigint;
}

/** The gradients attentionBackward returns, shaped like q, k and v. */
export interface AttentionGradients {
  gradQ: Float32Array;
  gradK: Float32Array;
  gradV: Float32Array;
}

export interface AttentionResultWithWeights {
  output: Float32Array;
  weights: Float32Array;
}

/** A state dict: PyTorch parameter names to values (row-major [out, in] for weights). */
export type StateDict = Record<string, Float32Array>;
/** What loadStateDict accepts: Float32Arrays, flat or nested number arrays (tensor.tolist()). */
export type StateDictInput = Record<string, Float32Array | number[] | number[][]>;

/** One parameter as an optimizer sees it: live arrays. */
export interface Parameter {
  /** Its state-dict name. */
  readonly name: string;
  readonly data: Float32Array;
  /** Its gradient: null before a backward reaches it and after zeroGrad(). */
  grad: Float32Array | null;
}

/** What every module has (nn.Module): modes, parameters, gradients. */
export interface Module {
  /** True after construction, as in PyTorch. */
  training: boolean;
  /** Training mode: dropout acts, and forward keeps what backward needs. */
  train(mode?: boolean): this;
  eval(): this;
  /** Every parameter, in the state dict's order. */
  parameters(): Parameter[];
  /** The gradients by state-dict name: the live arrays, or null. */
  gradients(): Record<string, Float32Array | null>;
  /** Gradients to null (default, as PyTorch's zero_grad()) or to zeros. */
  zeroGrad(setToNone?: boolean): void;
}

/** nn.Linear(inFeatures, outFeatures, bias = true) with PyTorch's seeded init. */
export interface Linear extends Module {
  readonly inFeatures: number;
  readonly outFeatures: number;
  /** [outFeatures, inFeatures], row-major (live: writes change the layer). */
  weight: Float32Array;
  /** [outFeatures], or null without bias. */
  bias: Float32Array | null;
  /** Gradients, accumulated by backward(); null until then. */
  weightGrad: Float32Array | null;
  biasGrad: Float32Array | null;
  /** y = x · weightᵀ + bias for x of shape [..., inFeatures]. */
  forward(x: Float32Array, shape: number[]): Float32Array;
  /** The last training forward's backward: gradOutput [..., outFeatures] → gradient of x. */
  backward(gradOutput: Float32Array): Float32Array;
  stateDict(prefix?: string): StateDict;
}

/** nn.Embedding(numEmbeddings, embeddingDim), initialised N(0, 1) with PyTorch's normal_ sequence. */
export interface Embedding extends Module {
  readonly numEmbeddings: number;
  readonly embeddingDim: number;
  /** [numEmbeddings, embeddingDim] (live). */
  weight: Float32Array;
  weightGrad: Float32Array | null;
  /** The rows of `indices` (shape default [indices.length]): [...shape, embeddingDim]. */
  forward(indices: Int32Array | Uint32Array | number[], shape?: number[]): Float32Array;
  /** Adds gradOutput's rows to weightGrad at the indices; returns null. */
  backward(gradOutput: Float32Array): null;
  stateDict(prefix?: string): StateDict;
}

/** What an optimizer updates: modules, or parameters ({ data, grad }). */
export type Parameters = Module | Parameter | Array<Module | Parameter | { data: Float32Array; grad: Float32Array | null }>;

export interface SGDOptions {
  /** Default 1e-3. */
  lr?: number;
  momentum?: number;
  dampening?: number;
  weightDecay?: number;
  nesterov?: boolean;
}

export interface AdamWOptions {
  /** Default 1e-3. */
  lr?: number;
  /** Default [0.9, 0.999]. */
  betas?: [number, number];
  /** Default 1e-8. */
  eps?: number;
  /** Decoupled weight decay, default 1e-2. */
  weightDecay?: number;
}

export interface Optimizer {
  readonly params: readonly Parameter[];
  /** One update of every parameter that has a gradient. */
  step(): void;
  zeroGrad(setToNone?: boolean): void;
}

export interface SGD extends Optimizer {
  readonly lr: number;
  readonly momentum: number;
}

export interface AdamW extends Optimizer {
  readonly lr: number;
  readonly betas: readonly [number, number];
  readonly eps: number;
  readonly weightDecay: number;
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
export interface AttentionModule extends Module {
  readonly dIn: number;
  readonly numHeads: number;
  /** Width of the output's last axis. */
  readonly outputDim: number;
  readonly contextLength: number | undefined;
  /** Dropout probability in [0, 1); settable (validated), like nn.Dropout's p. */
  dropout: number;
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
  /**
   * The last training forward's backward: gradOutput [batch, tokens, outputDim] →
   * the gradient of x [batch, tokens, dIn]; parameter gradients accumulate.
   */
  backward(gradOutput: Float32Array): Float32Array;
  /** Parameters by PyTorch name (copies). */
  stateDict(): StateDict;
  /** Checks every name and size, reports all mismatches in one error, loads all or nothing. */
  loadStateDict(dict: StateDictInput): this;
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
  Embedding: new (numEmbeddings: number, embeddingDim: number) => Embedding;
  SelfAttention: new (dIn: number, dOut: number, qkvBias?: boolean) => SelfAttention;
  CausalAttention: new (dIn: number, dOut: number, contextLength: number, dropout: number,
    qkvBias?: boolean) => CausalAttention;
  MultiHeadAttentionWrapper: new (dIn: number, dOut: number, contextLength: number,
    dropout: number, numHeads: number, qkvBias?: boolean) => MultiHeadAttentionWrapper;
  MultiHeadAttention: new (dIn: number, dOut: number, contextLength: number, dropout: number,
    numHeads: number, qkvBias?: boolean) => MultiHeadAttention;

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

  /**
   * The gradients of attention with respect to q, k and v, given the
   * gradient of its output and the forward's output and logSumExp;
   * options are the forward's (its seed when dropout ran).
   */
  attentionBackward(
    gradOutput: Float32Array, q: Float32Array, k: Float32Array, v: Float32Array,
    output: Float32Array, logSumExp: Float32Array, options: AttentionComputation): AttentionGradients;
  /** The same with the scalar reference. Slow. */
  attentionBackwardReference(
    gradOutput: Float32Array, q: Float32Array, k: Float32Array, v: Float32Array,
    output: Float32Array, logSumExp: Float32Array, options: AttentionComputation): AttentionGradients;

  /** torch.randint(low, high, shape): PyTorch's CPU draws, as an Int32Array. */
  randint(low: number, high: number, shape: number[]): Int32Array;

  /**
   * cross_entropy with mean reduction: logits [N, C], targets [N] class
   * indices (ignoreIndex, default -100, counts for nothing).
   */
  crossEntropy(logits: Float32Array, targets: Int32Array | Uint32Array | number[],
    options?: { ignoreIndex?: number }): { loss: number; gradLogits: Float32Array };

  /** Optimizers with PyTorch's defaults and update rules. */
  readonly optim: {
    SGD: new (params: Parameters, options?: SGDOptions) => SGD;
    AdamW: new (params: Parameters, options?: AdamWOptions) => AdamW;
  };

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
