// nn.Linear: PyTorch's seeded initialisation (reset_parameters drawn from
// the runtime's mt19937), forward and backward through the engine's GEMM.
// For inference its weight can be stored in the wasm heap as bfloat16 or
// int8 (weightsDtype, quantize(); src/gemm/stored_linear.h): it then stays
// there, read where it is by every forward, until quantize('float32') or
// dispose() (or garbage collection) frees it; the float32 `weight` array is
// let go and widened from the stored values only when something reads it.

import { checkBoolean, checkInteger, checkOptionNames, checkShape, checkTensor } from '../api/validate.mjs';
import { product } from '../engine/heap.mjs';
import { Kept, copyInto, gradOrZeros } from './kept.mjs';
import {
  DEFER_PARAMETER, Module, PARAMETERS_LOADED, PARAMETER_REPLACED, absentParameter, bindingOf, fixFields, keepGrad,
} from './module.mjs';
import { checkWeightsDtype, inferenceOnly } from './weights-dtype.mjs';

/** @import { StoredWeights } from '../engine/engine.d.ts' */
/** @import { WeightsDtype } from './weights-dtype.mjs' */

// Frees the stored weights of a Linear that was garbage-collected undisposed.
const registry = new FinalizationRegistry((/** @type {() => void} */ release) => release());

/**
 * The nn.Linear weight bound, computed in double exactly as PyTorch does.
 * @param {number} fanIn
 */
function kaimingBound(fanIn) {
  const a = Math.sqrt(5);
  const gain = Math.sqrt(2.0 / (1 + a * a));
  return Math.sqrt(3.0) * (gain / Math.sqrt(fanIn));
}

export class Linear extends Module {
  #engine;
  /** @type {Kept<{ x: Float32Array, rows: number, dims: number[] }>} */
  #kept = new Kept();
  /** @type {Float32Array | null} the x the last backward consumed, reused by the next training forward */
  #spareX = null;
  /** @type {StoredWeights | null} the weight in the heap (bfloat16 or int8), or null: float32 */
  #stored = null;
  /** whether a new `weight` array was assigned since #stored was made */
  #replaced = false;

  /**
   * nn.Linear(inFeatures, outFeatures, bias = true), PyTorch's init;
   * options.weightsDtype 'bfloat16' or 'int8' stores the weight so
   * (inference only; see quantize()).
   * @param {number} inFeatures
   * @param {number} outFeatures
   * @param {boolean} [bias]
   * @param {{ weightsDtype?: WeightsDtype }} [options]
   */
  constructor(inFeatures, outFeatures, bias = true, options = {}) {
    super();
    this.#engine = bindingOf(new.target).engine;
    checkInteger('inFeatures', inFeatures);
    checkInteger('outFeatures', outFeatures);
    checkBoolean('bias', bias);
    this.inFeatures = inFeatures;
    this.outFeatures = outFeatures;
    const g = this.#engine.generator;
    // Zeros when the parameters are about to be loaded (Engine.skipInit).
    const draw = !this.#engine.skipInit;
    const wb = kaimingBound(inFeatures);
    this.weight = new Float32Array(outFeatures * inFeatures);
    if (draw) for (let i = 0; i < this.weight.length; i++) this.weight[i] = g.nextFloat(-wb, wb);
    /** @type {Float32Array | null} */
    this.bias = null;
    if (bias) {
      const bb = 1 / Math.sqrt(inFeatures);
      this.bias = new Float32Array(outFeatures);
      if (draw) for (let i = 0; i < outFeatures; i++) this.bias[i] = g.nextFloat(-bb, bb);
    }
    /** @type {Float32Array | null} Gradients [outFeatures, inFeatures] and [outFeatures]: null until a backward. */
    this.weightGrad = null;
    /** @type {Float32Array | null} */
    this.biasGrad = null;
    fixFields(this, 'inFeatures', 'outFeatures');
    this.registerParameter('weight', 'weight', [outFeatures, inFeatures]);
    if (bias) this.registerParameter('bias');
    else absentParameter(this, 'bias', 'it was constructed with bias false');
    const o = checkOptionNames('options', options, ['weightsDtype']);
    const dtype = checkWeightsDtype('options.weightsDtype', o.weightsDtype ?? 'float32');
    if (dtype !== 'float32') this.quantize(dtype);
  }

  /**
   * How the weight is stored: 'float32' (the default), or 'bfloat16' /
   * 'int8' after quantize() (in the wasm heap, as the KV cache stores its
   * rows: bfloat16 rounded to nearest even; int8 with one float scale per
   * output row and block of 32 inputs).
   * @returns {WeightsDtype}
   */
  get weightsDtype() {
    return this.#stored?.dtype ?? 'float32';
  }

  /**
   * Bytes of wasm memory the stored weight holds (0 for float32, whose
   * weight lives in JS and is copied in for each call).
   * @returns {number}
   */
  get weightsBytes() {
    return this.#stored?.bytes ?? 0;
  }

  /**
   * Stores the weight as `weightsDtype` for inference: 'int8' (about a
   * quarter of float32's bytes) or 'bfloat16' (half), kept in the wasm heap
   * and read there by every forward. The float32 array is let go: `weight`
   * reads as the stored values widened back to float32 (what forward
   * multiplies by), made when first read and kept from then on (a state
   * dict, the circuits); generation alone never makes it. 'float32' frees
   * the stored weight and computes with `weight` (those values) as it is. A stored weight
   * has no backward and no optimizer step (both throw, naming
   * weightsDtype). After changing `weight` in place, call quantize() again
   * (assigning a new array or loadStateDict() re-stores by itself).
   * Returns this.
   * @param {WeightsDtype} weightsDtype
   * @returns {this}
   */
  quantize(weightsDtype) {
    const dtype = checkWeightsDtype('weightsDtype', weightsDtype);
    this.#engine.checkAlive();
    const weight = this.#keepValues();
    this.#free();
    if (dtype !== 'float32') this.#store(dtype, weight);
    return this;
  }

  /**
   * Frees the stored weight (the layer is float32 again, with the stored
   * values); harmless twice. After the runtime's own dispose() the stored
   * values are gone with it, and reading `weight` throws.
   */
  dispose() {
    if (this.#stored && this.#engine.alive()) this.#keepValues();
    this.#free();
    super.dispose();
  }

  /** After loadStateDict(): the stored weight from the loaded values. */
  [PARAMETERS_LOADED]() {
    const stored = this.#stored;
    if (stored) this.quantize(stored.dtype);
  }

  /** `weight`, made from the stored values (if it is not yet) before they are freed. */
  #keepValues() {
    return this.weight;
  }

  /** After `this.weight = array`: the next forward re-stores. */
  [PARAMETER_REPLACED]() {
    this.#replaced = true;
  }

  /**
   * @param {'bfloat16' | 'int8'} dtype
   * @param {Float32Array} weight
   */
  #store(dtype, weight) {
    const engine = this.#engine;
    const { outFeatures, inFeatures } = this;
    const stored = engine.storeWeights(dtype, weight, outFeatures, inFeatures);
    this.#stored = stored;
    this.#replaced = false;
    registry.register(this, () => engine.freeWeights(stored), stored);
    this[DEFER_PARAMETER]('weight', () => {
      engine.checkAlive();  // after the runtime's dispose() the stored values are gone
      return engine.storedValues(stored, outFeatures, inFeatures);
    });
  }

  #free() {
    const w = this.#stored;
    if (!w) return;
    this.#stored = null;
    registry.unregister(w);
    this.#engine.freeWeights(w);
  }

  /**
   * The stored weight, re-stored first when `weight` was replaced, or null
   * (float32). For the modules that pass it to a layer call.
   * @returns {StoredWeights | null}
   */
  storedWeights() {
    const w = this.#stored;
    if (w && this.#replaced) this.quantize(w.dtype);
    return this.#stored;
  }

  /**
   * y = x · weightᵀ + bias for x of shape [..., inFeatures]. In training
   * mode it keeps (a copy of) x for backward().
   * @param {Float32Array} x
   * @param {number[]} shape
   * @returns {Float32Array}
   */
  forward(x, shape) {
    this.#engine.checkAlive();
    const dims = checkShape('shape', shape, 1, 8);
    if (dims[dims.length - 1] !== this.inFeatures) {
      throw new RangeError(`shape[${dims.length - 1}] must be inFeatures ${this.inFeatures}, got ${dims[dims.length - 1]}`);
    }
    checkTensor('x', x, product(...dims), `shape [${dims.join(', ')}]`);
    const rows = product(...dims.slice(0, -1));
    const stored = this.storedWeights();
    const y = this.#engine.linearForward(x, rows, this.inFeatures, this.outFeatures, stored ?? this.weight, this.bias);
    const spare = this.#spareX;
    this.#spareX = null;
    this.#kept.set(this.training, () => ({ x: copyInto(spare, x), rows, dims }),
      stored ? inferenceOnly(stored.dtype) : undefined);
    return y;
  }

  /**
   * The backward of the last training forward: gradOutput [..., outFeatures]
   * → the gradient of x [..., inFeatures]; weightGrad += gradOutputᵀ · x,
   * biasGrad += the column sums of gradOutput (the same arrays from the
   * first backward on).
   * @param {Float32Array} gradOutput
   * @returns {Float32Array}
   */
  backward(gradOutput) {
    this.#engine.checkAlive();
    if (this.#stored) throw new TypeError(`backward() cannot run: ${inferenceOnly(this.#stored.dtype)}`);
    const { x, rows } = this.#kept.take(({ rows: r, dims }) => checkTensor('gradOutput', gradOutput,
      r * this.outFeatures, `shape [${[...dims.slice(0, -1), this.outFeatures].join(', ')}]`));
    const weightGrad = gradOrZeros(this.weightGrad, this.weight.length);
    const biasGrad = this.bias && gradOrZeros(this.biasGrad, this.bias.length);
    const r = this.#engine.linearBackward(x, rows, this.inFeatures, this.outFeatures, this.weight,
      gradOutput, weightGrad, biasGrad);
    keepGrad(this, 'weight', weightGrad, r.weightGrad);
    // Both are null exactly when the layer has no bias.
    if (biasGrad && r.biasGrad) keepGrad(this, 'bias', biasGrad, r.biasGrad);
    this.#spareX = x;
    return r.gradX;
  }
}
