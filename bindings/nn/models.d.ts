// The book's chapter-4 layers and models (GPTModel) and its Llama 3.2
// (Llama3Model): configs as written in Python, forward/backward on token
// ids, generation.

import type { KVCacheDtype } from '../api/attention.js';
import type { ForwardOptions, GroupedQueryAttention, MultiHeadAttention } from './attention-modules.js';
import type { Linear, Module, ModuleList, Sequential, Embedding } from './layers.js';

/** The book's GPT_CONFIG_124M keys (ch. 4), as written in Python. */
export interface GPTConfig {
  vocab_size: number;
  context_length: number;
  emb_dim: number;
  n_heads: number;
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
  vocab_size: number;
  context_length: number;
  emb_dim: number;
  n_heads: number;
  n_layers: number;
  /** The gated feed-forward's width. */
  hidden_dim: number;
  /** Key/value heads (each shared by n_heads / n_kv_groups query heads). */
  n_kv_groups: number;
  /** RoPE's theta base. Default 10 000 (Llama 3: 500 000). */
  rope_base?: number;
  /** Llama 3.1/3.2's frequency adjustment, or null. */
  rope_freq?: { factor: number; low_freq_factor: number; high_freq_factor: number; original_context_length: number } | null;
  /** The book's torch dtype: taken and ignored (parameters are float32). */
  dtype?: unknown;
  /** RMSNorm's eps (rms_norm_eps). Default 1e-5. */
  eps?: number;
}

/** A model's forward options: each handed to every layer's attention. */
export interface ModelForwardOptions extends Pick<ForwardOptions,
  'returnWeights' | 'useCache' | 'cacheDtype' | 'keyLengths' | 'mask' | 'maskShape' | 'seed'> {
  /**
   * A factor per layer and head, [nLayers, heads] or [nLayers, batch,
   * heads] (Hugging Face's head_mask): 0 knocks a head out.
   */
  headMask?: Float32Array;
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

/** LayerNorm and RMSNorm: over the last axis of size embDim. */
export interface Norm extends Module {
  readonly embDim: number;
  readonly eps: number;
  forward(x: Float32Array, shape: number[]): Float32Array;
  backward(gradOutput: Float32Array): Float32Array;
}

/** The book's LayerNorm: parameters `scale` (ones) and `shift` (zeros). */
export interface LayerNorm extends Norm {
  scale: Float32Array;
  shift: Float32Array;
  scaleGrad: Float32Array | null;
  shiftGrad: Float32Array | null;
}

/** torch.nn.RMSNorm: parameter `weight` (ones). */
export interface RMSNorm extends Norm {
  weight: Float32Array;
  weightGrad: Float32Array | null;
}

/** GELU (the book's tanh form) and SiLU: elementwise, no parameters. */
export interface Activation extends Module {
  forward(x: Float32Array, shape?: number[]): Float32Array;
  backward(gradOutput: Float32Array): Float32Array;
}

/** nn.Dropout(p). */
export interface Dropout extends Module {
  p: number;
  forward(x: Float32Array): Float32Array;
  backward(gradOutput: Float32Array): Float32Array;
}

/** The book's FeedForward: layers = Sequential(Linear, GELU, Linear). */
export interface FeedForward extends Module {
  readonly layers: Sequential;
  forward(x: Float32Array, shape: number[]): Float32Array;
  backward(gradOutput: Float32Array): Float32Array;
}

/** The Llama 3.2 FeedForward: fc3(SiLU(fc1(x)) · fc2(x)). */
export interface GatedFeedForward extends Module {
  readonly fc1: Linear;
  readonly fc2: Linear;
  readonly fc3: Linear;
  forward(x: Float32Array, shape: number[]): Float32Array;
  backward(gradOutput: Float32Array): Float32Array;
}

/** A pre-norm transformer block (the book's TransformerBlock; Llama's). */
export interface TransformerBlock<A = MultiHeadAttention, F = FeedForward, N = LayerNorm> extends Module {
  readonly att: A;
  readonly ff: F;
  readonly norm1: N;
  readonly norm2: N;
  readonly dropShortcut: Dropout | null;
  forward(x: Float32Array, shape: number[], options?: ForwardOptions): Float32Array | { output: Float32Array; weights?: Float32Array };
  backward(gradOutput: Float32Array): Float32Array;
}

/** What GPTModel and Llama3Model share. */
export interface LanguageModel extends Module {
  readonly vocabSize: number;
  readonly contextLength: number;
  readonly embDim: number;
  readonly nLayers: number;
  readonly nHeads: number;
  /** Tokens the layers' KV caches hold. */
  readonly cacheLength: number;
  /** The number of parameters (the book's sum of numel): 163,009,536 for GPT_CONFIG_124M. */
  numParameters(): number;
  /** Token ids [batch, tokens] (or [tokens]) → logits [batch, tokens, vocabSize]. */
  forward(idx: Int32Array | Uint32Array | number[], shape?: number[],
    options?: ModelForwardOptions & { returnWeights?: false }): Float32Array;
  /** With returnWeights: the logits and each layer's weights [batch, heads, tokens, keys]. */
  forward(idx: Int32Array | Uint32Array | number[], shape: number[] | undefined,
    options: ModelForwardOptions & { returnWeights: true }): { logits: Float32Array; weights: Float32Array[] };
  /** gradLogits [batch, tokens, vocabSize] → null; every parameter's gradient accumulates. */
  backward(gradLogits: Float32Array): null;
  /** Empties every layer's KV cache. */
  resetCache(): this;
  /** The book's generate: one prompt → Int32Array (prompt and new tokens). */
  generate(idx: Int32Array | Uint32Array | number[], options: GenerateOptions): Int32Array;
  /** A batch of prompts of one length → one Int32Array per row. */
  generate(idx: ReadonlyArray<Int32Array | Uint32Array | number[]>, options: GenerateOptions): Int32Array[];
}

/** The book's GPTModel (ch. 4). */
export interface GPTModel extends LanguageModel {
  readonly cfg: Readonly<Required<GPTConfig>>;
  readonly tokEmb: Embedding;
  readonly posEmb: Embedding;
  readonly dropEmb: Dropout;
  readonly trfBlocks: ModuleList<TransformerBlock>;
  readonly finalNorm: LayerNorm;
  readonly outHead: Linear;
}

/** The book's Llama3Model (Llama 3.2 from scratch). */
export interface Llama3Model extends LanguageModel {
  readonly cfg: Readonly<LlamaConfig>;
  readonly tokEmb: Embedding;
  readonly trfBlocks: ModuleList<TransformerBlock<GroupedQueryAttention, GatedFeedForward, RMSNorm>>;
  readonly finalNorm: RMSNorm;
  readonly outHead: Linear;
}

/** ca.readSafetensors's result. */
export interface Safetensors {
  /** By name, in the file's order; data null for a dtype other than F32, F16, BF16. */
  tensors: Map<string, { dtype: string; shape: number[]; data: Float32Array | null }>;
  /** The header's __metadata__ (strings), or {}. */
  metadata: Record<string, string>;
}
