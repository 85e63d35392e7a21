// The lab on a loaded real model (model.mjs's section). Every number is
// computed in the model's worker through the package (the page only sends
// requests and draws widgets/lab-views.mjs's views, the Learn lab's own):
//
//   patching      a clean probe (PERIOD random tokens said twice) and a
//                 corrupted one (the second half other tokens); attribution
//                 patching for every head from one forward and one backward
//                 of the corrupted run (model.backward's
//                 returnAttentionOutputGrads), then exact activation
//                 patching for the EXACT heads it ranks highest (one forward
//                 each, patchHeads). The metric: the loss of the clean
//                 repeat's targets; restored = (L_corrupt − L_patched) /
//                 (L_corrupt − L_clean);
//   direct logit  each head's direct contribution to the correct next
//                 token's logit on the clean repeat (ca.logitLens's
//                 directLogit, through the final norm's scale), averaged;
//   composition   K-, Q- and V-composition from every head of one layer to
//                 every head of a later one, the norms' scales folded into
//                 the matrices (ca.compositionScores' earlierScale/laterScale);
//   circuits      a head's QK and OV circuits over the text's distinct
//                 tokens (ca.headCircuits: n × n, not 50k × 50k);
//   logit lens    on the text: each layer's residual through the final norm
//                 and out_head, the top token and its probability, at the
//                 last LENS_POSITIONS positions (out_head over a 50k
//                 vocabulary is most of the cost).

import { repeatTargets } from '../learn/model/icl.mjs';
import { MIN_GAP, rowLosses } from '../learn/model/lab.mjs';

/** Heads patched exactly (the attribution's best). */
export const EXACT = 6;
/** Positions the logit lens shows (the text's last). */
export const LENS_POSITIONS = 12;
/** Most distinct tokens the circuits show. */
const CIRCUIT_TOKENS = 24;

/**
 * The lab's numbers for `model` (a remote GPTModel / Llama3Model of the
 * worker runtime `ca`): { lossClean, lossCorrupt, attribution: [{ layer,
 * head, estimate, logit }] sorted by estimate, exact: [{ layer, head,
 * restored }] }.
 * @param {any} ca
 * @param {any} model
 * @param {Int32Array} clean
 * @param {number} period
 * @param {{ layers: number, heads: number, vocab: number, embDim: number }} info
 */
export async function modelLab(ca, model, clean, period, info) {
  const started = performance.now();
  const { layers: L, heads: H, vocab: V, embDim: E } = info;
  const T = clean.length;
  const corrupt = clean.slice();
  for (let t = period; t < T; t++) corrupt[t] = (clean[t] + 1 + ((t * 7919) % (V - 1))) % V;
  const targets = repeatTargets(clean, period);
  // The metric: the mean loss of the clean repeat's targets (the Learn lab's).
  const repeatLoss = (/** @type {Float32Array} */ logits) => rowLosses(logits, targets, 1, V)[0];
  const c = await model.forward(clean, [1, T], { returnHeadOutputs: true });
  await model.train();
  let k;
  let grads;
  try {
    k = await model.forward(corrupt, [1, T], { returnHeadOutputs: true });
    const { gradLogits } = await ca.crossEntropy(k.logits, targets);
    grads = (await model.backward(gradLogits, { returnAttentionOutputGrads: true })).attentionOutputGrads;
  } finally {
    await model.zeroGrad();
    await model.eval();
  }
  const { directLogit } = await ca.logitLens(model, clean, { targets, positions: [] });
  const counted = targets.filter((x) => x >= 0).length;
  const lossClean = repeatLoss(c.logits);
  const lossCorrupt = repeatLoss(k.logits);
  const gap = lossCorrupt - lossClean;
  const measurable = gap >= MIN_GAP;
  const attribution = [];
  for (let l = 0; l < L; l++) {
    for (let h = 0; h < H; h++) {
      let dot = 0;
      for (let i = 0; i < T * E; i++) dot += grads[l][i] * (c.headOutputs[l][h * T * E + i] - k.headOutputs[l][h * T * E + i]);
      let logit = 0;
      for (let t = 0; t < T; t++) logit += directLogit[(l * H + h) * T + t];
      attribution.push({ layer: l, head: h, estimate: measurable ? -dot / gap : 0, logit: logit / counted });
    }
  }
  attribution.sort((a, b) => b.estimate - a.estimate);
  const exact = [];
  for (const { layer, head } of attribution.slice(0, EXACT)) {
    const values = c.headOutputs[layer].slice(head * T * E, (head + 1) * T * E);
    const logits = await model.forward(corrupt, [1, T], { patchHeads: [{ layer, heads: [head], values }] });
    exact.push({ layer, head, restored: measurable ? (lossCorrupt - repeatLoss(logits)) / gap : 0 });
  }
  return { lossClean, lossCorrupt, measurable, attribution, exact, ms: performance.now() - started };
}

/**
 * The weight of the norm before layer `layer`'s attention (LayerNorm's
 * scale, RMSNorm's weight).
 * @param {any} block  a remote transformer block
 * @param {string} type  config.json's model_type
 */
const norm1Weight = (block, type) => (type === 'gpt2' ? block.norm1.scale : block.norm1.weight);

/**
 * Composition scores from layer `from`'s heads to layer `to`'s (0-based),
 * each block's norm1 weight folded into its attention's matrices.
 * @param {any} ca
 * @param {any} model
 * @param {string} type
 * @param {number} from
 * @param {number} to
 */
export async function modelComposition(ca, model, type, from, to) {
  const [a, b] = [await model.trfBlocks.at(from), await model.trfBlocks.at(to)];
  return ca.compositionScores(await a.att, await b.att,
    { earlierScale: await norm1Weight(a, type), laterScale: await norm1Weight(b, type) });
}

/**
 * The text's distinct tokens (the first CIRCUIT_TOKENS) for the circuits.
 * @param {number[]} ids
 */
export const circuitTokens = (ids) => [...new Set(ids)].slice(0, CIRCUIT_TOKENS);
