// The interpretability lab on the Learn model (a Trainer's
// AttentionOnlyTransformer), computed with the package's hooks
// (returnHeadOutputs, patchHeads, compositionScores, qkCircuit, ovCircuit):
//
//   composition   K-, Q- and V-composition from every layer-l head into every
//                 layer-(l + 1) head;
//   patching      a clean probe (a random sequence said twice) and a
//                 corrupted one (its second half replaced by other random
//                 tokens); the metric is the loss of the clean run's repeat
//                 targets. Each head's output from the clean run is patched
//                 into the corrupted run, at every position and at each
//                 position alone; `restored` is the fraction of the loss gap
//                 it closes, (L_corrupt − L_patched) / (L_corrupt − L_clean).
//                 One batched forward per layer and kind: row r patches one
//                 (head, position) and every other head of that layer with
//                 its own corrupted output (same bits as not patching it);
//   attribution   the same estimate for every head from one forward and one
//                 backward of the corrupted run: −Σ gradient · (clean −
//                 corrupted output) over the loss gap, and its Spearman
//                 agreement with the exact patching;
//   logit lens    each layer's residual stream through the unembedding: the
//                 top token and its probability per position;
//   direct logit  each head's output through the unembedding row of the
//   attribution   correct (clean target) token, averaged over the repeat;
//   circuits      a head's QK circuit over the token embeddings (E W_QK Eᵀ)
//                 and the position embeddings (P W_QK Pᵀ), its OV circuit
//                 through the unembedding (E W_OV W_Uᵀ).
// No DOM: the training worker runs it (worker.mjs) and Node tests import it.

import { headScores } from './metrics.mjs';

/** The smallest loss gap (nats) whose fractions the lab reports. */
export const MIN_GAP = 0.05;
import { repeatTargets } from './icl.mjs';
import { IGNORE } from './tasks.mjs';

/**
 * The corrupted probe: the clean one with its second half (from the period
 * on) replaced by other tokens of the vocabulary (a seeded shift, never the
 * clean token).
 * @param {Int32Array} clean
 * @param {number} period
 * @param {number} vocab
 */
export function corruptProbe(clean, period, vocab) {
  const ids = clean.slice();
  for (let i = period; i < ids.length; i++) ids[i] = (clean[i] + 1 + ((i * 7) % (vocab - 1))) % vocab;
  return ids;
}

/**
 * Mean loss of `targets` (IGNORE skipped) per batch row of logits [rows, T, V].
 * @param {Float32Array} logits
 * @param {Int32Array} targets  [T]
 * @param {number} rows
 * @param {number} vocab
 */
export function rowLosses(logits, targets, rows, vocab) {
  const T = targets.length;
  return Array.from({ length: rows }, (_, r) => {
    let sum = 0;
    let n = 0;
    for (let t = 0; t < T; t++) {
      if (targets[t] === IGNORE) continue;
      const at = (r * T + t) * vocab;
      let max = -Infinity;
      for (let v = 0; v < vocab; v++) max = Math.max(max, logits[at + v]);
      let z = 0;
      for (let v = 0; v < vocab; v++) z += Math.exp(logits[at + v] - max);
      sum += Math.log(z) + max - logits[at + targets[t]];
      n += 1;
    }
    return sum / n;
  });
}

/**
 * Spearman's rank correlation of two equal-length lists (ties: average rank).
 * @param {number[]} a
 * @param {number[]} b
 */
export function spearman(a, b) {
  const rank = (/** @type {number[]} */ v) => {
    const order = v.map((x, i) => [x, i]).sort((p, q) => p[0] - q[0]);
    const r = new Array(v.length);
    for (let i = 0; i < order.length;) {
      let j = i;
      while (j + 1 < order.length && order[j + 1][0] === order[i][0]) j++;
      for (let k = i; k <= j; k++) r[order[k][1]] = (i + j) / 2;
      i = j + 1;
    }
    return r;
  };
  const [ra, rb] = [rank(a), rank(b)];
  const mean = (ra.length - 1) / 2;
  let num = 0;
  let da = 0;
  let db = 0;
  for (let i = 0; i < ra.length; i++) {
    num += (ra[i] - mean) * (rb[i] - mean);
    da += (ra[i] - mean) ** 2;
    db += (rb[i] - mean) ** 2;
  }
  return da && db ? num / Math.sqrt(da * db) : 0;
}

/**
 * Every view of the lab for the trainer's current parameters.
 * @param {{ ca: any, model: any, probeIds: Int32Array, period: number, vocab: number, tokens: number,
 *   settings: { heads: number, layers: number } }} trainer
 * @param {{ head?: [number, number] }} [options]  the head whose circuits are drawn (default: the best induction head)
 */
export function runLab(trainer, { head } = {}) {
  const started = performance.now();
  const { ca, model, probeIds: clean, period: P, vocab: V, tokens: T } = trainer;
  const { heads: H, layers: L } = trainer.settings;
  const d = model.dModel;
  const corrupt = corruptProbe(clean, P, V);
  const targets = repeatTargets(clean, P);
  model.eval();
  const c = model.forwardHooked(clean, 1, T);
  const k = model.forwardHooked(corrupt, 1, T);
  const [lossClean] = rowLosses(c.logits, targets, 1, V);
  const [lossCorrupt] = rowLosses(k.logits, targets, 1, V);
  const gap = lossCorrupt - lossClean;
  // Below MIN_GAP the repeat is no easier than the corrupted sequence (before
  // induction forms): fractions of it would be noise, so they read 0.
  const measurable = gap >= MIN_GAP;
  const restoredOf = (/** @type {number} */ loss) => (measurable ? (lossCorrupt - loss) / gap : 0);

  // Exact patching, one batched forward per layer and kind.
  const tPatch = performance.now();
  /** @type {{ layer: number, head: number, restored: number, positions: number[] }[]} */
  const patching = [];
  /** Per layer: every head of the layer patched at once. */
  const layerRestored = [];
  for (let l = 0; l < L; l++) {
    const own = k.headOutputs[l]; // [1, H, T, d]
    const clean1 = c.headOutputs[l];
    // Rows: H (head at every position), then H·T (head at one position),
    // then the whole layer (every head, every position).
    const rows = H + H * T + 1;
    const values = new Float32Array(rows * H * T * d);
    for (let r = 0; r < rows - 1; r++) {
      values.set(own, r * H * T * d);
      const h = r < H ? r : Math.floor((r - H) / T);
      const from = r < H ? 0 : (r - H) % T;
      const to = r < H ? T : from + 1;
      values.set(clean1.subarray((h * T + from) * d, (h * T + to) * d), ((r * H + h) * T + from) * d);
    }
    values.set(clean1, (rows - 1) * H * T * d);
    const ids = new Int32Array(rows * T);
    for (let r = 0; r < rows; r++) ids.set(corrupt, r * T);
    const patches = [];
    patches[l] = { heads: [...Array(H).keys()], values };
    const losses = rowLosses(model.forwardHooked(ids, rows, T, { patches }).logits, targets, rows, V);
    layerRestored.push(restoredOf(losses[rows - 1]));
    for (let h = 0; h < H; h++) {
      patching.push({
        layer: l, head: h, restored: restoredOf(losses[h]),
        positions: Array.from({ length: T }, (_, t) => restoredOf(losses[H + h * T + t])),
      });
    }
  }
  const patchingMs = performance.now() - tPatch;

  // Attribution patching: one forward and one backward of the corrupted run.
  model.train();
  const kTrain = model.forwardHooked(corrupt, 1, T);
  const { gradLogits } = ca.crossEntropy(kTrain.logits, targets, { ignoreIndex: IGNORE });
  const streamGrads = model.backward(gradLogits);
  for (const p of model.net.parameters()) p.grad = null; // the lab does not train
  model.eval();
  const attribution = [];
  for (let l = 0; l < L; l++) {
    for (let h = 0; h < H; h++) {
      let dot = 0;
      for (let i = 0; i < T * d; i++) {
        const at = h * T * d + i;
        dot += streamGrads[l][i] * (c.headOutputs[l][at] - kTrain.headOutputs[l][at]);
      }
      attribution.push({ layer: l, head: h, estimate: measurable ? -dot / gap : 0 });
    }
  }
  const agreement = spearman(patching.map((p) => p.restored), attribution.map((a) => a.estimate));

  // Composition between consecutive layers: [from head, to head] per kind.
  const composition = [];
  for (let l = 0; l + 1 < L; l++) composition.push(ca.compositionScores(model.attention[l], model.attention[l + 1]));

  // Logit lens and direct logit attribution on the clean probe.
  const W = model.unembed.weight; // [V, d]
  const bias = model.unembed.bias;
  const lens = c.residual.map((x) => Array.from({ length: T }, (_, t) => {
    let best = 0;
    let bestLogit = -Infinity;
    const logits = new Float64Array(V);
    for (let v = 0; v < V; v++) {
      let s = bias ? bias[v] : 0;
      for (let e = 0; e < d; e++) s += x[t * d + e] * W[v * d + e];
      logits[v] = s;
      if (s > bestLogit) [best, bestLogit] = [v, s];
    }
    const z = logits.reduce((a, s) => a + Math.exp(s - bestLogit), 0);
    return { token: best, probability: 1 / z };
  }));
  const directLogit = [];
  for (let l = 0; l < L; l++) {
    for (let h = 0; h < H; h++) {
      let sum = 0;
      let n = 0;
      for (let t = 0; t < T; t++) {
        if (targets[t] === IGNORE) continue;
        for (let e = 0; e < d; e++) sum += c.headOutputs[l][(h * T + t) * d + e] * W[targets[t] * d + e];
        n += 1;
      }
      directLogit.push({ layer: l, head: h, logit: sum / n });
    }
  }

  // The chosen head's circuits over the embeddings.
  const scores = headScores(model.forward(clean, 1, T, { returnWeights: true }).weights, H, T, P);
  const best = scores.reduce((a, b) => (b.induction > a.induction ? b : a));
  const [cl, ch] = head ?? [best.layer, best.head];
  const att = model.attention[cl];
  const E = model.tokenEmbedding.weight; // [V, d]
  const qk = att.qkCircuit(ch);
  const ov = att.ovCircuit(ch);
  const EW = (/** @type {Float32Array} */ M, /** @type {Float32Array} */ rows, /** @type {number} */ n) => {
    const y = new Float32Array(n * d);
    for (let i = 0; i < n; i++) for (let j = 0; j < d; j++) {
      let s = 0;
      for (let e = 0; e < d; e++) s += rows[i * d + e] * M[e * d + j];
      y[i * d + j] = s;
    }
    return y;
  };
  const times = (/** @type {Float32Array} */ A, /** @type {Float32Array} */ Bm, /** @type {number} */ n, /** @type {number} */ m) => {
    const y = new Float32Array(n * m);
    for (let i = 0; i < n; i++) for (let j = 0; j < m; j++) {
      let s = 0;
      for (let e = 0; e < d; e++) s += A[i * d + e] * Bm[j * d + e];
      y[i * m + j] = s;
    }
    return y;
  };
  const Pm = model.positionEmbedding?.weight.subarray(0, T * d) ?? null;
  const circuits = {
    layer: cl, head: ch,
    qkTokens: times(EW(qk, E, V), E, V, V), // [query token, key token]
    qkPositions: Pm ? times(EW(qk, Pm, T), Pm, T, T) : null, // [query position, key position]
    ovTokens: times(EW(ov, E, V), W, V, V), // [attended token, output logit]
  };

  return {
    tokens: T, period: P, vocab: V, layers: L, heads: H, clean, corrupt, lossClean, lossCorrupt, measurable,
    patching, layerRestored, patchingMs, attribution, agreement, composition, lens, directLogit, circuits, scores,
    ms: performance.now() - started,
  };
}
