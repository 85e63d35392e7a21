// The Learn section's lab: why a head does what it does. "Run the lab" asks
// the training worker for lab.mjs's views of the model as trained now
// (during training too: it answers between steps) and draws them:
//
//   patching      [data-patch-head="L.H"] data-restored (exact activation
//                 patching, 0 = none of the loss gap, 1 = all) beside
//                 [data-attrib-head="L.H"] data-estimate (attribution
//                 patching), their Spearman agreement, the per-position grid
//                 as a heatmap; #lab-patching data-ms the grid's time;
//   composition   [data-compose="K|Q|V"][data-from="1.H"][data-to="2.H"]
//                 data-score between consecutive layers;
//   logit lens    each layer's top token and probability at the last positions;
//   circuits      the chosen head's QK circuit over tokens and positions and
//                 its OV circuit over tokens, with what to look for.
// The tables and heatmaps are widgets/lab-views.mjs's (the real-model lab's too).

import { formatValue } from '../../core/format.mjs';
import { drawCircuits, drawComposition, drawHeadRows, drawLens, drawPatchingGrid, headName } from '../../widgets/lab-views.mjs';
import { $, learn } from './state.mjs';

const lab = { pending: false, again: false, shown: false };

export function setupLab() {
  $('lab-run').addEventListener('click', () => {
    lab.shown = true;
    request();
  });
}

/**
 * Asks the worker for the lab at the slider's checkpoint (or the current
 * weights); one request at a time, the newest wins.
 */
function request() {
  if (!learn.worker) return;
  if (lab.pending) {
    lab.again = true;
    return;
  }
  lab.pending = true;
  $('lab-run').disabled = true;
  const at = learn.checkpoint ? ` at step ${learn.checkpoint.step}` : '';
  $('lab-status').textContent = `Running the lab${at} in the training worker…`;
  const [layer, head] = $('learn-pipeline-head').value.split('.').map(Number);
  learn.worker.postMessage({ type: 'lab', head: layer ? [layer - 1, head - 1] : undefined, index: learn.checkpoint?.index });
}

/** The slider moved to a checkpoint (or back to now): a lab on screen follows it. */
export function followCheckpoint() {
  if (lab.shown) request();
}

/** The worker's answer; true when `m` was one. */
export function onLabMessage(m) {
  if (m.type !== 'lab') return false;
  lab.pending = false;
  $('lab-run').disabled = false;
  if (lab.again) {
    lab.again = false;
    request();
    return true;
  }
  draw(m.result);
  return true;
}

function draw(r) {
  const { heads: H, layers: L, tokens: T } = r;
  $('lab').dataset.step = String(r.step);
  $('lab-status').textContent = `Step ${r.step}: clean probe loss ${formatValue(r.lossClean, 3)}, corrupted ${formatValue(r.lossCorrupt, 3)} ` +
    `(the repeat's targets; the corrupted probe's second half is other tokens). Lab in ${r.ms.toFixed(0)} ms.` +
    (r.measurable ? '' : ' The repeat is no easier than the corrupted sequence yet (no induction): nothing to restore.');
  // Patching: exact and attribution per head.
  const patching = $('lab-patching');
  patching.dataset.ms = r.patchingMs.toFixed(1);
  drawHeadRows($('lab-patching-body'), r.patching.map((p, i) => ({ layer: p.layer, head: p.head, restored: p.restored,
    estimate: r.attribution[i].estimate, logit: r.directLogit[i].logit })));
  $('lab-agreement').textContent = `Every head patched alone (${r.patching.length} heads × ${T} positions and each whole ` +
    `head; per layer the rows share the run up to that layer and the later layers run once on all of them) took ${r.patchingMs.toFixed(0)} ms. Attribution patching ranks the heads ` +
    `as exact patching does with Spearman ${formatValue(r.agreement, 2)}. Whole layers: ` +
    r.layerRestored.map((x, l) => `layer ${l + 1} restores ${formatValue(x, 2)}`).join(', ') + '.';
  $('lab-agreement').dataset.spearman = String(r.agreement);
  const grid = new Float32Array(L * H * T);
  r.patching.forEach((p, i) => grid.set(p.positions, i * T));
  drawPatchingGrid($('lab-grid'), grid, r.patching.map((p) => headName(p.layer, p.head)), T);
  // Composition between consecutive layers.
  drawComposition($('lab-composition-head'), $('lab-composition-body'),
    r.composition.map((scores, l) => ({ from: l, to: l + 1, scores })), H);
  // Logit lens at the last positions.
  const last = Math.min(12, T);
  drawLens($('lab-lens-body'), r.lens, Array.from({ length: last }, (_, k) => T - last + k), String);
  // Circuits of the chosen head.
  const c = r.circuits;
  $('lab-circuits-title').textContent = `Circuits of layer ${c.layer + 1}, head ${c.head + 1}`;
  $('lab-circuits').dataset.head = headName(c.layer, c.head);
  drawCircuits({ qkTokens: $('lab-qk-tokens'), ovTokens: $('lab-ov-tokens'), qkPositions: $('lab-qk-positions') },
    { qk: c.qkTokens, ov: c.ovTokens, qkPositions: c.qkPositions }, Array.from({ length: r.vocab }, (_, v) => String(v)));
  document.getElementById('lab').dataset.ready = String(Number(document.getElementById('lab').dataset.ready ?? 0) + 1);
}
