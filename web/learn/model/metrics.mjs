// What a head does, in two numbers, read from its attention weights on the
// probe (a sequence whose second half repeats the first: learn-tasks.mjs).
//
//   previous-token score  the mean weight a query puts on the key right
//                         before it (i − 1), over queries 1 … T − 1
//   induction score       over the queries of the repeated half (i ≥ P, the
//                         period), the mean weight on the key right after
//                         the earlier occurrence of the current token:
//                         i − P + 1
//
// A uniform causal head scores about 2/T on both (each row spreads 1 over
// i + 1 keys); a perfect previous-token head scores 1 on the first, a
// perfect induction head 1 on the second (Olsson et al. 2022 measure the
// same diagonal on repeated random tokens).
//
// weights: one layer's Float32Array [heads, T, T] (batch 1), row-major, as
// the modules' forward(..., { returnWeights: true }) returns it.

/** Mean weight on key i − 1 of head h, over queries 1 … T − 1 (0 when T = 1). */
export function previousTokenScore(weights, T, h = 0) {
  if (T < 2) return 0;
  const base = h * T * T;
  let sum = 0;
  for (let i = 1; i < T; i++) sum += weights[base + i * T + i - 1];
  return sum / (T - 1);
}

/** Mean weight on key i − P + 1 of head h, over queries P … T − 1 (0 when there are none). */
export function inductionScore(weights, T, P, h = 0) {
  if (P < 1 || P >= T) return 0;
  const base = h * T * T;
  let sum = 0;
  for (let i = P; i < T; i++) sum += weights[base + i * T + i - P + 1];
  return sum / (T - P);
}

/**
 * Both scores for every head of every layer: [{ layer, head,
 * previousToken, induction }] in layer-major order. `layers` holds each
 * layer's weights [heads, T, T].
 */
export function headScores(layers, heads, T, P) {
  const out = [];
  layers.forEach((weights, layer) => {
    for (let head = 0; head < heads; head++) {
      out.push({
        layer, head,
        previousToken: previousTokenScore(weights, T, head),
        induction: inductionScore(weights, T, P, head),
      });
    }
  });
  return out;
}

/** The best induction head of `scores` (headScores'): { score, layer, head }, or null for none. */
export function bestInduction(scores) {
  let best = null;
  for (const s of scores) if (!best || s.induction > best.score) best = { score: s.induction, layer: s.layer, head: s.head };
  return best;
}

/**
 * What a perfect induction head predicts after each position of `ids`: the
 * token that followed the latest earlier occurrence of ids[i], or null when
 * ids[i] has not occurred before. Generated tokens are checked against it.
 */
export function inductionGuesses(ids) {
  const last = new Map(); // token → its latest position so far
  return Array.from(ids, (id, i) => {
    const j = last.get(id);
    last.set(id, i);
    return j === undefined ? null : ids[j + 1];
  });
}
