// The attention modules of chapter 3, mirroring the book's PyTorch classes:
// same constructor arguments, parameter names and layouts (W_query.weight is
// [dOut, dIn] row-major), seeded initialisation identical to PyTorch's (the
// projections made in the book's __init__ order). Their layer, forward and
// backward are attention-layer.mjs's.

import { checkInteger } from '../api/validate.mjs';
import { AttentionLayer, ProjectedAttention, checkModuleArgs } from './attention-layer.mjs';
import { gradOrZeros } from './kept.mjs';
import { bindingOf, fixFields, keepGrad } from './module.mjs';

/** @import { LayerArrayName, LayerGrads, LayerParams } from './module.mjs' */

/** SelfAttention_v2: Q/K/V projections, softmax(QKᵀ/√dOut)·V, no mask. */
export class SelfAttention extends ProjectedAttention {
  /**
   * @param {number} dIn
   * @param {number} dOut
   * @param {boolean} [qkvBias]
   */
  constructor(dIn, dOut, qkvBias = false) {
    checkModuleArgs(dIn, dOut, qkvBias);
    super(dIn, dOut, undefined, 0, false, qkvBias, 1);
  }
}

/** The book's CausalAttention (listing 3.3). */
export class CausalAttention extends ProjectedAttention {
  /**
   * @param {number} dIn
   * @param {number} dOut
   * @param {number} contextLength
   * @param {number} dropout
   * @param {boolean} [qkvBias]
   */
  constructor(dIn, dOut, contextLength, dropout, qkvBias = false) {
    checkModuleArgs(dIn, dOut, qkvBias, [contextLength, dropout]);
    super(dIn, dOut, contextLength, dropout, true, qkvBias, 1);
  }
}

/** numHeads independent CausalAttention heads, concatenated (listing 3.4). */
export class MultiHeadAttentionWrapper extends AttentionLayer {
  /**
   * @param {number} dIn
   * @param {number} dOut
   * @param {number} contextLength
   * @param {number} dropout
   * @param {number} numHeads
   * @param {boolean} [qkvBias]
   */
  constructor(dIn, dOut, contextLength, dropout, numHeads, qkvBias = false) {
    checkModuleArgs(dIn, dOut, qkvBias, [contextLength, dropout]);
    checkInteger('numHeads', numHeads);
    super(dIn, contextLength, dropout, true);
    this.dOut = dOut;
    this.numHeads = numHeads;
    this.outputDim = numHeads * dOut;
    const { CausalAttention, ModuleList } = bindingOf(new.target).classes;
    /** The heads (an Array); registered as the child 'heads' (heads.0.W_query.weight, ...). */
    this.heads = Array.from({ length: numHeads },
      () => new CausalAttention(dIn, dOut, contextLength, dropout, qkvBias));
    this.registerModule('heads', new ModuleList(this.heads));
    fixFields(this, 'dOut', 'numHeads', 'outputDim', 'heads');
  }

  /** @returns {LayerParams} */
  layerParams() {
    // The heads' projections stacked: one layer forward runs them all
    // (filled in below).
    const p = /** @type {LayerParams} */ ({ numHeads: this.numHeads, headDim: this.dOut, wOut: null, bOut: null });
    for (const [w, b, name] of WRAPPER_PROJECTIONS) {
      p[w] = stack(this.heads.map((h) => h[name].weight));
      p[b] = stack(this.heads.map((h) => h[name].bias));
    }
    return p;
  }

  // The heads' gradients stacked like layerParams (zeros where null) for
  // the engine to accumulate into; its sums split back into the heads'
  // gradient arrays.
  /** @returns {LayerGrads} */
  layerGrads() {
    /** @type {LayerGrads} */
    const grads = {};
    for (const [w, b, name] of WRAPPER_PROJECTIONS) {
      const linears = this.heads.map((h) => h[name]);
      grads[w] = stack(linears.map((l) => gradOrZeros(l.weightGrad, l.weight.length)));
      grads[b] = stack(linears.map((l) => l.bias && gradOrZeros(l.biasGrad, l.bias.length)));
    }
    return grads;
  }

  // `sums` holds the stacked weight gradients, and the bias ones where the
  // heads have biases.
  /**
   * @param {LayerGrads} grads
   * @param {LayerGrads} sums
   */
  keepLayerGrads(grads, sums) {
    for (const [w, b, name] of WRAPPER_PROJECTIONS) {
      this.heads.forEach((h, i) => {
        const linear = h[name];
        const n = linear.weight.length;
        keepGrad(linear, 'weight', gradOrZeros(linear.weightGrad, n),
          /** @type {Float32Array} */ (sums[w]).subarray(i * n, (i + 1) * n));
        const m = linear.bias?.length;
        if (m) {
          keepGrad(linear, 'bias', gradOrZeros(linear.biasGrad, m),
            /** @type {Float32Array} */ (sums[b]).subarray(i * m, (i + 1) * m));
        }
      });
    }
  }
}

/** The book's MultiHeadAttention (listing 3.5): split heads, out_proj. */
export class MultiHeadAttention extends ProjectedAttention {
  /**
   * @param {number} dIn
   * @param {number} dOut
   * @param {number} contextLength
   * @param {number} dropout
   * @param {number} numHeads
   * @param {boolean} [qkvBias]
   */
  constructor(dIn, dOut, contextLength, dropout, numHeads, qkvBias = false) {
    checkModuleArgs(dIn, dOut, qkvBias, [contextLength, dropout]);
    checkInteger('numHeads', numHeads);
    if (dOut % numHeads !== 0) {
      throw new RangeError(`dOut must be divisible by numHeads, got dOut ${dOut} and numHeads ${numHeads}`);
    }
    super(dIn, dOut, contextLength, dropout, true, qkvBias, numHeads);
    const { Linear } = bindingOf(new.target).classes;
    this.outProj = this.registerModule('out_proj', new Linear(dOut, dOut, true));
    fixFields(this, 'outProj');
  }
}

/**
 * The wrapper's projections: the layer's weight and bias names, each head's attribute.
 * @type {[LayerArrayName, LayerArrayName, 'W_query' | 'W_key' | 'W_value'][]}
 */
const WRAPPER_PROJECTIONS = [['wQuery', 'bQuery', 'W_query'], ['wKey', 'bKey', 'W_key'], ['wValue', 'bValue', 'W_value']];

/**
 * Arrays concatenated (null when the first is null: no bias).
 * @param {(Float32Array | null)[]} parts
 * @returns {Float32Array | null}
 */
function stack(parts) {
  if (parts[0] === null) return null;
  // The heads are alike: all have a bias or none has.
  const arrays = /** @type {Float32Array[]} */ (parts);
  const all = new Float32Array(arrays.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const p of arrays) {
    all.set(p, offset);
    offset += p.length;
  }
  return all;
}
