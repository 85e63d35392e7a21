// nn.Linear: PyTorch's seeded initialisation (reset_parameters drawn from
// the runtime's mt19937), forward and backward through the engine's GEMM.

import { checkBoolean, checkInteger, checkShape, checkTensor } from '../api/validate.mjs';
import { product } from '../engine/heap.mjs';
import { Kept, Module, absentParameter, bindingOf, fixFields, copyInto, gradOrZeros, keepGrad } from './module.mjs';

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

  /**
   * nn.Linear(inFeatures, outFeatures, bias = true), PyTorch's init.
   * @param {number} inFeatures
   * @param {number} outFeatures
   * @param {boolean} [bias]
   */
  constructor(inFeatures, outFeatures, bias = true) {
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
    const y = this.#engine.linearForward(x, rows, this.inFeatures, this.outFeatures, this.weight, this.bias);
    const spare = this.#spareX;
    this.#spareX = null;
    this.#kept.set(this.training, () => ({ x: copyInto(spare, x), rows, dims }));
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
