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
//                 Per layer the rows share the corrupted run up to and
//                 including that layer's attention; only the heads' sum
//                 differs, and the later layers run once on all rows
//                 (patchedLosses);
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
 * The repeat's loss of every row of layer `l`'s patching grid: row 0 the
 * corrupted run, then each head patched at every position (H rows), each
 * head at each position alone (H·T rows, head-major), every head at once.
 * The rows share everything before layer l (the corrupted run `k`'s
 * residual stream entering it) and layer l's attention itself (its heads'
 * outputs `k.headOutputs[l]`): a row differs only in which heads' outputs
 * are summed into the stream, summed as the package's patchHeads sums them
 * (out_proj's bias, then each head's own or clean output in head order, in
 * float32), so a row gives the bits of a patchHeads forward and a patch
 * equal to the head's own output changes nothing. Only the layers after l
 * run, once, on all rows together.
 * @param {any} model  the AttentionOnlyTransformer (eval mode)
 * @param {{ residual: Float32Array[], headOutputs: Float32Array[] }} k  the corrupted run's forwardHooked
 * @param {{ headOutputs: Float32Array[] }} c  the clean run's
 * @param {number} l
 * @param {Int32Array} targets
 * @returns {number[]}
 */
export function patchedLosses(model, k, c, l, targets) {
  const { heads: H, dModel: d, vocab: V } = model;
  const T = targets.length;
  const own = k.headOutputs[l]; // [1, H, T, d]
  const clean = c.headOutputs[l];
  const bias = model.attention[l].outProj?.bias ?? null;
  const x = k.residual[l]; // [T, d]
  /** x[t] + (bias + Σ_h head h's output at t), head h's taken from `from(h)`. */
  const acc = new Float32Array(d);
  const stream = (/** @type {Float32Array} */ into, /** @type {number} */ at, /** @type {number} */ t,
    /** @type {(h: number) => Float32Array} */ from) => {
    if (bias) acc.set(bias);
    else acc.fill(0);
    for (let h = 0; h < H; h++) {
      const src = from(h);
      const o = (h * T + t) * d;
      for (let e = 0; e < d; e++) acc[e] += src[o + e];
    }
    for (let e = 0; e < d; e++) into[at + e] = x[t * d + e] + acc[e];
  };
  const base = new Float32Array(T * d); // the corrupted stream after layer l
  for (let t = 0; t < T; t++) stream(base, t * d, t, () => own);
  const patched = (/** @type {number} */ head) => (/** @type {number} */ h) => (h === head ? clean : own);
  // Head h at position t alone: the stream at t; a row that equals the
  // corrupted run bit for bit (before the repeat, where the clean and
  // corrupted runs are the same) would give row 0's loss exactly: it maps
  // to row 0 and is not run.
  const alone = new Float32Array(H * T * d);
  /** Logical row (1 + H + h·T + t) → the row run. */
  const runRow = new Int32Array(H * T);
  let distinct = 0;
  for (let h = 0; h < H; h++) {
    for (let t = 0; t < T; t++) {
      const at = (h * T + t) * d;
      stream(alone, at, t, patched(h));
      let same = true;
      for (let e = 0; e < d && same; e++) same = alone[at + e] === base[t * d + e];
      runRow[h * T + t] = same ? 0 : 1 + H + distinct++;
    }
  }
  const rows = 1 + H + distinct + 1;
  const X = new Float32Array(rows * T * d);
  for (let r = 0; r < rows; r++) X.set(base, r * T * d);
  for (let h = 0; h < H; h++) {
    for (let t = 0; t < T; t++) {
      stream(X, ((1 + h) * T + t) * d, t, patched(h)); // head h at every position
      const r = runRow[h * T + t];
      if (r) X.set(alone.subarray((h * T + t) * d, (h * T + t + 1) * d), (r * T + t) * d);
    }
  }
  for (let t = 0; t < T; t++) stream(X, ((rows - 1) * T + t) * d, t, () => clean);
  const losses = rowLosses(model.forwardFrom(X, rows, T, l + 1), targets, rows, V);
  return [...losses.slice(0, 1 + H), ...Array.from(runRow, (r) => losses[r]), losses[rows - 1]];
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

  // Exact patching: per layer, one batched run of the layers after it.
  const tPatch = performance.now();
  /** @type {{ layer: number, head: number, restored: number, positions: number[] }[]} */
  const patching = [];
  /** Per layer: every head of the layer patched at once. */
  const layerRestored = [];
  for (let l = 0; l < L; l++) {
    const losses = patchedLosses(model, k, c, l, targets);
    // Row 0 is the corrupted run itself, through the same arithmetic as the patched rows.
    const restoredAt = (/** @type {number} */ r) => (measurable ? (losses[0] - losses[r]) / gap : 0);
    layerRestored.push(restoredAt(1 + H + H * T));
    for (let h = 0; h < H; h++) {
      patching.push({
        layer: l, head: h, restored: restoredAt(1 + h),
        positions: Array.from({ length: T }, (_, t) => restoredAt(1 + H + h * T + t)),
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
