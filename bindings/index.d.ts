// Types for the causal-attention package entry (dist/index.mjs).
//
// Tensors are row-major Float32Arrays:
//   q [batch, heads, queryLength, headDim]
//   k [batch, heads, keyLength, headDim]
//   v [batch, heads, keyLength, valueDim]
//   output  [batch, heads, queryLength, valueDim]
//   weights [batch, heads, queryLength, keyLength]

/** Which keys each query may see. `true` is `'top-left'`. */
export type CausalAlignment = boolean | 'top-left' | 'bottom-right';

/** How the causal mask is applied (chapter 3 teaches both). */
export type MaskStrategy = 'neg-inf' | 'renormalize';

export interface AttentionOptions {
  batch: number;
  heads: number;
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

export interface CausalAttentionRuntime {
  /** Which wasm build runs: 'single' or 'threads' (pthreads). */
  readonly build: 'single' | 'threads';
  /** Threads used per call, the calling thread included. */
  readonly threads: number;
  /** Highway's SIMD target; 'WASM' means SIMD128. */
  readonly target: string;
  /** Current size of this runtime's wasm memory, in bytes. */
  readonly memoryBytes: number;

  /** Seeds the generator behind default dropout seeds (like torch.manual_seed). */
  manualSeed(seed: number | bigint): this;

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
