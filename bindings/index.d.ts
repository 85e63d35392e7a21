// Types for the causal-attention package: dist/index.d.mts (import) and
// dist/index.d.cts (require) are copies of this file. They need no
// @types/node and no lib beyond ES2022 (DOM only for nothing: a Node project
// without DOM types compiles too).
//
// This file holds init and the runtime; the rest is declared by room and
// re-exported here (each a .d.ts that dist/ ships at the same path, imported
// with a .js specifier, which resolves to it from both copies):
//   api/attention.d.ts          attention options and results, the KV cache
//   nn/layers.d.ts              Module, ModuleList, Sequential, Linear, Embedding
//   nn/attention-modules.d.ts   the attention modules and their forward options
//   nn/training.d.ts            crossEntropy's types, the optimizers
//   nn/models.d.ts              the book's ch. 4 layers, GPTModel, Llama3Model
//   remote/handles.d.ts         worker mode: Remote<T> and its parts

import type {
  AttentionComputation, AttentionGradients, AttentionOptions, AttentionResult, AttentionResultWithWeights,
  KVCache, KVCacheOptions,
} from './api/attention.js';
import type {
  CausalAttention, GroupedQueryAttention, GroupedQueryAttentionOptions, MultiHeadAttention,
  MultiHeadAttentionWrapper, SelfAttention,
} from './nn/attention-modules.js';
import type { Embedding, Linear, Module, ModuleList, Sequential, WeightsDtype } from './nn/layers.js';
import type {
  Activation, Dropout, FeedForward, GatedFeedForward, GPTConfig, GPTModel, LayerNorm, Llama3Model, LlamaConfig,
  CompositionScores, CompositionScoresOptions, HeadCircuits, LogitLens, LogitLensOptions, RMSNorm, Safetensors,
  TransformerBlock,
} from './nn/models.js';
import type {
  AdamW, AdamWOptions, CrossEntropyOptions, CrossEntropyResult, Parameters, SGD, SGDOptions,
} from './nn/training.js';
import type { Remote } from './remote/handles.js';

export * from './api/attention.js';
export * from './nn/attention-modules.js';
export * from './nn/layers.js';
export * from './nn/models.js';
export * from './nn/training.js';
export * from './remote/handles.js';

/**
 * What init() resolves to: the engine and the book's module classes.
 *
 * Every argument is checked in JS before any wasm call: a wrong type is a
 * TypeError, a wrong value a RangeError, and the message names the argument
 * and gives the expected and the actual value (`q must have length 24 (batch
 * 1 × heads 2 × queryLength 3 × headDim 4), got length 23`). Unknown option
 * names are rejected (a typo would otherwise be ignored), and so are shapes
 * whose tensors cannot fit a 4 GiB wasm32 heap, before any allocation. The
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
   * The matrix-product microkernels: the GEMM under Linear, the layer and
   * their backward, and the attention tiles' products (forward and
   * backward): 'relaxed-simd' (f32x4.relaxed_madd, where the engine has
   * relaxed SIMD and init's gemmKernel is 'auto') or 'simd128'.
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
    /** nn.Linear(inFeatures, outFeatures, bias = true); options.weightsDtype stores the weight so (Linear.quantize). */
    new (inFeatures: number, outFeatures: number, bias?: boolean, options?: { weightsDtype?: WeightsDtype }): Linear;
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

  /** The book's LayerNorm(embDim) (ch. 4): scale, shift; eps 1e-5. */
  LayerNorm: {
    /** LayerNorm(embDim, { eps = 1e-5 }). */
    new (embDim: number, options?: { eps?: number }): LayerNorm;
  };
  /** torch.nn.RMSNorm(embDim): weight; eps 1e-5. */
  RMSNorm: {
    /** RMSNorm(embDim, { eps = 1e-5 }). */
    new (embDim: number, options?: { eps?: number }): RMSNorm;
  };
  /** The book's GELU (tanh form). */
  GELU: {
    /** GELU(). */
    new (): Activation;
  };
  /** torch.nn.SiLU. */
  SiLU: {
    /** SiLU(). */
    new (): Activation;
  };
  /** nn.Dropout(p = 0.5), drawing from the runtime's generator. */
  Dropout: {
    /** Dropout(p = 0.5). */
    new (p?: number): Dropout;
  };
  /** The book's FeedForward(cfg). */
  FeedForward: {
    /** FeedForward(cfg): Linear(emb, 4·emb), GELU, Linear(4·emb, emb). */
    new (cfg: GPTConfig): FeedForward;
  };
  /** The book's TransformerBlock(cfg). */
  TransformerBlock: {
    /** TransformerBlock(cfg). */
    new (cfg: GPTConfig): TransformerBlock;
  };
  /** The book's GPTModel(cfg): new GPTModel(GPT_CONFIG_124M) has 163,009,536 parameters. */
  GPTModel: {
    /** GPTModel(cfg), cfg as the book's GPT_CONFIG_124M. */
    new (cfg: GPTConfig): GPTModel;
  };
  /** Llama 3.2's FeedForward(cfg): fc1, fc2, fc3. */
  GatedFeedForward: {
    /** FeedForward(cfg) of the Llama 3.2 code. */
    new (cfg: LlamaConfig): GatedFeedForward;
  };
  /** Llama 3.2's TransformerBlock(cfg). */
  Llama3TransformerBlock: {
    /** TransformerBlock(cfg) of the Llama 3.2 code. */
    new (cfg: LlamaConfig): TransformerBlock<GroupedQueryAttention, GatedFeedForward, RMSNorm>;
  };
  /** The book's Llama3Model(cfg) (Llama 3.2 from scratch). */
  Llama3Model: {
    /** Llama3Model(cfg), cfg as the book's LLAMA32_CONFIG. */
    new (cfg: LlamaConfig): Llama3Model;
  };

  /**
   * Q-, K- and V-composition scores (Elhage et al. 2021) from every head of
   * `earlier` into every head of `later` (modules with out_proj, `earlier`'s
   * output width = `later`'s dIn): ‖W_OV^a·W_QK^b‖, ‖W_QK^b·(W_OV^a)ᵀ‖ and
   * ‖W_OV^a·W_OV^b‖ (Frobenius) over the product of the two matrices' norms,
   * each [earlier heads, later heads] row-major. Biases are left out; the
   * norms before the modules too, unless options give their weights
   * (folded into W_query, W_key, W_value as TransformerLens's fold_ln).
   */
  compositionScores(earlier: MultiHeadAttention | GroupedQueryAttention, later: MultiHeadAttention | GroupedQueryAttention,
    options?: CompositionScoresOptions): CompositionScores;

  /**
   * The logit lens of one sequence `idx` [tokens] through a GPTModel or
   * Llama3Model (eval mode, its mode restored after): every layer's
   * residual stream through final_norm and out_head, the top token and its
   * probability per position; with options.targets, each head's direct
   * contribution to the target token's logit (through the final norm as
   * it scales the final residual, TransformerLens's apply_ln_to_stack).
   */
  logitLens(model: GPTModel | Llama3Model, idx: Int32Array | Uint32Array | number[], options?: LogitLensOptions): LogitLens;

  /**
   * Head `head` of layer `layer` (0-based): its QK circuit
   * (E_S·W_QK·E_Sᵀ) and OV circuit (E_S·W_OV·U_Sᵀ) over the list `tokens`
   * (n × n, not vocabulary × vocabulary), E_S and U_S their rows of tok_emb
   * and out_head, the block's norm1 weight and final_norm's weight folded
   * in (TransformerLens's fold_ln; centring, normalisation, biases and
   * RoPE left out); for a GPTModel also the QK circuit over the first n
   * position embeddings.
   */
  headCircuits(model: GPTModel | Llama3Model, layer: number, head: number, tokens: Int32Array | Uint32Array | number[]): HeadCircuits;

  /**
   * Reads a .safetensors file: every tensor's dtype and shape; F32, F16 and
   * BF16 data decoded to float32 (other dtypes: data null). A malformed
   * file (truncated, bad header, offsets outside the file or overlapping,
   * shape × dtype size not the byte range) is a RangeError naming the tensor.
   */
  readSafetensors(bytes: ArrayBuffer | Uint8Array): Safetensors;
  /**
   * A pretrained model from Hugging Face files: `config` (config.json, object
   * or text) and `safetensors` (one file's bytes or several shards').
   * model_type 'gpt2' (gpt2, distilgpt2, gpt2-medium) → GPTModel, c_attn
   * split, Conv1D weights transposed, out_head tied to wte; 'llama'
   * (SmolLM2, Llama 3.2) → Llama3Model, lm_head tied when the file has none.
   * In eval mode. Unknown model types, missing, unexpected and mis-shaped
   * tensors are one error naming them; nothing is half loaded.
   * `weightsDtype` 'int8' or 'bfloat16' stores every Linear's weight so, for
   * inference (model.quantize(); docs/models.md "Weights in int8 and bfloat16").
   */
  loadPretrained(options: {
    config: object | string;
    safetensors: ArrayBuffer | Uint8Array | Safetensors | ReadonlyArray<ArrayBuffer | Uint8Array | Safetensors>;
    weightsDtype?: WeightsDtype;
  }): GPTModel | Llama3Model;

  /** A key/value cache resident in wasm memory (dispose it when done). */
  createKVCache(options: KVCacheOptions): KVCache;

  /**
   * Scaled dot-product attention (SIMD kernels) with weights: q [B, H, Tq, D],
   * k [B, kvHeads, Tk, D], v [B, kvHeads, Tk, Dv] → `{ output, weights }`.
   * Non-finite inputs, one rule on every path (the kernels, the KV cache in
   * every dtype, the references, with or without returnWeights): a query row
   * that sees a NaN or ±∞ score (scale·q·k) gets NaN weights, output and
   * logSumExp; an additive mask's -∞ hides its key, its NaN or +∞ makes the
   * row NaN; NaN/∞ in a value row reaches exactly the outputs of the queries
   * that see that key; other rows are unaffected.
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
   * 'auto' (default: the machine's cores, at most 16; in browsers
   * navigator.hardwareConcurrency, at most 4, since browsers round it and
   * the page shares the cores) or 1..16. Work is
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
   * 'auto' (default): the relaxed-SIMD kernels (the GEMM's and the attention
   * tiles' products) where the engine has relaxed SIMD (Chromium, Node 22+;
   * Node 20 only with --experimental-wasm-relaxed-simd), else SIMD128.
   * 'simd128': always SIMD128, so Linear, attention, the modules and
   * training give the same bits in every engine (the relaxed kernels fuse
   * each multiply-add, which rounds differently).
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
/**
 * `worker` known only at run time. The options may be undefined (as in the
 * overload above), so that a wrapper can pass its own optional options on.
 */
export function init(options?: InitOptions): Promise<CausalAttentionRuntime | RemoteRuntime>;

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
