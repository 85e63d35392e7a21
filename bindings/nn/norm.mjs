// The book's chapter-4 layers and Llama's: LayerNorm (scale, shift), RMSNorm
// (weight), GELU, SiLU and Dropout, each with PyTorch's names and
// initialisation (norms: ones and zeros, no draw from the generator) and a
// backward. The arithmetic is src/model/norm.h's, through the engine.

import { checkFinite, checkInteger, checkProbability, checkShape, checkTensor, describe } from '../api/validate.mjs';
import { product } from '../engine/heap.mjs';
import { Kept, gradOrZeros } from './kept.mjs';
import { Module, bindingOf, fixFields, keepGrad } from './module.mjs';

/** @import { Engine } from './module.mjs' */

/**
 * x's rows for a layer over the last axis of size `dim`.
 * @param {Float32Array} x
 * @param {number[]} shape
 * @param {number} dim
 * @param {string} what  'embDim', 'normalizedShape'
 * @returns {{ dims: number[], rows: number }}
 */
function rowsOf(x, shape, dim, what) {
  const dims = checkShape('shape', shape, 1, 8);
  if (dims[dims.length - 1] !== dim) {
    throw new RangeError(`shape[${dims.length - 1}] must be ${what} ${dim}, got ${dims[dims.length - 1]}`);
  }
  checkTensor('x', x, product(...dims), `shape [${dims.join(', ')}]`);
  return { dims, rows: product(...dims.slice(0, -1)) };
}

/**
 * A Float32Array of any length.
 * @param {string} name
 * @param {unknown} value
 * @returns {Float32Array}
 */
function checkFloats(name, value) {
  if (!(value instanceof Float32Array)) throw new TypeError(`${name} must be a Float32Array, got ${describe(value)}`);
  return value;
}

/**
 * @param {string} name
 * @param {unknown} eps
 * @returns {number}
 */
function checkEps(name, eps) {
  const e = checkFinite(name, eps);
  if (!(Math.fround(e) > 0)) throw new RangeError(`${name} must be a positive float32, got ${describe(eps)}`);
  return e;
}

/**
 * The two norms: LayerNorm (weight 'scale', bias 'shift') and RMSNorm
 * (weight 'weight', no bias), over the last axis.
 */
class Norm extends Module {
  /** @type {Engine} */
  #engine;
  #kind;
  /** @type {Kept<{ x: Float32Array, rows: number, dims: number[], mean: Float32Array | null, rstd: Float32Array }>} */
  #kept = new Kept();

  /**
   * @param {'layer' | 'rms'} kind
   * @param {Engine} engine
   * @param {number} dim
   * @param {number} eps
   */
  constructor(kind, engine, dim, eps) {
    super();
    this.#engine = engine;
    this.#kind = kind;
    checkInteger('embDim', dim);
    /** Size of the last axis normalised. */
    this.embDim = dim;
    /** Added to the variance (or mean square) before the square root. */
    this.eps = checkEps('eps', eps);
    fixFields(this, 'embDim', 'eps');
  }

  /** @returns {Float32Array} */
  get #weight() {
    return /** @type {any} */ (this)[this.#kind === 'layer' ? 'scale' : 'weight'];
  }

  /**
   * Normalises each row of x [..., embDim]. In training mode it keeps x and
   * the row statistics for backward().
   * @param {Float32Array} x
   * @param {number[]} shape
   * @returns {Float32Array}
   */
  forward(x, shape) {
    this.#engine.checkAlive();
    const { dims, rows } = rowsOf(x, shape, this.embDim, 'embDim');
    const bias = this.#kind === 'layer' ? /** @type {any} */ (this).shift : null;
    const r = this.#engine.normForward(this.#kind, x, rows, this.embDim, this.#weight, bias, this.eps);
    this.#kept.set(this.training, () => ({ x: x.slice(), rows, dims, mean: r.mean, rstd: r.rstd }));
    return r.y;
  }

  /**
   * The backward of the last training forward: the gradient of x; the
   * parameters' gradients accumulate (+=).
   * @param {Float32Array} gradOutput
   * @returns {Float32Array}
   */
  backward(gradOutput) {
    this.#engine.checkAlive();
    const k = this.#kept.take(({ x, dims }) => checkTensor('gradOutput', gradOutput, x.length, `shape [${dims.join(', ')}]`));
    const layer = this.#kind === 'layer';
    const weightKey = layer ? 'scale' : 'weight';
    const self = /** @type {any} */ (this);
    const gradWeight = gradOrZeros(self[`${weightKey}Grad`], this.embDim);
    const gradBias = layer ? gradOrZeros(self.shiftGrad, this.embDim) : null;
    const gradX = this.#engine.normBackward(this.#kind, {
      x: k.x, rows: k.rows, dim: this.embDim, weight: this.#weight, mean: k.mean, rstd: k.rstd,
      gradY: gradOutput, gradWeight, gradBias,
    });
    keepGrad(this, weightKey, gradWeight, gradWeight);
    if (gradBias) keepGrad(this, 'shift', gradBias, gradBias);
    return gradX;
  }
}

/**
 * The book's LayerNorm(emb_dim) (ch. 4): scale · (x − mean) / sqrt(var +
 * eps) + shift over the last axis, the variance without Bessel's
 * correction; parameters `scale` (ones) and `shift` (zeros), eps 1e-5.
 */
export class LayerNorm extends Norm {
  /**
   * @param {number} embDim
   * @param {{ eps?: number }} [options]
   */
  constructor(embDim, options) {
    super('layer', bindingOf(new.target).engine, embDim, options?.eps ?? 1e-5);
    /** [embDim], ones. */
    this.scale = new Float32Array(embDim).fill(1);
    /** [embDim], zeros. */
    this.shift = new Float32Array(embDim);
    /** @type {Float32Array | null} */
    this.scaleGrad = null;
    /** @type {Float32Array | null} */
    this.shiftGrad = null;
    this.registerParameter('scale');
    this.registerParameter('shift');
  }
}

/**
 * torch.nn.RMSNorm(dim, eps) as the book's Llama 3.2 code uses it (Hugging
 * Face's LlamaRMSNorm): weight · x / sqrt(mean(x²) + eps); parameter
 * `weight` (ones), eps 1e-5 by default.
 */
export class RMSNorm extends Norm {
  /**
   * @param {number} embDim
   * @param {{ eps?: number }} [options]
   */
  constructor(embDim, options) {
    super('rms', bindingOf(new.target).engine, embDim, options?.eps ?? 1e-5);
    /** [embDim], ones. */
    this.weight = new Float32Array(embDim).fill(1);
    /** @type {Float32Array | null} */
    this.weightGrad = null;
    this.registerParameter('weight');
  }
}

/** The elementwise activations: no parameters, x kept for backward. */
class Activation extends Module {
  /** @type {Engine} */
  #engine;
  #kind;
  /** @type {Kept<Float32Array>} */
  #kept = new Kept();

  /**
   * @param {'gelu' | 'silu'} kind
   * @param {Engine} engine
   */
  constructor(kind, engine) {
    super();
    this.#engine = engine;
    this.#kind = kind;
  }

  /**
   * Elementwise on x of any shape (`shape` checks its length when given).
   * @param {Float32Array} x
   * @param {number[]} [shape]
   * @returns {Float32Array}
   */
  forward(x, shape) {
    this.#engine.checkAlive();
    if (shape === undefined) checkFloats('x', x);
    else checkTensor('x', x, product(...checkShape('shape', shape, 1, 8)), `shape [${shape.join(', ')}]`);
    this.#kept.set(this.training, () => x.slice());
    return this.#engine.activation(this.#kind, x, null);
  }

  /**
   * @param {Float32Array} gradOutput
   * @returns {Float32Array}
   */
  backward(gradOutput) {
    this.#engine.checkAlive();
    const x = this.#kept.take((kept) => checkTensor('gradOutput', gradOutput, kept.length, `length ${kept.length}`));
    return this.#engine.activationBackward(this.#kind, x, null, gradOutput).gradA;
  }
}

/** The book's GELU (ch. 4): the tanh approximation, 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))). */
export class GELU extends Activation {
  constructor() {
    super('gelu', bindingOf(new.target).engine);
  }
}

/** torch.nn.SiLU: x · σ(x). */
export class SiLU extends Activation {
  constructor() {
    super('silu', bindingOf(new.target).engine);
  }
}

/**
 * nn.Dropout(p): in training mode each value is zeroed with probability p
 * and the others scaled by 1 / (1 − p), the draws from the runtime's
 * generator (manualSeed); eval mode (or p 0) passes x through.
 */
export class Dropout extends Module {
  /** @type {Engine} */
  #engine;
  #p = 0;
  /** @type {Kept<{ keep: Uint8Array | null }>} */
  #kept = new Kept();

  /** @param {number} [p] */
  constructor(p = 0.5) {
    super();
    this.#engine = bindingOf(new.target).engine;
    this.p = p;
  }

  /** @returns {number} */
  get p() {
    return this.#p;
  }

  /** @param {number} value */
  set p(value) {
    this.#p = checkProbability('p', value);
  }

  /**
   * @param {Float32Array} x
   * @returns {Float32Array}
   */
  forward(x) {
    this.#engine.checkAlive();
    checkFloats('x', x);
    if (!this.training || this.#p === 0) {
      this.#kept.set(this.training, () => ({ keep: null }));
      return x.slice();
    }
    const p = this.#p;
    const scale = Math.fround(1 / (1 - p));
    const keep = new Uint8Array(x.length);
    const y = new Float32Array(x.length);
    const g = this.#engine.generator;
    for (let i = 0; i < x.length; i++) {
      if (g.nextFloat(0, 1) >= p) {
        keep[i] = 1;
        y[i] = x[i] * scale;
      }
    }
    this.#kept.set(true, () => ({ keep }));
    return y;
  }

  /**
   * @param {Float32Array} gradOutput
   * @returns {Float32Array}
   */
  backward(gradOutput) {
    const { keep } = this.#kept.take();
    if (!keep) return checkFloats('gradOutput', gradOutput).slice();
    checkTensor('gradOutput', gradOutput, keep.length, `length ${keep.length}`);
    const scale = Math.fround(1 / (1 - this.#p));
    const g = new Float32Array(keep.length);
    for (let i = 0; i < keep.length; i++) if (keep[i]) g[i] = gradOutput[i] * scale;
    return g;
  }
}
