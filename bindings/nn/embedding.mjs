// nn.Embedding: a lookup table whose backward adds rows of gradOutput to
// the rows its forward read.

import { checkIndices, checkInteger, checkShape, checkTensor } from '../api/validate.mjs';
import { product } from '../engine/heap.mjs';
import { Kept, gradOrZeros } from './kept.mjs';
import { Module, bindingOf, fixFields } from './module.mjs';

/**
 * nn.Embedding(numEmbeddings, embeddingDim): a lookup table [numEmbeddings,
 * embeddingDim], initialised N(0, 1) with PyTorch's normal_ sequence for
 * the runtime's generator (so manualSeed(123) gives the book's chapter-2
 * table).
 */
export class Embedding extends Module {
  #engine;
  /** @type {Kept<{ ids: Int32Array, dims: number[] }>} */
  #kept = new Kept();

  /**
   * @param {number} numEmbeddings
   * @param {number} embeddingDim
   */
  constructor(numEmbeddings, embeddingDim) {
    super();
    this.#engine = bindingOf(new.target).engine;
    checkInteger('numEmbeddings', numEmbeddings);
    checkInteger('embeddingDim', embeddingDim);
    if (!(numEmbeddings * embeddingDim <= 2 ** 28)) {
      throw new RangeError(`numEmbeddings × embeddingDim must be at most 2^28, got ${numEmbeddings} × ${embeddingDim}`);
    }
    this.numEmbeddings = numEmbeddings;
    this.embeddingDim = embeddingDim;
    fixFields(this, 'numEmbeddings', 'embeddingDim');
    this.weight = this.#engine.skipInit ? new Float32Array(numEmbeddings * embeddingDim)
      : this.#engine.generator.normalFloats(numEmbeddings * embeddingDim);
    /** @type {Float32Array | null} Gradient [numEmbeddings, embeddingDim]: null until a backward. */
    this.weightGrad = null;
    this.registerParameter('weight', 'weight', [numEmbeddings, embeddingDim]);
  }

  /**
   * indices: integers in [0, numEmbeddings) (an Int32Array, Uint32Array or
   * Array), of shape `shape` (default [indices.length]). Returns their rows,
   * a Float32Array [...shape, embeddingDim]. In training mode it keeps the
   * indices for backward().
   * @param {Int32Array | Uint32Array | number[]} indices
   * @param {number[]} [shape]
   * @returns {Float32Array}
   */
  forward(indices, shape) {
    this.#engine.checkAlive();
    const ids = checkIndices('indices', indices, this.numEmbeddings);
    const dims = shape === undefined ? [ids.length] : checkShape('shape', shape, 1, 8);
    if (product(...dims) !== ids.length) {
      throw new RangeError(`indices must have length ${product(...dims)} (shape [${dims.join(', ')}]), got length ${ids.length}`);
    }
    const dim = this.embeddingDim;
    const out = new Float32Array(ids.length * dim);
    // Row copies without a subarray per row (a training
    // batch looks up thousands of short rows).
    const w = this.weight;
    for (let n = 0, at = 0; n < ids.length; n++) {
      const row = ids[n] * dim;
      for (let c = 0; c < dim; c++, at++) out[at] = w[row + c];
    }
    this.#kept.set(this.training, () => ({ ids, dims }));
    return out;
  }

  /**
   * The backward of the last training forward: row n of gradOutput
   * [...shape, embeddingDim] is added to weightGrad's row indices[n], in
   * order. Returns null (indices have no gradient).
   * @param {Float32Array} gradOutput
   * @returns {null}
   */
  backward(gradOutput) {
    this.#engine.checkAlive();
    const dim = this.embeddingDim;
    const { ids } = this.#kept.take(({ ids: i, dims }) => checkTensor('gradOutput', gradOutput,
      i.length * dim, `shape [${[...dims, dim].join(', ')}]`));
    const grad = gradOrZeros(this.weightGrad, this.weight.length);
    for (let n = 0; n < ids.length; n++) {
      const row = ids[n] * dim;
      for (let c = 0; c < dim; c++) grad[row + c] += gradOutput[n * dim + c];
    }
    this.weightGrad = grad;
    return null;
  }
}
