// The engine layer: every call into the wasm module goes through here. It
// stages inputs into the heap's scratch arena, passes their byte offsets in
// the Embind value objects (embind.mjs's Structs, over the core's own
// defaults), turns a Status into an error (codes.mjs) and copies results out
// into JS-owned arrays. Its callers (the Runtime, the modules, the KV cache)
// have validated their arguments: nothing here checks a user's input.

import { KV_DTYPE, checkStatus } from './codes.mjs';
import { ACTIVATIONS, PROJECTIONS, Structs, reader, setPointers } from './embind.mjs';
import { Heap, formatBytes, product } from './heap.mjs';
import { terminateWorkers } from './loader.mjs';

/**
 * @import {
 *   AttentionLayerParams, AttentionOptions, EmbindModule, KVCacheView, LayerOptions, Ptr, ShapeFields,
 * } from './embind.mjs'
 * @import {
 *   AdamWTensor, AttentionCall, AttentionGrads, AttentionResult, CacheBlock, CacheLayout, LayerBackwardCall,
 *   LayerForwardCall, LayerForwardResult, LayerGradArrays, LinearGradients, StoredWeights, VisibilityArrays,
 * } from './engine.d.ts'
 */

/** embind.cc's CallActivation kinds. */
const ACTIVATION_KINDS = { gelu: 0, silu: 1, siluMul: 2 };

export class Engine {
  /** @type {EmbindModule} */
  #mod;
  /** @type {Heap} */
  #heap;
  /** @type {Structs} */
  #structs;
  #disposed = false;

  /**
   * @param {EmbindModule} mod
   * @param {{ relaxedGemm: boolean }} options
   */
  constructor(mod, { relaxedGemm }) {
    this.#mod = mod;
    this.#heap = new Heap(mod);
    this.#structs = new Structs(mod.structDefaults());
    if (!relaxedGemm) mod.allowRelaxedGemmKernel(false);
    /** @readonly */
    this.threads = mod.numThreads();
    /** @readonly */
    this.target = mod.targetName();
    /** @readonly */
    this.gemmKernel = /** @type {'relaxed-simd' | 'simd128'} */ (mod.gemmKernelName());
    Object.freeze(this);
  }

  get disposed() {
    return this.#disposed;
  }

  /** Throws once dispose() has run: the module's workers are gone. */
  checkAlive() {
    if (this.#disposed) {
      throw new TypeError('this causal-attention runtime has been disposed; call init() for a new one');
    }
  }

  /** Frees the scratch arena and stops the worker threads. */
  dispose() {
    if (this.#disposed) return;
    this.#disposed = true;
    this.#heap.release();
    terminateWorkers(this.#mod);
  }

  /** @returns {number} */
  memoryBytes() {
    return this.#heap.memoryBytes();
  }

  /**
   * @param {number} headDim
   * @returns {number}
   */
  defaultScale(headDim) {
    return this.#mod.defaultScale(headDim);
  }

  /**
   * attention or attentionReference on copies of q, k, v.
   * @param {'attention' | 'attentionReference'} fn
   * @param {AttentionCall} c
   * @param {Float32Array} q
   * @param {Float32Array} k
   * @param {Float32Array} v
   * @returns {AttentionResult}
   */
  attention(fn, c, q, k, v) {
    const a = c.arrays;
    const scores = c.options.scoreStage ? c.weightsLength : 0;
    const [qp, kp, vp, klp, mp, sp, op, wp, lp, scp] = this.#heap.stage(fn, [q, k, v, a?.keyLengths, a?.mask, a?.sinks],
      [c.outLength, c.returnWeights ? c.weightsLength : 0, c.returnLogSumExp ? c.rowsLength ?? 0 : 0, scores]);
    setPointers(c.options, klp, mp, sp);
    c.options.scores = scp;
    const result = this.#attend(fn, c, qp, kp, vp, op, wp, lp);
    if (scores) result.scores = this.#heap.copyOut(scp, scores);
    return result;
  }

  /**
   * attentionBackward or attentionBackwardReference on copies of its inputs.
   * @param {'attentionBackward' | 'attentionBackwardReference'} fn
   * @param {{ shape: ShapeFields, options: AttentionOptions, arrays?: VisibilityArrays | null }} c
   * @param {Float32Array} gradOutput
   * @param {Float32Array} q
   * @param {Float32Array} k
   * @param {Float32Array} v
   * @param {Float32Array} output
   * @param {Float32Array} logSumExp
   * @returns {AttentionGrads}
   */
  attentionBackward(fn, c, gradOutput, q, k, v, output, logSumExp) {
    const a = c.arrays;
    const sinks = a?.sinks ?? null;
    const [dop, qp, kp, vp, op, lp, klp, mp, sp, gqp, gkp, gvp, gsp] = this.#heap.stage(fn,
      [gradOutput, q, k, v, output, logSumExp, a?.keyLengths, a?.mask, sinks],
      [q.length, k.length, v.length, sinks ? sinks.length : 0]);
    setPointers(c.options, klp, mp, sp);
    this.#check(fn, this.#mod[fn](this.#structs.attentionShape(c.shape), c.options,
      dop, qp, kp, vp, op, lp, gqp, gkp, gvp, gsp));
    /** @type {AttentionGrads} */
    const result = {
      gradQ: this.#heap.copyOut(gqp, q.length),
      gradK: this.#heap.copyOut(gkp, k.length),
      gradV: this.#heap.copyOut(gvp, v.length),
    };
    if (sinks) result.gradSinks = this.#heap.copyOut(gsp, sinks.length);
    return result;
  }

  /**
   * One layer forward (src/model/layer.h). With a cache in c.options it writes this
   * call's keys and values into it and attends over all of it; the caller
   * advances the cache's length.
   * @param {LayerForwardCall} c
   * @returns {LayerForwardResult}
   */
  layerForward(c) {
    const p = c.params;
    const options = this.#structs.layerOptions(c.options);
    const { batch, tokens } = options;
    const dModel = p.numHeads * p.headDim;
    const kvHeads = p.numKVHeads || p.numHeads;
    const outLength = batch * tokens * dModel;
    const kvLength = batch * tokens * kvHeads * p.headDim;
    const wLength = batch * p.numHeads * tokens * (options.cache.length + tokens);
    const rowsLength = batch * p.numHeads * tokens;
    const heads = c.returnQKV || c.keep;
    // Staged in the order the structs take them: x, the projections
    // (layerParams), the sinks, key lengths, mask and head mask, then the
    // outputs (layerOutputs' field order).
    const a = c.options.arrays;
    const stored = p.stored; // read where they are: not staged
    const next = reader(this.#heap.stage('forward',
      [c.x, ...PROJECTIONS.map((key) => (stored?.[key] ? null : p[key])), p.sinks, a?.keyLengths, a?.mask,
        c.options.headMask],
      [outLength, c.returnWeights ? wLength : 0, c.returnScores ? wLength : 0,
        ...(heads ? [outLength, kvLength, kvLength] : [0, 0, 0]),
        c.keep ? outLength : 0, c.keep ? rowsLength : 0]));
    const x = next();
    const params = this.#structs.layerParams(p, c.dIn, next);
    for (const key of PROJECTIONS) params[key] = stored?.[key]?.base ?? params[key];
    if (stored) params.weightsDtype = /** @type {number} */ (KV_DTYPE.get(stored.dtype));
    this.#layerVisibility(params, options, next, c.options.headMask);
    const outputs = this.#structs.layerOutputs(next);
    this.#check('forward', this.#mod.layerForward(params, options, x, outputs));
    /** @type {LayerForwardResult} */
    const result = { output: this.#heap.copyOut(outputs.y, outLength, c.out) };
    if (c.returnWeights) result.weights = this.#heap.copyOut(outputs.weights, wLength);
    if (c.returnScores) result.scores = this.#heap.copyOut(outputs.scores, wLength);
    if (c.returnQKV) {
      result.queries = this.#heap.copyOut(outputs.queries, outLength);
      result.keys = this.#heap.copyOut(outputs.keys, kvLength);
      result.values = this.#heap.copyOut(outputs.values, kvLength);
    }
    if (c.keep) {
      const into = c.savedInto;
      /** @type {(ptr: Ptr, n: number, a?: Float32Array) => Float32Array} */
      const save = (ptr, n, a) => this.#heap.copyOut(ptr, n, a?.length === n ? a : undefined);
      result.saved = {
        queries: save(outputs.queries, outLength, into?.queries),
        keys: save(outputs.keys, kvLength, into?.keys),
        values: save(outputs.values, kvLength, into?.values),
        context: save(outputs.context, outLength, into?.context),
        logSumExp: save(outputs.logSumExp, rowsLength, into?.logSumExp),
      };
    }
    return result;
  }

  /**
   * One layer backward (src/model/layer.h): the forward's call plus its `saved`,
   * gradY and the current gradients (accumulated into, in place; come back
   * as the same arrays, null where there were none).
   * @param {LayerBackwardCall} c
   * @returns {{ gradX: Float32Array, grads: LayerGradArrays }}
   */
  layerBackward(c) {
    const { params: p, grads: g, saved: s } = c;
    const options = this.#structs.layerOptions(c.options);
    const gradXLength = options.batch * options.tokens * c.dIn;
    const a = c.options.arrays;
    // The order the call takes them: x, params, saved, gradY, grads, then
    // the sinks' gradient, the sinks, key lengths, mask and head mask; gradX.
    const next = reader(this.#heap.stage('backward',
      [c.x, ...PROJECTIONS.map((key) => p[key]), ...ACTIVATIONS.map((key) => s[key]), c.gradY,
        ...PROJECTIONS.map((key) => g[key]), g.sinks, p.sinks, a?.keyLengths, a?.mask, c.options.headMask],
      [gradXLength]));
    const x = next();
    const params = this.#structs.layerParams(p, c.dIn, next);
    const saved = this.#structs.layerActivations(next);
    const gradY = next();
    const grads = this.#structs.layerGrads(next);
    const gradSinks = next();
    grads.sinks = gradSinks;
    this.#layerVisibility(params, options, next, c.options.headMask);
    const gradX = next();
    this.#check('backward', this.#mod.layerBackward(params, options, x, saved, gradY, gradX, grads));
    // The sums go back into the caller's gradient arrays: no new ones.
    const out = /** @type {LayerGradArrays} */ ({});
    for (const key of PROJECTIONS) out[key] = g[key] && this.#heap.copyOut(grads[key], g[key].length, g[key]);
    if (g.sinks) out.sinks = this.#heap.copyOut(gradSinks, g.sinks.length, g.sinks);
    return { gradX: this.#heap.copyOut(gradX, gradXLength), grads: out };
  }

  /**
   * LayerNorm (kind 'layer': weight = scale, bias = shift) or RMSNorm
   * ('rms': weight) over rows of x (src/model/norm.h): y and the row
   * statistics the backward takes (mean: LayerNorm only).
   * @param {'layer' | 'rms'} kind
   * @param {Float32Array} x
   * @param {number} rows
   * @param {number} dim
   * @param {Float32Array} weight
   * @param {Float32Array | null} bias
   * @param {number} eps
   * @returns {{ y: Float32Array, mean: Float32Array | null, rstd: Float32Array }}
   */
  normForward(kind, x, rows, dim, weight, bias, eps) {
    const what = kind === 'layer' ? 'LayerNorm.forward' : 'RMSNorm.forward';
    const [xp, wp, bp, yp, mp, rp] = this.#heap.stage(what, [x, weight, bias], [rows * dim, rows, rows]);
    this.#check(what, kind === 'layer'
      ? this.#mod.layerNorm(xp, rows, dim, wp, bp, eps, yp, mp, rp)
      : this.#mod.rmsNorm(xp, rows, dim, wp, eps, yp, rp));
    return {
      y: this.#heap.copyOut(yp, rows * dim),
      mean: kind === 'layer' ? this.#heap.copyOut(mp, rows) : null,
      rstd: this.#heap.copyOut(rp, rows),
    };
  }

  /**
   * normForward's backward: gradX, and gradWeight (and gradBias for
   * LayerNorm) accumulated into, in place.
   * @param {'layer' | 'rms'} kind
   * @param {{ x: Float32Array, rows: number, dim: number, weight: Float32Array, mean: Float32Array | null,
   *   rstd: Float32Array, gradY: Float32Array, gradWeight: Float32Array, gradBias: Float32Array | null }} c
   * @returns {Float32Array} gradX
   */
  normBackward(kind, c) {
    const what = kind === 'layer' ? 'LayerNorm.backward' : 'RMSNorm.backward';
    const n = c.rows * c.dim;
    const [xp, wp, mp, rp, gyp, gwp, gbp, gxp] = this.#heap.stage(what,
      [c.x, c.weight, c.mean, c.rstd, c.gradY, c.gradWeight, c.gradBias], [n]);
    this.#check(what, kind === 'layer'
      ? this.#mod.layerNormBackward(xp, c.rows, c.dim, wp, mp, rp, gyp, gxp, gwp, gbp)
      : this.#mod.rmsNormBackward(xp, c.rows, c.dim, wp, rp, gyp, gxp, gwp));
    this.#heap.copyOut(gwp, c.gradWeight.length, c.gradWeight);
    if (c.gradBias) this.#heap.copyOut(gbp, c.gradBias.length, c.gradBias);
    return this.#heap.copyOut(gxp, n);
  }

  /**
   * GELU(a), SiLU(a) or SiLU(a) · b elementwise (src/model/norm.h).
   * @param {'gelu' | 'silu' | 'siluMul'} kind
   * @param {Float32Array} a
   * @param {Float32Array | null} b  siluMul only
   * @returns {Float32Array}
   */
  activation(kind, a, b) {
    const [ap, bp, yp] = this.#heap.stage(kind, [a, b], [a.length]);
    this.#check(kind, this.#mod.activation(ACTIVATION_KINDS[kind], ap, bp, a.length, yp));
    return this.#heap.copyOut(yp, a.length);
  }

  /**
   * activation's backward: the gradient of a (and of b, siluMul only).
   * @param {'gelu' | 'silu' | 'siluMul'} kind
   * @param {Float32Array} a
   * @param {Float32Array | null} b
   * @param {Float32Array} gradY
   * @returns {{ gradA: Float32Array, gradB: Float32Array | null }}
   */
  activationBackward(kind, a, b, gradY) {
    const n = a.length;
    const [ap, bp, gyp, gap, gbp] = this.#heap.stage(`${kind} backward`, [a, b, gradY], [n, b ? n : 0]);
    this.#check(`${kind} backward`, this.#mod.activationBackward(ACTIVATION_KINDS[kind], ap, bp, gyp, n, gap, gbp));
    return { gradA: this.#heap.copyOut(gap, n), gradB: b && this.#heap.copyOut(gbp, n) };
  }

  /**
   * AdamWUpdate (src/model/optim.h) over `tensors` in one call: each tensor's p,
   * m and v are updated in place.
   * @param {number[]} h  [decay, 1 - β1, β2, 1 - β2, eps]
   * @param {AdamWTensor[]} tensors
   */
  adamWUpdate(h, tensors) {
    const ptrs = this.#heap.stage('AdamW.step', tensors.flatMap((t) => [t.p, t.g, t.m, t.v]), [7 * tensors.length]);
    const table = new Uint32Array(this.#heap.f32().buffer, ptrs[4 * tensors.length], 7 * tensors.length);
    const factors = new Float32Array(table.buffer, table.byteOffset, table.length);
    tensors.forEach((t, i) => {
      table.set([ptrs[4 * i], ptrs[4 * i + 1], ptrs[4 * i + 2], ptrs[4 * i + 3], t.p.length], 7 * i);
      factors.set([t.minusStep, t.correction2], 7 * i + 5);
    });
    this.#mod.adamWUpdate(h[0], h[1], h[2], h[3], h[4], tensors.length, table.byteOffset);
    tensors.forEach((t, i) => {
      this.#heap.copyOut(ptrs[4 * i], t.p.length, t.p);
      this.#heap.copyOut(ptrs[4 * i + 2], t.p.length, t.m);
      this.#heap.copyOut(ptrs[4 * i + 3], t.p.length, t.v);
    });
  }

  /**
   * Linear (src/gemm/linear.h): y [rows, outF] = x [rows, inF] · weightᵀ + bias;
   * a stored weight (storeWeights) through StoredLinear, read where it is.
   * @param {Float32Array} x
   * @param {number} rows
   * @param {number} inF
   * @param {number} outF
   * @param {Float32Array | StoredWeights} weight
   * @param {Float32Array | null} bias
   * @returns {Float32Array}
   */
  linearForward(x, rows, inF, outF, weight, bias) {
    const w = weight instanceof Float32Array ? null : weight;
    const [xp, wp, bp, yp] = this.#heap.stage('Linear.forward', [x, w ? null : /** @type {Float32Array} */ (weight), bias],
      [rows * outF]);
    this.#check('Linear.forward', w
      ? this.#mod.storedLinear(xp, rows, inF, outF, w.code, w.base, bp, yp)
      : this.#mod.linear(xp, rows, inF, outF, wp, bp, yp));
    return this.#heap.copyOut(yp, rows * outF);
  }

  /**
   * weight [outF, inF] rounded to `dtype` (StoreWeights) in a block of its own
   * until freeBlock; RangeError if it cannot fit.
   * @param {'bfloat16' | 'int8'} dtype
   * @param {Float32Array} weight
   * @param {number} outF
   * @param {number} inF
   * @returns {StoredWeights}
   */
  storeWeights(dtype, weight, outF, inF) {
    const code = /** @type {number} */ (KV_DTYPE.get(dtype));
    const bytes = this.#mod.storedWeightsBytes(code, outF, inF);
    const { ptr, base } = this.#heap.allocate(`${dtype} weights`, bytes,
      `${formatBytes(bytes)} of wasm memory (${dtype} weights [${outF}, ${inF}])`, true);
    try {
      const [wp] = this.#heap.stage('Linear.quantize', [weight], []);
      this.#check('Linear.quantize', this.#mod.storeWeights(code, wp, outF, inF, base));
      return Object.freeze({ ptr, base, bytes, dtype, code });
    } catch (e) {
      this.#heap.free(ptr);
      throw e;
    }
  }

  /**
   * The values a stored weight holds, widened to float32 (a new array of
   * outF · inF: what its forward multiplies by).
   * @param {StoredWeights} stored
   * @param {number} outF
   * @param {number} inF
   * @returns {Float32Array}
   */
  storedValues(stored, outF, inF) {
    const [vp] = this.#heap.stage('Linear.weight', [], [outF * inF]);
    this.#mod.loadStoredWeights(stored.code, stored.base, outF, inF, vp);
    return this.#heap.copyOut(vp, outF * inF);
  }

  /**
   * LinearBackward (src/gemm/linear.h). weightGrad and biasGrad are accumulated
   * into, in place, and come back (the same arrays).
   * @param {Float32Array} x
   * @param {number} rows
   * @param {number} inF
   * @param {number} outF
   * @param {Float32Array} weight
   * @param {Float32Array} gradY
   * @param {Float32Array} weightGrad
   * @param {Float32Array | null} biasGrad
   * @returns {LinearGradients}
   */
  linearBackward(x, rows, inF, outF, weight, gradY, weightGrad, biasGrad) {
    const [xp, wp, gyp, gwp, gbp, gxp] = this.#heap.stage('Linear.backward',
      [x, weight, gradY, weightGrad, biasGrad], [rows * inF]);
    this.#check('Linear.backward', this.#mod.linearBackward(xp, rows, inF, outF, wp, gyp, gxp, gwp, gbp));
    return {
      gradX: this.#heap.copyOut(gxp, rows * inF),
      weightGrad: this.#heap.copyOut(gwp, weightGrad.length, weightGrad),
      biasGrad: biasGrad && this.#heap.copyOut(gbp, biasGrad.length, biasGrad),
    };
  }

  /**
   * A KV cache's block, outside the arena. Throws a RangeError when the heap
   * cannot hold it.
   * @param {CacheLayout} layout
   * @returns {CacheBlock}
   */
  allocateCache(layout) {
    const { batch, kvHeads, headDim, valueDim, capacity, dtype } = layout;
    const code = /** @type {number} */ (KV_DTYPE.get(dtype));
    const keyRow = this.#mod.kvRowBytes(code, headDim);
    const valueRow = this.#mod.kvRowBytes(code, valueDim);
    // The values start on a 16-byte boundary (int8 rows may be odd-sized).
    const keyBytes = Math.ceil(product(batch, kvHeads, capacity, keyRow) / 16) * 16;
    const bytes = keyBytes + product(batch, kvHeads, capacity, valueRow);
    const { ptr, base } = this.#heap.allocate('a KV cache', bytes,
      `${formatBytes(bytes)} of wasm memory (batch ${batch} × kvHeads ${kvHeads} × capacity ${capacity} × ` +
      `(${keyRow} + ${valueRow} bytes per ${dtype} key and value row))`);
    return Object.freeze({
      ptr, keys: base, values: base + keyBytes, keyRow, valueRow, bytes, layout: Object.freeze({ ...layout }),
    });
  }

  /** @param {{ ptr: Ptr }} block  a KV cache's or stored weights' */
  freeBlock(block) {
    this.#heap.free(block.ptr);
  }

  /**
   * Stores t new tokens (k [sequences.length, kvHeads, t, headDim], v
   * likewise with valueDim) in rows [rows[i], rows[i] + t) of each KV head
   * of sequence sequences[i], rounded to the cache's dtype by the core
   * (StoreKvRows, one call per sequence and KV head).
   * @param {CacheBlock} block
   * @param {ArrayLike<number>} sequences
   * @param {ArrayLike<number>} rows rows each listed sequence holds now
   * @param {Float32Array} k
   * @param {Float32Array} v
   */
  appendToCache(block, sequences, rows, k, v) {
    const { kvHeads, headDim, valueDim, capacity, dtype } = block.layout;
    const code = /** @type {number} */ (KV_DTYPE.get(dtype));
    const t = k.length / (sequences.length * kvHeads * headDim);
    const staged = this.#heap.stage('append', [k, v], []);
    const base = [block.keys, block.values];
    const strides = [block.keyRow, block.valueRow];
    [headDim, valueDim].forEach((w, i) => {
      for (let n = 0; n < sequences.length; n++) {
        for (let h = 0; h < kvHeads; h++) {
          const row = (sequences[n] * kvHeads + h) * capacity + rows[n];
          this.#mod.storeKvRows(code, staged[i] + (n * kvHeads + h) * t * w * 4, t, w, base[i] + row * strides[i]);
        }
      }
    });
  }

  /**
   * Copies `count` rows of each KV head of one sequence, from row fromRow,
   * to row toRow of a sequence of a block of the same layout but perhaps
   * another capacity (the same block: a fork, or a window cache moving its
   * newest rows to the front; overlapping rows move as memmove does).
   * @param {CacheBlock} from
   * @param {number} fromSequence
   * @param {number} fromRow
   * @param {CacheBlock} to
   * @param {number} toSequence
   * @param {number} toRow
   * @param {number} count
   */
  copyRows(from, fromSequence, fromRow, to, toSequence, toRow, count) {
    const { kvHeads } = from.layout;
    const bytes = new Uint8Array(this.#heap.f32().buffer);
    const src = [from.keys, from.values], dst = [to.keys, to.values];
    [from.keyRow, from.valueRow].forEach((w, i) => {
      for (let h = 0; h < kvHeads; h++) {
        const start = src[i] + ((fromSequence * kvHeads + h) * from.layout.capacity + fromRow) * w;
        bytes.copyWithin(dst[i] + ((toSequence * kvHeads + h) * to.layout.capacity + toRow) * w, start, start + count * w);
      }
    });
  }

  /**
   * The core's KVCacheView of a block holding `length` rows per KV head, row
   * 0 at position `start`.
   * @param {CacheBlock} block
   * @param {number} length
   * @param {number} start
   * @returns {KVCacheView}
   */
  cacheView(block, length, start) {
    return this.#structs.cacheView(block.keys, block.values, block.layout.capacity, length, start,
      /** @type {number} */ (KV_DTYPE.get(block.layout.dtype)));
  }

  /**
   * attention over a cache's keys and values where they are: only q goes in.
   * `c.shape` carries the cache's length and capacity.
   * @param {AttentionCall} c
   * @param {Float32Array} q
   * @param {CacheBlock} block
   * @returns {AttentionResult}
   */
  attendCache(c, q, block) {
    const a = c.arrays;
    const [qp, klp, mp, sp, op, wp, lp] = this.#heap.stage('attention', [q, a?.keyLengths, a?.mask, a?.sinks],
      [c.outLength, c.returnWeights ? c.weightsLength : 0, c.returnLogSumExp ? c.rowsLength ?? 0 : 0]);
    setPointers(c.options, klp, mp, sp);
    return this.#attend('attention', c, qp, block.keys, block.values, op, wp, lp);
  }

  /**
   * @param {'attention' | 'attentionReference'} fn
   * @param {AttentionCall} c
   * @param {Ptr} qp
   * @param {Ptr} kp
   * @param {Ptr} vp
   * @param {Ptr} op
   * @param {Ptr} wp
   * @param {Ptr} lp
   * @returns {AttentionResult}
   */
  #attend(fn, c, qp, kp, vp, op, wp, lp) {
    this.#check(fn, this.#mod[fn](this.#structs.attentionShape(c.shape), c.options,
      qp, kp, vp, op, wp, lp));
    /** @type {AttentionResult} */
    const result = { output: this.#heap.copyOut(op, c.outLength, c.out) };
    if (c.returnWeights) result.weights = this.#heap.copyOut(wp, c.weightsLength, c.weightsOut);
    if (c.returnLogSumExp) {
      result.logSumExp = this.#heap.copyOut(lp, /** @type {number} */ (c.rowsLength));
      // The backward needs the dropout mask's seed, drawn here if not given.
      if (c.options.training && c.options.dropout > 0) {
        result.seed = (BigInt(c.options.seedHi) << 32n) | BigInt(c.options.seedLo);
      }
    }
    return result;
  }

  /**
   * A layer call's sinks (AttentionLayerParams.sinks), key lengths and mask
   * (its attention options, a copy: the caller's are kept for the backward)
   * and head mask ([1 or batch, heads]: its batch from its length) from
   * `next`, in that order.
   * @param {AttentionLayerParams} params
   * @param {LayerOptions} options
   * @param {() => Ptr} next
   * @param {Float32Array | null | undefined} headMask
   */
  #layerVisibility(params, options, next, headMask) {
    const sinks = next();
    const keyLengths = next();
    const mask = next();
    params.sinks = sinks;
    options.attention = { ...options.attention, keyLengths, mask, sinks: 0 };
    options.headMask = next();
    if (headMask) options.headMaskBatch = headMask.length / params.numHeads;
  }

  /**
   * @param {string} what
   * @param {number} status
   */
  #check(what, status) {
    checkStatus(this.#mod, what, status);
  }
}
