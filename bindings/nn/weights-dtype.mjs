// How a Linear stores its weight (weightsDtype): the check and the words
// every refusal to train a stored weight uses (Linear, the attention
// modules, the optimizers).

import { describe } from '../api/validate.mjs';
import { KV_DTYPE } from '../engine/codes.mjs';

/** @typedef {'float32' | 'bfloat16' | 'int8'} WeightsDtype */

/**
 * A weightsDtype: 'float32', 'bfloat16' or 'int8' (the KV cache's dtypes,
 * rounded the same way), else a RangeError naming `name`.
 * @param {string} name
 * @param {unknown} value
 * @returns {WeightsDtype}
 */
export function checkWeightsDtype(name, value) {
  if (typeof value !== 'string' || !KV_DTYPE.has(value)) {
    throw new RangeError(`${name} must be one of ${[...KV_DTYPE.keys()].map((d) => `'${d}'`).join(', ')}, ` +
      `got ${describe(value)}`);
  }
  return /** @type {WeightsDtype} */ (value);
}

/**
 * Why a stored weight has no backward.
 * @param {string} dtype
 */
export const inferenceOnly = (dtype) =>
  `the weights are stored as weightsDtype '${dtype}', which is for inference (no backward, no optimizer step); ` +
  "quantize('float32') first to train";
