// The lab on a loaded real model (model.mjs's section), in its worker
// through the package's hooks: a clean probe (PERIOD random tokens said
// twice) and a corrupted one (the second half other tokens); attribution
// patching for every head from one forward and one backward of the
// corrupted run (model.backward's returnAttentionOutputGrads), then exact
// activation patching for the EXACT heads it ranks highest (one forward
// each, patchHeads). The metric: the loss of the clean repeat's targets;
// restored = (L_corrupt − L_patched) / (L_corrupt − L_clean).
//
// Hooks: #model-lab data-ready (a counter), data-ms; per head
// [data-model-attrib-head="L.H"] data-estimate; [data-model-patch-head="L.H"]
// data-restored for the heads patched exactly.

import { repeatTargets } from '../learn/model/icl.mjs';
import { MIN_GAP, rowLosses } from '../learn/model/lab.mjs';

/** Heads patched exactly (the attribution's best). */
export const EXACT = 6;

/**
 * The lab's numbers for `model` (a remote GPTModel / Llama3Model of the
 * worker runtime `ca`): { lossClean, lossCorrupt, attribution: [{ layer,
 * head, estimate }] sorted by estimate, exact: [{ layer, head, restored }] }.
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
  const lossClean = repeatLoss(c.logits);
  const lossCorrupt = repeatLoss(k.logits);
  const gap = lossCorrupt - lossClean;
  const measurable = gap >= MIN_GAP;
  const attribution = [];
  for (let l = 0; l < L; l++) {
    for (let h = 0; h < H; h++) {
      let dot = 0;
      for (let i = 0; i < T * E; i++) dot += grads[l][i] * (c.headOutputs[l][h * T * E + i] - k.headOutputs[l][h * T * E + i]);
      attribution.push({ layer: l, head: h, estimate: measurable ? -dot / gap : 0 });
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
 * Draws the lab's numbers into #model-lab-body.
 * @param {Awaited<ReturnType<typeof modelLab>>} r
 */
export function drawModelLab(r) {
  const exact = new Map(r.exact.map((e) => [`${e.layer}.${e.head}`, e.restored]));
  const rows = r.attribution.slice(0, 12).map((a) => {
    const tr = document.createElement('tr');
    const name = `${a.layer + 1}.${a.head + 1}`;
    const restored = exact.get(`${a.layer}.${a.head}`);
    const cells = [
      [name, {}],
      [a.estimate.toFixed(3), { modelAttribHead: name, estimate: String(a.estimate) }],
      [restored === undefined ? '' : restored.toFixed(3), restored === undefined ? {} : { modelPatchHead: name, restored: String(restored) }],
    ];
    for (const [text, data] of cells) {
      const td = document.createElement('td');
      td.textContent = text;
      Object.assign(td.dataset, data);
      tr.append(td);
    }
    return tr;
  });
  document.getElementById('model-lab-body')?.replaceChildren(...rows);
  const box = /** @type {HTMLElement} */ (document.getElementById('model-lab'));
  box.dataset.ms = r.ms.toFixed(0);
  box.dataset.ready = String(Number(box.dataset.ready ?? 0) + 1);
  const note = document.getElementById('model-lab-note');
  if (note) {
    note.textContent = `Clean repeat loss ${r.lossClean.toFixed(3)}, corrupted ${r.lossCorrupt.toFixed(3)}; ` +
      `every head's attribution from one forward and one backward, the best ${r.exact.length} patched exactly, ` +
      `in ${(r.ms / 1000).toFixed(1)} s.` +
      (r.measurable ? '' : ' The repeat is no easier than the corrupted sequence: this model has no induction to restore.');
  }
}
