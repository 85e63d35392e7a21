// The package's types, nn part: the Module base, its containers and the
// Linear and Embedding layers (bindings/nn/module.mjs, containers.mjs,
// linear.mjs, embedding.mjs). Re-exported by index.d.ts; types only (see
// api/attention.d.ts for why a .d.ts serves both entries).

/** A state dict: PyTorch parameter names to values (row-major [out, in] for weights). */
export type StateDict = Record<string, Float32Array>;
/** What loadStateDict accepts: Float32Arrays, flat or nested number arrays (tensor.tolist()). */
export type StateDictInput = Record<string, Float32Array | number[] | number[][]>;

/** One parameter as an optimizer sees it (module.parameters()): live arrays. */
export interface Parameter {
  /** Its state-dict name. */
  readonly name: string;
  /** PyTorch's shape of the flat array (e.g. [outFeatures, inFeatures] for a Linear's weight). */
  readonly shape: readonly number[];
  /** The parameter's values (live: writes change the module). */
  readonly data: Float32Array;
  /** Its gradient (live), or null before a backward reaches it and after zeroGrad(). */
  grad: Float32Array | null;
  /** 'float32', or a quantized Linear's weightsDtype for its weight (optimizers refuse it). */
  readonly weightsDtype: WeightsDtype;
}

/**
 * How a Linear stores its weight: 'float32', or for inference 'bfloat16'
 * (round to nearest even) or 'int8' (one float scale per output row and
 * block of 32 inputs), in the wasm heap, as the KV cache stores its rows.
 */
export type WeightsDtype = 'float32' | 'bfloat16' | 'int8';

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
  /**
   * Registers the Float32Array at `this[key]` as a parameter named `name` (default key) of shape
   * `shape` (default [its length]); its gradient lives at `${key}Grad`. From then on `this[key]`
   * takes only a Float32Array of that length (TypeError / RangeError naming it otherwise).
   */
  registerParameter(name: string, key?: string, shape?: readonly number[]): void;
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
  /**
   * Stores the weight of every Linear here and in the submodules as `weightsDtype`, for
   * inference (see Linear.quantize; 'float32' undoes it); embeddings and norms stay
   * float32. RangeError naming weightsDtype for anything else. Returns the module.
   */
  quantize(weightsDtype: WeightsDtype): this;
  /**
   * Frees the wasm memory this module and its submodules hold (stored weights, KV caches);
   * the module stays usable (float32 weights, no cache). Harmless twice.
   */
  dispose(): void;
  /** dispose(), for `using` declarations. */
  [Symbol.dispose](): void;
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
  /** How the weight is stored: 'float32' (default), or 'bfloat16' / 'int8' in the wasm heap after quantize(). */
  readonly weightsDtype: WeightsDtype;
  /** Bytes of wasm memory the stored weight holds (0 for float32). */
  readonly weightsBytes: number;
  /**
   * Stores the weight as `weightsDtype` in the wasm heap, where every forward reads it (no copy
   * per call): 'int8' (1.125 bytes a value: int8 values and a float scale per output row and
   * block of 32 inputs) or 'bfloat16' (2 bytes). The float32 array is let go: `weight` then
   * reads as the stored values widened to float32, made when first read and kept (a forward
   * never makes it). Inference only: backward() and optimizer steps throw a TypeError naming
   * weightsDtype. 'float32' frees the stored weight. Accuracy of a forward against the float64
   * product with the stored values: int8 with fewer than 16 rows (x rounded to int16 per block
   * of 32) within 1e-4 · Σ|xᵢ·wᵢ| + 1e-6, otherwise 1e-5·(1 + |y|) + 1e-7 · Σ|xᵢ·wᵢ|.
   * After changing `weight` in place, call quantize() again. Returns the layer.
   */
  quantize(weightsDtype: WeightsDtype): this;
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
