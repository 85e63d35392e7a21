// The package's types, engine part: one attention computation (ca.attention,
// attentionBackward) and the KV cache, with the well-known disposal symbols
// every disposable here uses. Re-exported by index.d.ts (dist/index.d.mts and
// dist/index.d.cts), which is the package's only types entry; this file is
// CommonJS-format to TypeScript (the package has no "type"), which both
// entries may import, and declares types only.
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
  /**
   * Default 'neg-inf'. 'renormalize': softmax, multiply by the triangle,
   * renormalise rows; with causal it takes none of queryOffset, keyLengths,
   * window, mask, softcap or sinks (a RangeError names them).
   */
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
  /**
   * Where the heads sit. Default 'bhsd': q [B, H, Tq, D], k and v
   * [B, Hkv, Tk, D|Dv], output [B, H, Tq, Dv]. 'bshd': q [B, Tq, H, D], k
   * and v [B, Tk, Hkv, D|Dv], output [B, Tq, H, Dv] — what a projection
   * gives, ONNX's 3-D [B, S, H·D]. The gradients come back in the same
   * layout; weights stay [B, H, Tq, Tk] and logSumExp [B, H, Tq].
   */
  layout?: AttentionLayout;
  /**
   * Integer, may be negative: query i sits at position i + queryOffset (keys
   * at 0..keyLength−1); the causal rule and the window read positions.
   * Default: 0 for causal true / 'top-left' / false, keyLength − queryLength
   * for 'bottom-right' (per batch item keyLengths[b] − queryLength with
   * keyLengths). A causal frontier after a cache of n keys: queryOffset n.
   */
  queryOffset?: number;
  /**
   * Valid keys per batch item: an Int32Array or Array of `batch` integers in
   * [0, keyLength]; keys at or past keyLengths[b] are invisible to item b
   * (padding; ONNX nonpad_kv_seqlen, FlashAttention seqused_k).
   */
  keyLengths?: Int32Array | readonly number[];
  /**
   * A query at position p sees key j only if p − left ≤ j ≤ p + right;
   * non-negative integers, a side left out is unbounded. Applies with or
   * without causal. Mistral's sliding_window W is `{ left: W − 1 }`.
   */
  window?: AttentionWindow;
  /**
   * A Uint8Array (non-zero: may attend) or a Float32Array (added to the
   * scores after scale and softcap: -Infinity hides its key; NaN or +Infinity
   * on a key a row sees makes that row's weights, output and logSumExp NaN,
   * as a softmax over it gives in PyTorch and ONNX), shaped maskShape and
   * broadcast right-aligned to [batch, heads, queryLength, keyLength] as NumPy
   * does: a rank-2 mask is [Tq, Tk], rank 3 [H, Tq, Tk], each size 1 or the
   * full one. Read tile by tile, never expanded.
   */
  mask?: Uint8Array | Float32Array;
  /** The mask's shape, rank 1–4; required with mask, its product the mask's length. */
  maskShape?: readonly number[];
  /**
   * A number > 0: each score s (after scale) becomes softcap · tanh(s / softcap)
   * before a mask is added (Gemma 2: 50).
   */
  softcap?: number;
  /**
   * One logit per head, a Float32Array [heads]: each row's weights become
   * exp(s_j) / (exp(sinks[h]) + Σ exp(s_j)) (gpt-oss; onnxruntime's
   * head_sink), so a row may give less than all of its weight to its keys;
   * logSumExp includes the sink. attentionBackward also returns gradSinks.
   */
  sinks?: Float32Array;
}

/**
 * The tensors' layout: 'bhsd' [batch, heads, seq, dim] (the default) or
 * 'bshd' [batch, seq, heads, dim].
 */
export type AttentionLayout = 'bhsd' | 'bshd';

/** A sliding window around each query's position; a side left out is unbounded. */
export interface AttentionWindow {
  /** Keys at most this many positions before the query. */
  left?: number;
  /** Keys at most this many positions after the query. */
  right?: number;
}

/** Options of {@link CausalAttentionRuntime.attention}: the computation and what to return. */
export interface AttentionOptions extends AttentionComputation {
  /** Also return the [B, H, Tq, Tk] weights (post-dropout when dropout ran). Default false. */
  returnWeights?: boolean;
  /** Also return each row's log-sum-exp [B, H, Tq], what attentionBackward needs. Default false. */
  returnLogSumExp?: boolean;
  /**
   * Also return the scores before the softmax, [B, H, Tq, Tk], at one step of
   * the forward (scale, then softcap, then the masks; see
   * {@link AttentionScoreStage}). Allocates T×T like returnWeights. Not
   * available on a KV cache.
   */
  returnScores?: AttentionScoreStage;
  /** Write the output here instead of a new array (length B·H·Tq·Dv). */
  out?: Float32Array;
  /** Write the weights here (needs returnWeights; length B·H·Tq·Tk). */
  weightsOut?: Float32Array;
  /** The forward's arithmetic (see {@link AttentionPrecision}). Default 'float32'. */
  precision?: AttentionPrecision;
}

/**
 * 'float32', or 'int8' (inference only): keys smoothed by their mean and
 * stored as 13-bit integers, values as 12-bit ones (a scale per 32 values),
 * queries as 15-bit, Q·Kᵀ and P·V in integer dot products (the int8 route's
 * i16 products); outlier key channels (above 6× the median channel's range,
 * up to 8) in float32; the softmax and every option in float32;
 * returnWeights gives its own softmax. Accuracy: largest |output − float64
 * reference| ≤ 1e-3 × the output's largest |value| on N(0, 1) inputs, keys
 * with large per-channel offsets and keys with outlier channels ×50
 * (tested). With training or returnLogSumExp (what the backward needs) it
 * is a RangeError.
 */
export type AttentionPrecision = 'float32' | 'int8';

/**
 * The scores returnScores gives, by the step of the forward that produced
 * them: `'scaled'` scale · q·k for every key; `'softcapped'` softcap ·
 * tanh(scaled / softcap) for every key (the scaled scores without softcap);
 * `'masked'` the softcapped scores plus an additive mask for the keys the row
 * sees and -Infinity for each key it does not (causal, window, keyLengths, a
 * boolean mask): the logits the softmax takes. ONNX Attention's
 * qk_matmul_output modes 0 and 1 are `'softcapped'` (its reference applies
 * softcap before the mask and returns the capped scores for both), mode 2 is
 * `'masked'`, mode 3 the weights.
 */
export type AttentionScoreStage = 'scaled' | 'softcapped' | 'masked';

/** What attention() returns: new arrays, or the `out` / `weightsOut` arrays given. */
export interface AttentionResult {
  /** [batch, heads, queryLength, valueDim]. */
  output: Float32Array;
  /** [batch, heads, queryLength, keyLength]; present when returnWeights was true. */
  weights?: Float32Array;
  /**
   * [batch, heads, queryLength]; present when returnLogSumExp was true
   * (-Infinity: a row that sees no key, whose output and weights are zero).
   */
  logSumExp?: Float32Array;
  /** [batch, heads, queryLength, keyLength]; present when returnScores was given. */
  scores?: Float32Array;
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
  /** [batch, heads, queryLength, keyLength]; present when returnScores was given. */
  scores?: Float32Array;
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
  /** [heads]: present when options.sinks was given. */
  gradSinks?: Float32Array;
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
  /**
   * Tokens it can hold per sequence; a cache of 2 GiB or more (one block of a wasm32 heap) is
   * a RangeError. With `window`: at least W − 1 plus the longest chunk you will append (2·W
   * keeps the moves that make room to one per W tokens or so).
   */
  capacity: number;
  /**
   * W: a window cache, for a sliding window of `{ left: W − 1 }` (Mistral's sliding_window W).
   * Each sequence keeps only what that window can still see: when an append would not fit,
   * the sequence's newest W − 1 tokens move to the front and the older ones are dropped, so
   * appends never run out of room. Its attention applies the window by itself and equals
   * attention over the sequence's whole history with that window. Default: none (every
   * token kept).
   */
  window?: number;
  /**
   * How keys and values are stored. Default 'float32'. 'bfloat16' (half the
   * bytes) rounds each value to nearest even; 'int8' (a quarter, plus a
   * 4-byte scale per 32 values) stores round(x / s) with one symmetric scale
   * s = max |x| / 127 per block of 32 values of a token's KV head.
   * append() rounds; attention() converts tile by tile inside the kernel,
   * never into a float32 copy. `bytes` says what the cache holds; a single
   * cache stays below 2 GiB (the heap's 4 GiB hold several).
   */
  dtype?: KVCacheDtype;
}

/** A KV cache's storage type. */
export type KVCacheDtype = 'float32' | 'bfloat16' | 'int8';

/** Options of {@link KVCache.append}. */
export interface KVCacheAppendOptions {
  /**
   * Distinct sequence indices in [0, batch), in the order of k's and v's first axis: only
   * these sequences grow, by the same t tokens each. Default: all, in order.
   */
  sequences?: Int32Array | readonly number[];
}

/** Options of {@link KVCache.truncate}. */
export interface KVCacheTruncateOptions {
  /** Distinct sequence indices in [0, batch) to cut. Default: all. */
  sequences?: Int32Array | readonly number[];
}

/** Options of {@link KVCache.copySequence}. */
export interface KVCacheCopyOptions {
  /** Tokens to copy, from the start: at most the source's length. Default: all of it. */
  length?: number;
}

/**
 * What a KV cache's attention takes: ca.attention's options minus the sizes the cache fixes.
 * A window cache takes no `window` or `mask` (it applies its own window) and `causal` only
 * as 'bottom-right'.
 */
export type KVCacheAttentionOptions =
  Omit<AttentionOptions, 'batch' | 'kvHeads' | 'keyLength' | 'headDim' | 'valueDim' | 'layout' | 'queryOffset' |
    'keyLengths' | 'returnScores'>;

/**
 * Keys [batch, kvHeads, capacity, headDim] and values resident in wasm
 * memory: append copies rows in once, attention sends only q in. Each of
 * the batch sequences has its own length (a batch of prompts of different
 * lengths decoded together, forks of one prompt).
 */
export interface KVCache {
  /** The longest sequence's length. */
  readonly length: number;
  /**
   * Each sequence's length (a copy): the tokens appended to it, those a window cache dropped
   * included.
   */
  readonly lengths: Int32Array;
  /** W of a window cache, or null. */
  readonly window: number | null;
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
  /** How keys and values are stored. */
  readonly dtype: KVCacheDtype;
  /** Bytes of wasm memory the cache holds (0 after dispose()). */
  readonly bytes: number;
  /** Whether dispose() has run (answers after it, as the layout does). */
  readonly disposed: boolean;
  /**
   * k [batch, kvHeads, t, headDim], v [batch, kvHeads, t, valueDim] (with `sequences`:
   * [sequences.length, ...]); t from k's length, rounded to the cache's dtype. Past
   * capacity (a window cache: a chunk longer than capacity − (W − 1)): RangeError,
   * nothing changes.
   */
  append(k: Float32Array, v: Float32Array, options?: KVCacheAppendOptions): this;
  /**
   * q [batch, heads, queryLength, headDim] over every cached key, with the
   * weights [batch, heads, queryLength, keys]: keys is `length`, or in a window cache
   * the most rows a sequence holds now; causal defaults to 'bottom-right':
   * each sequence's queries are its own newest tokens, and keys past its length are
   * invisible to it (weight 0). A window cache needs each sequence to hold queryLength
   * + W − 1 keys (or all it has had): query at most the tokens of the last append.
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
  /**
   * Keeps the first n tokens of each listed sequence (default: all); n past one's length is
   * a RangeError. A window cache cuts only where it still holds the W − 1 tokens before n
   * (or to 0).
   */
  truncate(n: number, options?: KVCacheTruncateOptions): this;
  /**
   * Sequence `to` becomes a copy of the first `length` tokens of sequence `from` (default:
   * all of them), whatever it held: a prompt's cache forked for parallel sampling or beam
   * search, then each appended to on its own.
   */
  copySequence(from: number, to: number, options?: KVCacheCopyOptions): this;
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
