// The package's types, nn part: the book's attention modules and the Llama
// chapter's GroupedQueryAttention (bindings/nn/attention.mjs,
// grouped-query-attention.mjs). Re-exported by index.d.ts; types only.

import type { AttentionPrecision, KVCacheDtype, MaskStrategy } from '../api/attention.js';
import type { Linear, Module } from './layers.js';

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
  /**
   * The attention's arithmetic (AttentionPrecision): 'int8' in eval() mode
   * only (a train-mode forward keeps what backward() needs: RangeError).
   */
  precision?: AttentionPrecision;
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
   * With GroupedQueryAttention's slidingWindow W the cache is a window cache
   * (KVCacheOptions.window): it keeps only what the window still sees, so a
   * generation of any length (up to contextLength positions) holds O(W)
   * memory; keyLengths and mask are then refused (RangeError).
   */
  useCache?: boolean;
  /**
   * How the module's cache stores keys and values (see KVCacheOptions.dtype):
   * 'float32' (default), 'bfloat16' or 'int8'. Fixed when the cache is
   * created; another dtype before resetCache() is a RangeError. returnScores
   * needs 'float32'.
   */
  cacheDtype?: KVCacheDtype;
  /**
   * A padded batch: the valid tokens of each sequence (an Int32Array or
   * Array of `batch` integers in [0, keys]); keys at or past keyLengths[b]
   * are invisible to sequence b (its padded query rows still come out, from
   * the keys they see). Keys are this call's tokens, after the cached ones
   * with useCache. See {@link AttentionComputation.keyLengths}.
   */
  keyLengths?: Int32Array | readonly number[];
  /**
   * A mask over [batch, heads, tokens, keys] (broadcast right-aligned from
   * maskShape): a Uint8Array (non-zero: may attend) or a Float32Array (added
   * to the scores), e.g. a document mask for packed sequences. See
   * {@link AttentionComputation.mask}.
   */
  mask?: Uint8Array | Float32Array;
  /** The mask's shape, rank 1–4; required with mask. */
  maskShape?: readonly number[];
  /**
   * Hugging Face's `head_mask`: a factor per head ([heads], the same for
   * every sequence) or per sequence and head ([batch, heads]) multiplying
   * each head's attention output before the heads are merged and
   * projected; 0 knocks a head out (ablation), 1 leaves it. The backward
   * scales each head's gradients by the same factor (the mask itself gets
   * none). weights and scores stay the heads' own. Finite values only.
   */
  headMask?: Float32Array;
  /**
   * Also return `headOutputs` [batch, heads, tokens, outputDim]: what each
   * head writes into the residual stream — its context vectors (times its
   * headMask factor) through its columns of out_proj (the bias belongs to
   * no head). The output is then computed as the bias plus the heads'
   * outputs in head order (within 1e-5 of the fused forward's), as with
   * patchHeads.
   * Modules with out_proj only (MultiHeadAttention, GroupedQueryAttention);
   * not with useCache.
   */
  returnHeadOutputs?: boolean;
  /**
   * Replace chosen heads' outputs (activation patching): `values`
   * [batch, heads.length, tokens, outputDim] in the order of `heads`, at
   * every token or at `positions` only. The output is then computed as the
   * bias plus each head's output or patch, in head order, so that patching
   * with values a returnHeadOutputs forward captured gives the same bits
   * whichever heads are patched. A backward after it treats the patched
   * heads' outputs as given: no gradient reaches their projections.
   * Modules with out_proj only; not with useCache.
   */
  patchHeads?: HeadPatch;
}

/** options.patchHeads. */
export interface HeadPatch {
  /** Head indices (0-based), each once. */
  heads: readonly number[] | Int32Array;
  /** [batch, heads.length, tokens, outputDim]: the heads' replacement outputs. */
  values: Float32Array;
  /** Token indices to patch (default: all). */
  positions?: readonly number[] | Int32Array;
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
  /** [batch, heads, tokens, outputDim]: each head's output; present with returnHeadOutputs. */
  headOutputs?: Float32Array;
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

/** forward(..., { returnHeadOutputs: true }). */
export interface ForwardResultWithHeadOutputs extends ForwardResult {
  /** [batch, heads, tokens, outputDim]: what each head writes into the output. */
  headOutputs: Float32Array;
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
    options?: ForwardOptions & { returnWeights?: false; returnScores?: false; returnQKV?: false; returnHeadOutputs?: false }): Float32Array;
  /** With returnWeights: `{ output, weights }` (and scores, QKV when asked). */
  forward(x: Float32Array, shape: number[],
    options: ForwardOptions & { returnWeights: true }): ForwardResultWithWeights;
  /** With returnScores: `{ output, scores }` (and weights, QKV when asked). */
  forward(x: Float32Array, shape: number[],
    options: ForwardOptions & { returnScores: true }): ForwardResultWithScores;
  /** With returnQKV: `{ output, queries, keys, values }` (and weights, scores when asked). */
  forward(x: Float32Array, shape: number[],
    options: ForwardOptions & { returnQKV: true }): ForwardResultWithQKV;
  /** With returnHeadOutputs: `{ output, headOutputs }` (and the others when asked). */
  forward(x: Float32Array, shape: number[],
    options: ForwardOptions & { returnHeadOutputs: true }): ForwardResultWithHeadOutputs;
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
  /**
   * Tokens through the KV cache of forward(..., { useCache: true }) (the next position; a
   * window cache holds fewer); 0 without one.
   */
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
  readonly W_query: Linear;
  /** The key projection. */
  readonly W_key: Linear;
  /** The value projection. */
  readonly W_value: Linear;
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
  readonly outProj: Linear;
  /**
   * Head `head`'s QK circuit W_QK [dIn, dIn]: the score of query x_i and key
   * x_j is x_i · W_QK · x_jᵀ (before 1/√headDim; biases and RoPE left out).
   */
  qkCircuit(head: number): Float32Array;
  /**
   * Head `head`'s OV circuit W_OV [dIn, dOut]: what it writes into the output
   * for a key x_j it attends to fully, x_j · W_OV (out_proj's bias left out).
   */
  ovCircuit(head: number): Float32Array;
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
  /** Tokens each query sees, itself included (options.slidingWindow), or null: every earlier one. */
  readonly slidingWindow: number | null;
  /** The attention logits' softcap (options.softcap), or null. */
  readonly softcap: number | null;
  /**
   * With options.sinks: the learned sink logit of each head [numHeads]
   * (state-dict name `sinks`, zeros at construction; trained by backward,
   * its gradient in sinksGrad), else null.
   */
  sinks: Float32Array | null;
  /** The gradient of sinks (null before the first backward, or without sinks). */
  sinksGrad: Float32Array | null;
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
  /**
   * A sliding window of W tokens as Hugging Face configs mean sliding_window:
   * each token sees itself and the W − 1 before it (Mistral 7B v0.1: 4096;
   * Gemma 2: 4096 and Gemma 3: 512 on their local layers; gpt-oss: 128 on
   * alternate layers), with useCache too (its cache then holds O(W) tokens). An integer >= 1;
   * default none.
   */
  slidingWindow?: number;
  /** Softcap of the attention logits, a number > 0 (Gemma 2: 50); default none. */
  softcap?: number;
  /**
   * true: a learned sink logit per head (gpt-oss's self_attn.sinks), the
   * parameter `sinks` [numHeads], zeros at construction. Default false.
   */
  sinks?: boolean;
}
