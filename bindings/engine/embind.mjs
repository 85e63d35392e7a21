// The JS side of bindings/embind.cc: the module's functions and value
// objects as types, and Structs, the one place the value objects are built.
// A field a caller may leave out takes the core's own default (embind.cc's
// structDefaults(): the default-constructed structs), so no C++ default is
// restated here. Each struct is an object literal with its fields in
// registration order: a generic builder (loops over field names) is slower
// to build, and Embind reads its objects more slowly, on every small call.

/**
 * A byte offset into the wasm heap; 0 stands for nullptr.
 * @typedef {number} Ptr
 */

/**
 * src/attention/attention.h's AttentionShape, as embind.cc registers it.
 * @typedef {object} AttentionShape
 * @property {number} batch
 * @property {number} heads
 * @property {number} queryLength
 * @property {number} keyLength
 * @property {number} headDim
 * @property {number} valueDim
 * @property {number} kvHeads
 * @property {number} kvCapacity
 * @property {number} kvDtype src/kv/kv_storage.h's KvDtype (codes.mjs KV_DTYPE)
 */

/**
 * An AttentionShape as the JS resolves it; left out: the core's default.
 * @typedef {Omit<AttentionShape, 'kvHeads' | 'kvCapacity' | 'kvDtype'> &
 *   { kvHeads?: number, kvCapacity?: number, kvDtype?: number }} ShapeFields
 */

/**
 * src/attention/attention.h's AttentionOptions: enums as their values, the scale NaN
 * for the default, the uint64 seed as two uint32 halves.
 * @typedef {object} AttentionOptions
 * @property {number} causal
 * @property {number} maskStrategy
 * @property {number} scale
 * @property {number} dropout
 * @property {boolean} training
 * @property {number} seedLo
 * @property {number} seedHi
 * @property {number} layout Layout: kBHSD 0, kBSHD 1
 * @property {number} queryOffset NaN: the default for the causal alignment
 * @property {Ptr} keyLengths int32 [batch]; 0: none
 * @property {number} windowLeft -1: unbounded
 * @property {number} windowRight -1: unbounded
 * @property {number} softcap 0: none
 * @property {Ptr} sinks float [heads]; 0: none
 * @property {number} maskKind MaskKind: kNone 0, kBoolean 1 (uint8), kAdditive 2 (float32)
 * @property {Ptr} mask dense [maskBatch, maskHeads, maskQueries, maskKeys]
 * @property {number} maskBatch 1 (broadcast) or batch
 * @property {number} maskHeads 1 or heads
 * @property {number} maskQueries 1 or queryLength
 * @property {number} maskKeys 1 or keyLength
 * @property {number} scoreStage ScoreStage: kNone 0, kScaled 1, kSoftcapped 2, kMasked 3
 * @property {Ptr} scores float [batch, heads, queryLength, keyLength]; 0: none
 * @property {number} precision Precision: kFloat32 0, kInt8 1
 */

/**
 * src/model/rope.h's RopeScaling.
 * @typedef {object} RopeScaling
 * @property {number} factor
 * @property {number} lowFreqFactor
 * @property {number} highFreqFactor
 * @property {number} originalContextLength
 */

/**
 * src/model/layer.h's KVCacheView.
 * @typedef {object} KVCacheView
 * @property {Ptr} keys
 * @property {Ptr} values
 * @property {number} capacity
 * @property {number} length
 * @property {number} start
 * @property {number} dtype src/kv/kv_storage.h's KvDtype (codes.mjs KV_DTYPE)
 */

/**
 * src/model/layer.h's LayerOptions.
 * @typedef {object} LayerOptions
 * @property {number} batch
 * @property {number} tokens
 * @property {AttentionOptions} attention
 * @property {KVCacheView} cache
 * @property {Ptr} headMask float [headMaskBatch, heads]; 0: none
 * @property {number} headMaskBatch 1 (every sequence) or batch
 */

/**
 * The eight projections of src/model/layer.h's AttentionLayerParams and
 * AttentionLayerGrads, by the field names both share.
 * @template T
 * @typedef {object} Projections
 * @property {T} wQuery
 * @property {T} bQuery
 * @property {T} wKey
 * @property {T} bKey
 * @property {T} wValue
 * @property {T} bValue
 * @property {T} wOut
 * @property {T} bOut
 */

/**
 * What a layer backward reads of its forward (src/model/layer.h's LayerActivations).
 * @template T
 * @typedef {object} Activations
 * @property {T} queries
 * @property {T} keys
 * @property {T} values
 * @property {T} context
 * @property {T} logSumExp
 */

/**
 * src/model/layer.h's AttentionLayerParams, sizes and pointers.
 * @typedef {{ dIn: number, numHeads: number, headDim: number, numKVHeads: number, ropeBase: number,
 *   ropeScaling: RopeScaling, sinks: Ptr, weightsDtype: number } & Projections<Ptr>} AttentionLayerParams
 */

/**
 * src/model/layer.h's LayerOutputs.
 * @typedef {{ y: Ptr, weights: Ptr, scores: Ptr } & Activations<Ptr>} LayerOutputs
 */

/**
 * Every value object embind.cc registers, default-constructed (its
 * structDefaults()).
 * @typedef {object} StructDefaults
 * @property {AttentionShape} AttentionShape
 * @property {AttentionOptions} AttentionOptions
 * @property {RopeScaling} RopeScaling
 * @property {AttentionLayerParams} AttentionLayerParams
 * @property {KVCacheView} KVCacheView
 * @property {LayerOptions} LayerOptions
 * @property {LayerOutputs} LayerOutputs
 * @property {Activations<Ptr>} LayerActivations
 * @property {LayerGrads} AttentionLayerGrads
 */

/**
 * src/model/layer.h's AttentionLayerGrads: the projections' gradients and the sinks'.
 * @typedef {Projections<Ptr> & { sinks: Ptr }} LayerGrads
 */

/**
 * @callback AttentionFn
 * @param {AttentionShape} shape
 * @param {AttentionOptions} options
 * @param {Ptr} q
 * @param {Ptr} k
 * @param {Ptr} v
 * @param {Ptr} out
 * @param {Ptr} weights
 * @param {Ptr} logSumExp
 * @returns {number} a Status
 */

/**
 * @callback AttentionBackwardFn
 * @param {AttentionShape} shape
 * @param {AttentionOptions} options
 * @param {Ptr} gradOutput
 * @param {Ptr} q
 * @param {Ptr} k
 * @param {Ptr} v
 * @param {Ptr} output
 * @param {Ptr} logSumExp
 * @param {Ptr} gradQ
 * @param {Ptr} gradK
 * @param {Ptr} gradV
 * @param {Ptr} gradSinks [heads] with options.sinks, else 0
 * @returns {number} a Status
 */

/**
 * The loaded wasm module: emcc's exports and embind.cc's functions.
 * @typedef {object} EmbindModule
 * @property {Float32Array} HEAPF32
 * @property {WebAssembly.Memory} [wasmMemory] exported by the pthreads build only
 * @property {(bytes: number) => Ptr} _malloc
 * @property {(ptr: Ptr) => void} _free
 * @property {AttentionFn} attention
 * @property {AttentionFn} attentionReference
 * @property {AttentionBackwardFn} attentionBackward
 * @property {AttentionBackwardFn} attentionBackwardReference
 * @property {(params: AttentionLayerParams, options: LayerOptions, x: Ptr, outputs: LayerOutputs) => number} layerForward
 * @property {(dtype: number, src: Ptr, rows: number, width: number, dst: Ptr) => void} storeKvRows
 *   src/kv/kv_storage.h's StoreKvRows
 * @property {(dtype: number, width: number) => number} kvRowBytes  src/kv/kv_storage.h's KvRowBytes
 * @property {(params: AttentionLayerParams, options: LayerOptions, x: Ptr, saved: Activations<Ptr>, gradY: Ptr,
 *   gradX: Ptr, grads: Projections<Ptr>) => number} layerBackward
 * @property {(x: Ptr, rows: number, inF: number, outF: number, w: Ptr, b: Ptr, y: Ptr) => number} linear
 * @property {(dtype: number, outF: number, inF: number) => number} storedWeightsBytes
 *   src/gemm/stored_linear.h's StoredWeightsBytes
 * @property {(dtype: number, w: Ptr, outF: number, inF: number, dst: Ptr) => number} storeWeights
 * @property {(dtype: number, src: Ptr, outF: number, inF: number, dst: Ptr) => void} loadStoredWeights
 *   each stored row's values as floats
 * @property {(x: Ptr, rows: number, inF: number, outF: number, dtype: number, w: Ptr, b: Ptr, y: Ptr) => number}
 *   storedLinear
 * @property {(x: Ptr, rows: number, inF: number, outF: number, w: Ptr, gradY: Ptr, gradX: Ptr, gradW: Ptr,
 *   gradB: Ptr) => number} linearBackward
 * @property {(decay: number, oneMinusBeta1: number, beta2: number, oneMinusBeta2: number, eps: number,
 *   count: number, table: Ptr) => void} adamWUpdate  src/model/optim.h's AdamWUpdate (a table of 7 words per tensor)
 * @property {(x: Ptr, rows: number, dim: number, scale: Ptr, shift: Ptr, eps: number, y: Ptr, mean: Ptr,
 *   rstd: Ptr) => number} layerNorm  src/model/norm.h's LayerNorm
 * @property {(x: Ptr, rows: number, dim: number, scale: Ptr, mean: Ptr, rstd: Ptr, gradY: Ptr, gradX: Ptr,
 *   gradScale: Ptr, gradShift: Ptr) => number} layerNormBackward
 * @property {(x: Ptr, rows: number, dim: number, weight: Ptr, eps: number, y: Ptr, rstd: Ptr) => number} rmsNorm
 * @property {(x: Ptr, rows: number, dim: number, weight: Ptr, rstd: Ptr, gradY: Ptr, gradX: Ptr,
 *   gradWeight: Ptr) => number} rmsNormBackward
 * @property {(kind: number, a: Ptr, b: Ptr, n: number, y: Ptr) => number} activation
 *   GELU (kind 0), SiLU (1), SiLU(a) · b (2)
 * @property {(kind: number, a: Ptr, b: Ptr, gradY: Ptr, n: number, gradA: Ptr, gradB: Ptr) => number}
 *   activationBackward
 * @property {(headDim: number) => number} defaultScale
 * @property {() => StructDefaults} structDefaults
 * @property {(n: number) => void} setNumThreads
 * @property {() => number} numThreads
 * @property {() => string} targetName
 * @property {(allow: boolean) => void} allowRelaxedGemmKernel
 * @property {() => string} gemmKernelName
 * @property {(status: number) => string} statusMessage
 * @property {() => string} [statusDetail] the argument the last refused call named ('' when none)
 * @property {{ unusedWorkers: Array<{ unref?(): void, terminate(): void }>,
 *   runningWorkers: Array<{ unref?(): void, terminate(): void }>, terminateAllThreads(): void }} [PThread]
 *   emcc's pthread pool (pthreads build only)
 */

/** The projections' Embind field names, in AttentionLayerParams' order. */
export const PROJECTIONS = /** @type {const} */ (['wQuery', 'bQuery', 'wKey', 'bKey', 'wValue', 'bValue', 'wOut', 'bOut']);
/** LayerActivations' field names: what a training forward keeps. */
export const ACTIVATIONS = /** @type {const} */ (['queries', 'keys', 'values', 'context', 'logSumExp']);

/**
 * The value objects that cross into wasm, built from validated values and
 * staged pointers over one module's defaults.
 */
export class Structs {
  /** @type {StructDefaults} */
  #defaults;

  /** @param {StructDefaults} defaults */
  constructor(defaults) {
    this.#defaults = defaults;
  }

  /**
   * @param {ShapeFields} s
   * @returns {AttentionShape}
   */
  attentionShape(s) {
    const d = this.#defaults.AttentionShape;
    return {
      batch: s.batch, heads: s.heads, queryLength: s.queryLength, keyLength: s.keyLength, headDim: s.headDim,
      valueDim: s.valueDim, kvHeads: s.kvHeads ?? d.kvHeads, kvCapacity: s.kvCapacity ?? d.kvCapacity,
      kvDtype: s.kvDtype ?? d.kvDtype,
    };
  }

  /**
   * The head mask's pointer (0: none) comes from the engine, which stages it.
   * @param {{ batch: number, tokens: number, attention: AttentionOptions, cache?: KVCacheView | null,
   *   headMaskBatch?: number }} o
   * @returns {LayerOptions}
   */
  layerOptions(o) {
    const d = this.#defaults.LayerOptions;
    return {
      batch: o.batch, tokens: o.tokens, attention: o.attention, cache: o.cache ?? this.#defaults.KVCacheView,
      headMask: 0, headMaskBatch: o.headMaskBatch ?? d.headMaskBatch,
    };
  }

  /**
   * @param {Ptr} keys
   * @param {Ptr} values
   * @param {number} capacity
   * @param {number} length
   * @param {number} start
   * @param {number} dtype
   * @returns {KVCacheView}
   */
  cacheView(keys, values, capacity, length, start, dtype) {
    return { keys, values, capacity, length, start, dtype };
  }

  /**
   * The sizes from a layer's params (left-out ones: the core's defaults),
   * then the eight projections from `next`, in PROJECTIONS' order.
   * @param {{ numHeads: number, headDim: number, numKVHeads?: number, ropeBase?: number,
   *   ropeScaling?: RopeScaling | null }} p
   * @param {number} dIn
   * @param {() => Ptr} next
   * @returns {AttentionLayerParams}
   */
  layerParams(p, dIn, next) {
    const d = this.#defaults.AttentionLayerParams;
    return {
      dIn, numHeads: p.numHeads, headDim: p.headDim, numKVHeads: p.numKVHeads ?? d.numKVHeads,
      ropeBase: p.ropeBase ?? d.ropeBase, ropeScaling: p.ropeScaling ?? d.ropeScaling,
      wQuery: next(), bQuery: next(), wKey: next(), bKey: next(),
      wValue: next(), bValue: next(), wOut: next(), bOut: next(),
      // The sinks: the engine sets the pointer when there are some; it
      // sets stored weights' dtype too.
      sinks: 0, weightsDtype: d.weightsDtype,
    };
  }

  /**
   * AttentionLayerGrads from `next`, in PROJECTIONS' order (and the sinks'
   * gradient, none here: the engine sets it).
   * @param {() => Ptr} next
   * @returns {LayerGrads}
   */
  layerGrads(next) {
    return {
      wQuery: next(), bQuery: next(), wKey: next(), bKey: next(),
      wValue: next(), bValue: next(), wOut: next(), bOut: next(),
      sinks: 0,
    };
  }

  /**
   * LayerOutputs from `next`: y, weights, scores, then ACTIVATIONS' order.
   * @param {() => Ptr} next
   * @returns {LayerOutputs}
   */
  layerOutputs(next) {
    return {
      y: next(), weights: next(), scores: next(), queries: next(), keys: next(), values: next(),
      context: next(), logSumExp: next(),
    };
  }

  /**
   * LayerActivations from `next`, in ACTIVATIONS' order.
   * @param {() => Ptr} next
   * @returns {Activations<Ptr>}
   */
  layerActivations(next) {
    return { queries: next(), keys: next(), values: next(), context: next(), logSumExp: next() };
  }
}

/**
 * The pointers of a call's AttentionOptions (key lengths, mask, sinks; 0: none).
 * @param {AttentionOptions} options
 * @param {Ptr} keyLengths
 * @param {Ptr} mask
 * @param {Ptr} sinks
 */
export function setPointers(options, keyLengths, mask, sinks) {
  options.keyLengths = keyLengths;
  options.mask = mask;
  options.sinks = sinks;
}

/**
 * Hands out staged pointers in the order they were staged.
 * @param {Ptr[]} ptrs
 * @returns {() => Ptr}
 */
export function reader(ptrs) {
  let i = 0;
  return () => ptrs[i++];
}
