// The engine's call types (engine.mjs): what its callers (the runtime, the
// KV cache, the modules, the optimizers) hand it and get back. Internal, for
// the type check of bindings/ (scripts/typecheck.mjs): not part of the
// package's types. Sizes are element counts; arrays are JS-owned.

import type {
  Activations, AttentionOptions, KVCacheView, Projections, Ptr, RopeScaling, ShapeFields,
} from './embind.mjs';

/** The arrays a resolved call stages next to q, k and v (null: none). */
export interface VisibilityArrays {
  /** [batch] */
  keyLengths: Int32Array | null;
  /** dense, maskShape right-aligned to rank 4 */
  mask: Uint8Array | Float32Array | null;
  /** [heads] */
  sinks: Float32Array | null;
}

/**
 * One attention call, resolved (api/attention-options.mjs's
 * resolveAttentionOutputs, plus the log-sum-exp a direct call may ask for).
 */
export interface AttentionCall {
  shape: ShapeFields;
  options: AttentionOptions;
  outLength: number;
  weightsLength: number;
  returnWeights: boolean;
  out?: Float32Array;
  weightsOut?: Float32Array;
  returnLogSumExp?: boolean;
  rowsLength?: number;
  /** key lengths, mask and sinks, staged after q, k, v */
  arrays?: VisibilityArrays | null;
}

/**
 * An array the engine stages: Float32Array tensors; Int32Array key lengths
 * and Uint8Array boolean masks.
 */
export type Staged = Float32Array | Int32Array | Uint8Array;

export interface AttentionResult {
  output: Float32Array;
  weights?: Float32Array;
  logSumExp?: Float32Array;
  /** options.scoreStage's [B, H, Tq, Tk] */
  scores?: Float32Array;
  seed?: bigint;
}

/** attentionBackward's results; gradSinks with sinks only. */
export interface AttentionGrads {
  gradQ: Float32Array;
  gradK: Float32Array;
  gradV: Float32Array;
  gradSinks?: Float32Array;
}

/**
 * A layer's parameters as the modules hold them: the AttentionLayerParams
 * fields by their Embind names, arrays where the struct has pointers
 * (null: none); left-out sizes take the core's defaults.
 */
export type LayerParamArrays = {
  numHeads: number;
  headDim: number;
  numKVHeads?: number;
  ropeBase?: number;
  ropeScaling?: RopeScaling | null;
  sinks?: Float32Array | null;
  /**
   * The projections' weights stored as one dtype (inference): read where
   * they are instead of the Float32Arrays (which the head hooks still read).
   */
  stored?: ({ dtype: 'bfloat16' | 'int8' } & Partial<Projections<StoredWeights | null>>) | null;
} & Projections<Float32Array | null>;

/**
 * The call options of a layer forward: src/model/layer.h's LayerOptions; a
 * null or left-out cache is the core's default (none); `arrays` the key
 * lengths and mask (staged, their pointers set in `attention`); `headMask`
 * the per-head factors [1 or batch, heads] (staged; its batch follows from
 * its length).
 */
export interface LayerCallOptions {
  batch: number;
  tokens: number;
  attention: AttentionOptions;
  cache?: KVCacheView | null;
  arrays?: VisibilityArrays | null;
  headMask?: Float32Array | null;
}

/**
 * The gradients a layer backward accumulates into, by projection, and the
 * sinks' (absent or null: the module has no such parameter).
 */
export type LayerGradArrays = Partial<Projections<Float32Array | null>> & { sinks?: Float32Array | null };

/**
 * A Linear's weight stored in the heap as bfloat16 or int8 rows
 * (src/gemm/stored_linear.h): its block (ptr for free, base 64-byte
 * aligned), bytes, dtype and its KV_DTYPE code.
 */
export interface StoredWeights {
  readonly ptr: number;
  readonly base: number;
  readonly bytes: number;
  readonly dtype: 'bfloat16' | 'int8';
  readonly code: number;
}

/** LinearBackward's results, new arrays: biasGrad is null when none was passed. */
export interface LinearGradients {
  gradX: Float32Array;
  weightGrad: Float32Array;
  biasGrad: Float32Array | null;
}

export interface LayerForwardCall {
  params: LayerParamArrays;
  x: Float32Array;
  dIn: number;
  options: LayerCallOptions;
  returnWeights?: boolean;
  returnScores?: boolean;
  returnQKV?: boolean;
  out?: Float32Array;
  /** also return `saved`, what the backward reads */
  keep?: boolean;
  /**
   * an earlier `saved` whose arrays `saved` reuses where their lengths fit
   * (a training loop's steps then allocate none)
   */
  savedInto?: Activations<Float32Array>;
}

export interface LayerForwardResult {
  output: Float32Array;
  weights?: Float32Array;
  scores?: Float32Array;
  queries?: Float32Array;
  keys?: Float32Array;
  values?: Float32Array;
  saved?: Activations<Float32Array>;
}

export interface LayerBackwardCall {
  params: LayerParamArrays;
  /** accumulated into, in place (and returned) */
  grads: LayerGradArrays;
  x: Float32Array;
  dIn: number;
  options: LayerCallOptions;
  saved: Activations<Float32Array>;
  gradY: Float32Array;
}

/** One tensor of an AdamW step (src/model/optim.h's AdamWTensor): p, m and v are updated in place. */
export interface AdamWTensor {
  p: Float32Array;
  g: Float32Array;
  m: Float32Array;
  v: Float32Array;
  minusStep: number;
  correction2: number;
}

/**
 * A KV cache's layout: [batch, kvHeads, capacity] stored key rows of
 * headDim values, then as many value rows of valueDim, each row stored as
 * `dtype` says (src/kv/kv_storage.h).
 */
export interface CacheLayout {
  batch: number;
  kvHeads: number;
  headDim: number;
  valueDim: number;
  capacity: number;
  dtype: 'float32' | 'bfloat16' | 'int8';
  /** a window cache's W (the KVCache's bookkeeping, not the block's) */
  window?: number;
}

/** A KV cache's block of its own in the heap: free with freeBlock(). */
export interface CacheBlock {
  /** what malloc returned */
  ptr: Ptr;
  keys: Ptr;
  values: Ptr;
  /** bytes per stored key row (the core's KvRowBytes) */
  keyRow: number;
  /** bytes per stored value row */
  valueRow: number;
  /** the block's size */
  bytes: number;
  layout: Readonly<CacheLayout>;
}
