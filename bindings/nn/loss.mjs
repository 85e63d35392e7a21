// The loss a language model trains with: PyTorch's cross_entropy over class
// indices, with its mean reduction and ignore_index, and its gradient.
// Plain JS in double precision (N·C exps: cheap next to the attention), the
// results rounded to float32 as PyTorch's float tensors hold them.

import { checkIndices, checkInteger, checkOptionNames, describe } from '../api/validate.mjs';

/** @import { CrossEntropyOptions, CrossEntropyResult } from './training.d.ts' */

const OPTIONS = ['ignoreIndex'];

/**
 * The runtime's crossEntropy (index.d.ts). PyTorch's CrossEntropyLoss:
 *   loss_n = -log(exp(x[n, y_n]) / sum_c exp(x[n, c])),
 *   loss   = sum of loss_n over the rows not ignored / their count,
 *   gradLogits[n] = (softmax(x[n]) - onehot(y_n)) / count,
 * each row's softmax shifted by its max (no overflow).
 * @param {Float32Array} logits
 * @param {Int32Array | Uint32Array | number[]} targets
 * @param {CrossEntropyOptions} [options]
 * @returns {CrossEntropyResult}
 */
export function crossEntropy(logits, targets, options) {
  const o = checkOptionNames('options', options, OPTIONS);
  const ignoreIndex = o.ignoreIndex === undefined ? -100
    : checkInteger('options.ignoreIndex', o.ignoreIndex, -(2 ** 31));
  if (!(logits instanceof Float32Array)) {
    throw new TypeError(`logits must be a Float32Array, got ${describe(logits)}`);
  }
  const n = targets?.length;
  if (!Number.isInteger(n) || n < 1) {
    throw new TypeError(`targets must be a non-empty Int32Array, Uint32Array or Array of class indices, got ${describe(targets)}`);
  }
  if (logits.length === 0 || logits.length % n !== 0) {
    throw new RangeError(
      `logits must have length N × C with N = targets.length ${n} and C >= 1, got length ${logits.length}`);
  }
  const classes = logits.length / n;
  const ids = checkIndices('targets', targets, classes, ignoreIndex);

  let count = 0;
  for (const id of ids) if (id !== ignoreIndex) count += 1;
  const grad = new Float32Array(logits.length);
  const e = new Float64Array(classes);
  let total = 0;
  // Rows by offset (no subarray per row: a training step's loss has
  // thousands of short rows).
  for (let row = 0, at = 0; row < n; row++, at += classes) {
    const target = ids[row];
    if (target === ignoreIndex) continue;
    let max = -Infinity;
    for (let c = 0; c < classes; c++) max = Math.max(max, logits[at + c]);
    let sum = 0;
    for (let c = 0; c < classes; c++) sum += (e[c] = Math.exp(logits[at + c] - max));
    total += max + Math.log(sum) - logits[at + target];
    for (let c = 0; c < classes; c++) grad[at + c] = e[c] / sum / count;
    grad[at + target] = (e[target] / sum - 1) / count;
  }
  return { loss: Math.fround(total / count), gradLogits: grad };
}
