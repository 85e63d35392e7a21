// The book's chapter-4 layers and models (GPTModel) and its Llama 3.2
// (Llama3Model): configs as written in Python, forward/backward on token
// ids, generation.

import type { KVCacheDtype } from '../api/attention.js';
import type { ForwardOptions, GroupedQueryAttention, HeadPatch, MultiHeadAttention } from './attention-modules.js';
import type { Linear, Module, ModuleList, Sequential, Embedding } from './layers.js';

/** The book's GPT_CONFIG_124M keys (ch. 4), as written in Python. */
export interface GPTConfig {
  /** Tokens in the vocabulary (GPT-2: 50257). */
  vocab_size: number;
  /** Most positions (pos_emb's rows; GPT-2: 1024). */
  context_length: number;
  /** Width of the residual stream (GPT-2 small: 768). */
  emb_dim: number;
  /** Attention heads per block. */
  n_heads: number;
  /** Transformer blocks. */
  n_layers: number;
  /** Dropout of the embeddings, the attention weights and the shortcuts. Default 0. */
  drop_rate?: number;
  /** Biases on the query, key and value projections (GPT-2: true). Default false. */
  qkv_bias?: boolean;
  /** LayerNorm's eps (Hugging Face's layer_norm_epsilon). Default 1e-5. */
  eps?: number;
}

/** The book's Llama 3.2 config keys (LLAMA32_CONFIG). */
export interface LlamaConfig {
  /** Tokens in the vocabulary (Llama 3.2: 128256). */
  vocab_size: number;
  /** Most positions (RoPE's tables). */
  context_length: number;
  /** Width of the residual stream. */
  emb_dim: number;
  /** Query heads per block. */
  n_heads: number;
  /** Transformer blocks. */
  n_layers: number;
  /** The gated feed-forward's width. */
  hidden_dim: number;
  /** Key/value heads (each shared by n_heads / n_kv_groups query heads). */
  n_kv_groups: number;
  /** RoPE's theta base. Default 10 000 (Llama 3: 500 000). */
  rope_base?: number;
  /** Llama 3.1/3.2's frequency adjustment, or null. */
  rope_freq?: RopeFreq | null;
  /** The book's torch dtype: taken and ignored (parameters are float32). */
  dtype?: unknown;
  /** RMSNorm's eps (rms_norm_eps). Default 1e-5. */
  eps?: number;
}

/** A model's forward options: each handed to every layer's attention. */
export interface ModelForwardOptions extends Pick<ForwardOptions,
  'returnWeights' | 'useCache' | 'cacheDtype' | 'keyLengths' | 'mask' | 'maskShape' | 'precision'> {
  /** The attention dropout's seed: layer l draws from seed + l (default: from the runtime's generator). */
  seed?: number | bigint;
  /**
   * A factor per layer and head, [nLayers, heads] or [nLayers, batch,
   * heads] (Hugging Face's head_mask): 0 knocks a head out.
   */
  headMask?: Float32Array;
  /**
   * Also return `residual`: the stream entering each layer and the one
   * leaving the last (nLayers + 1 arrays [batch, tokens, embDim]).
   */
  returnResidual?: boolean;
  /**
   * Also return `headOutputs`: per layer, what each head writes into the
   * stream [batch, heads, tokens, embDim] (ForwardOptions.returnHeadOutputs).
   */
  returnHeadOutputs?: boolean;
  /**
   * Heads whose outputs are replaced (activation patching), per layer
   * (ForwardOptions.patchHeads). With this or returnHeadOutputs every
   * layer computes its output as the bias plus its heads' outputs, so that
   * patching heads with captured values gives the captured run's bits.
   */
  patchHeads?: readonly ModelHeadPatch[];
}

/** One layer's entry of ModelForwardOptions.patchHeads. */
export interface ModelHeadPatch extends HeadPatch {
  /** The layer (0-based). */
  layer: number;
}

/** model.generate's options (the book's generate, ch. 5). */
export interface GenerateOptions {
  /** Tokens to append. */
  maxNewTokens: number;
  /** 0 (default): greedy argmax; else sample from softmax(logits / temperature). */
  temperature?: number;
  /** Sample among the topK largest logits only. */
  topK?: number;
  /** Nucleus sampling: the fewest tokens whose probability reaches topP (default 1). */
  topP?: number;
  /** A row stops at this token (later positions repeat it until every row has stopped). */
  eosId?: number;
  /** Seed of the sampling (default: drawn from the runtime's generator). */
  seed?: number;
  /** A KV cache per layer (default true). */
  useCache?: boolean;
  /** The caches' dtype (default 'float32'). */
  cacheDtype?: KVCacheDtype;
}

/** Llama 3.1/3.2's RoPE frequency adjustment (the book's freq_config). */
export interface RopeFreq {
  /** Frequencies of long wavelengths are divided by it (Llama 3.2: 32). */
  factor: number;
  /** Llama 3.2: 1. */
  low_freq_factor: number;
  /** Llama 3.2: 4. */
  high_freq_factor: number;
  /** Llama 3.2: 8192. */
  original_context_length: number;
}

/** LayerNorm and RMSNorm: over the last axis of size embDim. */
export interface Norm extends Module {
  /** Size of the last axis normalised. */
  readonly embDim: number;
  /** Added to the variance (or mean square) before the square root. */
  readonly eps: number;
  /** Normalises each row of x [..., embDim]; in training mode it keeps x for backward(). */
  forward(x: Float32Array, shape: number[]): Float32Array;
  /** The last training forward's backward: the gradient of x; the parameters' gradients accumulate. */
  backward(gradOutput: Float32Array): Float32Array;
}

/** The book's LayerNorm: parameters `scale` (ones) and `shift` (zeros). */
export interface LayerNorm extends Norm {
  /** [embDim], ones. */
  scale: Float32Array;
  /** [embDim], zeros. */
  shift: Float32Array;
  /** The gradient of scale: null until a backward. */
  scaleGrad: Float32Array | null;
  /** The gradient of shift: null until a backward. */
  shiftGrad: Float32Array | null;
}

/** torch.nn.RMSNorm: parameter `weight` (ones). */
export interface RMSNorm extends Norm {
  /** [embDim], ones. */
  weight: Float32Array;
  /** The gradient of weight: null until a backward. */
  weightGrad: Float32Array | null;
}

/** GELU (the book's tanh form) and SiLU: elementwise, no parameters. */
export interface Activation extends Module {
  /** Elementwise on x (shape, when given, checks its length); in training mode it keeps x for backward(). */
  forward(x: Float32Array, shape?: number[]): Float32Array;
  /** gradOutput times the activation's derivative at the kept x. */
  backward(gradOutput: Float32Array): Float32Array;
}

/** nn.Dropout(p). */
export interface Dropout extends Module {
  /** The probability of zeroing a value, in [0, 1). */
  p: number;
  /** Training mode: zeroes values with probability p and scales the rest by 1 / (1 − p); eval mode: a copy of x. */
  forward(x: Float32Array): Float32Array;
  /** The last forward's mask and scale applied to gradOutput. */
  backward(gradOutput: Float32Array): Float32Array;
}

/** The book's FeedForward: layers = Sequential(Linear, GELU, Linear). */
export interface FeedForward extends Module {
  /** Linear(emb, 4·emb), GELU, Linear(4·emb, emb). */
  readonly layers: Sequential;
  /** x [..., emb_dim] → [..., emb_dim]. */
  forward(x: Float32Array, shape: number[]): Float32Array;
  /** The gradient of x; the Linear layers' gradients accumulate. */
  backward(gradOutput: Float32Array): Float32Array;
}

/** The Llama 3.2 FeedForward: fc3(SiLU(fc1(x)) · fc2(x)). */
export interface GatedFeedForward extends Module {
  /** The gate: Linear(emb, hidden), no bias (Hugging Face's gate_proj). */
  readonly fc1: Linear;
  /** Linear(emb, hidden), no bias (up_proj). */
  readonly fc2: Linear;
  /** Linear(hidden, emb), no bias (down_proj). */
  readonly fc3: Linear;
  /** x [..., emb_dim] → [..., emb_dim]. */
  forward(x: Float32Array, shape: number[]): Float32Array;
  /** The gradient of x; the three layers' gradients accumulate. */
  backward(gradOutput: Float32Array): Float32Array;
}

/** A pre-norm transformer block (the book's TransformerBlock; Llama's). */
export interface TransformerBlock<A = MultiHeadAttention, F = FeedForward, N = LayerNorm> extends Module {
  /** The attention (its options come from forward's). */
  readonly att: A;
  /** The feed-forward. */
  readonly ff: F;
  /** Before the attention. */
  readonly norm1: N;
  /** Before the feed-forward. */
  readonly norm2: N;
  /** The book's drop_shortcut (GPT), or null (Llama). */
  readonly dropShortcut: Dropout | null;
  /** x + att(norm1(x)), then + ff(norm2(·)); with options.returnWeights, the attention's weights too. */
  forward(x: Float32Array, shape: number[], options?: ForwardOptions): Float32Array | BlockResult;
  /** The gradient of x; every parameter's gradient accumulates. */
  backward(gradOutput: Float32Array): Float32Array;
}

/** A block's forward with returnWeights. */
export interface BlockResult {
  /** [batch, tokens, emb_dim]. */
  output: Float32Array;
  /** The attention's weights [batch, heads, tokens, keys]. */
  weights?: Float32Array;
  /** With returnHeadOutputs: each head's output [batch, heads, tokens, emb_dim]. */
  headOutputs?: Float32Array;
  /** With returnHeadOutputs: the stream after the attention's add [batch, tokens, emb_dim]. */
  residualMid?: Float32Array;
}

/** A model's backward with returnAttentionOutputGrads. */
export interface ModelBackwardResult {
  /** Per layer, the gradient of the stream after its attention's add [batch, tokens, emb_dim]. */
  attentionOutputGrads: Float32Array[];
}

/** A model's forward with returnWeights. */
export interface ModelForwardResult {
  /** [batch, tokens, vocab_size]. */
  logits: Float32Array;
  /** One [batch, heads, tokens, keys] array per layer (empty without returnWeights). */
  weights: Float32Array[];
  /** With returnResidual: the stream entering each layer, then the last one's output (nLayers + 1). */
  residual?: Float32Array[];
  /** With returnHeadOutputs: per layer [batch, heads, tokens, embDim]. */
  headOutputs?: Float32Array[];
}

/** What GPTModel and Llama3Model share. */
export interface LanguageModel extends Module {
  /** Tokens in the vocabulary: the logits' last axis. */
  readonly vocabSize: number;
  /** Most positions a sequence may reach (cached and new tokens together). */
  readonly contextLength: number;
  /** Width of the residual stream. */
  readonly embDim: number;
  /** Transformer blocks. */
  readonly nLayers: number;
  /** Attention (query) heads per block. */
  readonly nHeads: number;
  /** Tokens the layers' KV caches hold. */
  readonly cacheLength: number;
  /** The number of parameters (the book's sum of numel): 163,009,536 for GPT_CONFIG_124M. */
  numParameters(): number;
  /** Token ids [batch, tokens] (or [tokens]) → logits [batch, tokens, vocabSize]. */
  forward(idx: Int32Array | Uint32Array | number[], shape?: number[],
    options?: ModelForwardOptions & { returnWeights?: false; returnResidual?: false; returnHeadOutputs?: false }): Float32Array;
  /** With returnWeights, returnResidual or returnHeadOutputs: the logits and what was asked for. */
  forward(idx: Int32Array | Uint32Array | number[], shape: number[] | undefined,
    options: ModelForwardOptions & ({ returnWeights: true } | { returnResidual: true } | { returnHeadOutputs: true })): ModelForwardResult;
  /** Options known only at run time: the logits, or a ModelForwardResult. */
  forward(idx: Int32Array | Uint32Array | number[], shape?: number[], options?: ModelForwardOptions): Float32Array | ModelForwardResult;
  /** gradLogits [batch, tokens, vocabSize] → null; every parameter's gradient accumulates. */
  backward(gradLogits: Float32Array, options?: { returnAttentionOutputGrads?: false }): null;
  /**
   * With returnAttentionOutputGrads: each layer's gradient of the stream after its attention's add
   * [batch, tokens, embDim], the gradient of every head's output there (attribution patching).
   */
  backward(gradLogits: Float32Array, options: { returnAttentionOutputGrads: true }): ModelBackwardResult;
  /** Empties every layer's KV cache. */
  resetCache(): this;
  /** The book's generate: one prompt → Int32Array (prompt and new tokens). */
  generate(idx: Int32Array | Uint32Array | number[], options: GenerateOptions): Int32Array;
  /** A batch of prompts of one length → one Int32Array per row. */
  generate(idx: ReadonlyArray<Int32Array | Uint32Array | number[]>, options: GenerateOptions): Int32Array[];
}

/** The book's GPTModel (ch. 4). */
export interface GPTModel extends LanguageModel {
  /** The config, checked (defaults filled in). */
  readonly cfg: Readonly<Required<GPTConfig>>;
  /** tok_emb [vocab_size, emb_dim]. */
  readonly tokEmb: Embedding;
  /** pos_emb [context_length, emb_dim]. */
  readonly posEmb: Embedding;
  /** drop_emb. */
  readonly dropEmb: Dropout;
  /** trf_blocks. */
  readonly trfBlocks: ModuleList<TransformerBlock>;
  /** final_norm. */
  readonly finalNorm: LayerNorm;
  /** out_head [vocab_size, emb_dim], no bias. */
  readonly outHead: Linear;
}

/** The book's Llama3Model (Llama 3.2 from scratch). */
export interface Llama3Model extends LanguageModel {
  /** The config, checked (defaults filled in). */
  readonly cfg: Readonly<LlamaConfig>;
  /** tok_emb [vocab_size, emb_dim]. */
  readonly tokEmb: Embedding;
  /** trf_blocks. */
  readonly trfBlocks: ModuleList<TransformerBlock<GroupedQueryAttention, GatedFeedForward, RMSNorm>>;
  /** final_norm. */
  readonly finalNorm: RMSNorm;
  /** out_head [vocab_size, emb_dim], no bias. */
  readonly outHead: Linear;
}

/** ca.readSafetensors's result. */
export interface Safetensors {
  /** By name, in the file's order. */
  tensors: Map<string, SafetensorsTensor>;
  /** The header's __metadata__ (strings), or {}. */
  metadata: Record<string, string>;
}

/** One tensor of a .safetensors file: decoded (F32, F16, BF16), or another dtype kept undecoded. */
export type SafetensorsTensor =
  | {
    /** 'F32', 'F16' or 'BF16'. */
    dtype: 'F32' | 'F16' | 'BF16';
    /** Its shape. */
    shape: number[];
    /** The values as float32. */
    data: Float32Array;
  }
  | {
    /** Another dtype ('I64', 'U8', ...). */
    dtype: string;
    /** Its shape. */
    shape: number[];
    /** Not decoded. */
    unsupported: true;
  };

/** ca.compositionScores's result: [earlier heads, later heads] row-major each. */
export interface CompositionScores {
  /** Q-composition: the later head's queries read the earlier head's output. */
  q: Float32Array;
  /** K-composition: the later head's keys read it (an induction head's previous-token head). */
  k: Float32Array;
  /** V-composition: the later head's values read it. */
  v: Float32Array;
}

/** ca.compositionScores's options: the weights of the norms before each module (LayerNorm's scale, RMSNorm's weight). */
export interface CompositionScoresOptions {
  /** [earlier.dIn]: folded into the earlier module's W_query, W_key and W_value columns. */
  earlierScale?: Float32Array;
  /** [later.dIn]: folded into the later module's. */
  laterScale?: Float32Array;
}

/** ca.logitLens's options. */
export interface LogitLensOptions {
  /** [tokens]: the token whose logit each head's direct attribution is of, per position (-100: none). */
  targets?: Int32Array | Uint32Array | number[];
  /** The token indices whose lens is computed (default all; [] for none: only the attribution). */
  positions?: Int32Array | Uint32Array | number[];
}

/** ca.logitLens's result. */
export interface LogitLens {
  /** [nLayers + 1, positions]: the top token per layer (row 0: the embeddings) and position. */
  tokens: Int32Array;
  /** [nLayers + 1, positions]: its probability (softmax over the vocabulary). */
  probabilities: Float32Array;
  /** [nLayers, nHeads, tokens]: each head's direct contribution to the target's logit (0 where it is -100); null without targets. */
  directLogit: Float32Array | null;
}

/** ca.headCircuits's result (the tokens' order on both axes). */
export interface HeadCircuits {
  /** [query token, key token]: the attention score's token part. */
  qk: Float32Array;
  /** [attended token, logit of token]: what attending to a token adds to each token's logit. */
  ov: Float32Array;
  /** [query position, key position] over the first n positions (GPTModel), or null (RoPE). */
  qkPositions: Float32Array | null;
}
