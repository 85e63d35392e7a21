// In-context learning on the probe (a sequence whose second half repeats
// the first: learn-tasks.mjs), read from the model's logits. Pure functions
// (no DOM, no engine): the trainer calls them in the worker, the Node tests
// directly.
//
//   loss by token index   −log p(ids[i + 1] | ids[0 … i]) for i = 0 … T − 2:
//                         near log V on the first half (random tokens), and
//                         once an induction head exists, low on the repeat
//   ICL score             mean loss of the last quarter of the indices minus
//                         that of the first quarter (Olsson et al. 2022:
//                         loss at a late token minus loss at an early one;
//                         negative when later tokens profit from the context)
//   probe loss            the mean loss on the repeat (i ≥ P, as the
//                         training loss scores it), via the package's
//                         crossEntropy with repeatTargets

import { IGNORE } from './tasks.mjs';

/**
 * Per-token losses of one sequence: logits [T, vocab] (row-major, batch 1),
 * ids [T] → Float64Array [T − 1], entry i the loss of predicting ids[i + 1]
 * (a log-softmax in float64).
 */
export function tokenLosses(logits, ids, vocab) {
  const T = ids.length;
  const out = new Float64Array(Math.max(0, T - 1));
  for (let i = 0; i + 1 < T; i++) {
    const row = i * vocab;
    let max = -Infinity;
    for (let v = 0; v < vocab; v++) max = Math.max(max, logits[row + v]);
    let sum = 0;
    for (let v = 0; v < vocab; v++) sum += Math.exp(logits[row + v] - max);
    out[i] = Math.log(sum) + max - logits[row + ids[i + 1]];
  }
  return out;
}

/** How many indices each end of the ICL score averages: a quarter (at least 1). */
export const iclSpan = (n) => Math.max(1, Math.floor(n / 4));

/** Mean loss of the last quarter of `losses` minus that of the first quarter (0 with fewer than 2). */
export function iclScore(losses) {
  const n = losses.length;
  if (n < 2) return 0;
  const q = iclSpan(n);
  let early = 0;
  let late = 0;
  for (let i = 0; i < q; i++) {
    early += losses[i];
    late += losses[n - 1 - i];
  }
  return (late - early) / q;
}

/**
 * The probe's targets as the training scores a repeat: ids[i + 1] at i ≥ P
 * (and i + 1 < T), IGNORE elsewhere (Int32Array [T]).
 */
export function repeatTargets(ids, P) {
  const targets = new Int32Array(ids.length).fill(IGNORE);
  for (let i = P; i + 1 < ids.length; i++) targets[i] = ids[i + 1];
  return targets;
}
