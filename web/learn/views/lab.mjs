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
// Heads are 1-based on the page ("L.H"), as in the ablation buttons.

import { formatValue } from '../../core/format.mjs';
import { SCALES } from '../../widgets/colors.mjs';
import { Heatmap } from '../../widgets/heatmap.mjs';
import { $, learn } from './state.mjs';

const lab = { maps: new Map(), pending: false, again: false, shown: false };

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

/** A heatmap kept by id (built once). */
function map(id, options) {
  if (!lab.maps.has(id)) lab.maps.set(id, new Heatmap($(id), options));
  return lab.maps.get(id);
}

const name = (l, h) => `${l + 1}.${h + 1}`;

function cell(text, data = {}) {
  const td = document.createElement('td');
  td.textContent = text;
  Object.assign(td.dataset, data);
  return td;
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
  $('lab-patching-body').replaceChildren(...r.patching.map((p, i) => {
    const a = r.attribution[i];
    const tr = document.createElement('tr');
    const th = document.createElement('th');
    th.scope = 'row';
    th.textContent = `layer ${p.layer + 1}, head ${p.head + 1}`;
    tr.append(th,
      cell(formatValue(p.restored, 2), { patchHead: name(p.layer, p.head), restored: String(p.restored) }),
      cell(formatValue(a.estimate, 2), { attribHead: name(a.layer, a.head), estimate: String(a.estimate) }),
      cell(formatValue(r.directLogit[i].logit, 2), { dlaHead: name(p.layer, p.head), logit: String(r.directLogit[i].logit) }));
    return tr;
  }));
  $('lab-agreement').textContent = `Every head patched alone (${r.patching.length} heads × ${T} positions and each whole ` +
    `head, one batched forward per layer) took ${r.patchingMs.toFixed(0)} ms. Attribution patching ranks the heads ` +
    `as exact patching does with Spearman ${formatValue(r.agreement, 2)}. Whole layers: ` +
    r.layerRestored.map((x, l) => `layer ${l + 1} restores ${formatValue(x, 2)}`).join(', ') + '.';
  $('lab-agreement').dataset.spearman = String(r.agreement);
  const grid = new Float32Array(L * H * T);
  r.patching.forEach((p, i) => grid.set(p.positions, i * T));
  map('lab-grid', { name: 'loss gap restored', scale: SCALES.signed, domain: 'symmetric', compact: true, maxCell: 14,
    rowAxis: 'head', colAxis: 'position', tableLimit: 0 }).setData({
    values: grid, rows: L * H, cols: T,
    rowLabels: r.patching.map((p) => name(p.layer, p.head)), colLabels: Array.from({ length: T }, (_, t) => String(t)),
  });
  // Composition between consecutive layers.
  const rows = [];
  r.composition.forEach((c, l) => {
    for (let a = 0; a < H; a++) {
      const tr = document.createElement('tr');
      const th = document.createElement('th');
      th.scope = 'row';
      th.textContent = `${name(l, a)} →`;
      tr.append(th);
      for (let b = 0; b < H; b++) {
        const td = document.createElement('td');
        td.textContent = ['K', 'Q', 'V'].map((kind) => formatValue(c[kind.toLowerCase()][a * H + b], 2)).join(' / ');
        td.title = `from head ${name(l, a)} to head ${name(l + 1, b)}: K / Q / V composition`;
        for (const kind of ['K', 'Q', 'V']) {
          const span = document.createElement('span');
          Object.assign(span.dataset, { compose: kind, from: name(l, a), to: name(l + 1, b),
            score: String(c[kind.toLowerCase()][a * H + b]) });
          td.append(span);
        }
        tr.append(td);
      }
      rows.push(tr);
    }
  });
  $('lab-composition-body').replaceChildren(...rows);
  $('lab-composition-head').replaceChildren(...[document.createElement('th'),
    ...Array.from({ length: H }, (_, b) => {
      const th = document.createElement('th');
      th.scope = 'col';
      th.textContent = `→ ${L > 1 ? 2 : 1}.${b + 1}`;
      return th;
    })]);
  // Logit lens at the last positions.
  const last = Math.min(12, T);
  const lensRows = r.lens.map((layer, l) => {
    const tr = document.createElement('tr');
    const th = document.createElement('th');
    th.scope = 'row';
    th.textContent = l === 0 ? 'embeddings' : `after layer ${l}`;
    tr.append(th, ...layer.slice(T - last).map((x, k) => cell(`${x.token} (${formatValue(x.probability, 2)})`,
      { lensLayer: String(l), position: String(T - last + k), token: String(x.token), probability: String(x.probability) })));
    return tr;
  });
  $('lab-lens-body').replaceChildren(...lensRows);
  // Circuits of the chosen head.
  const c = r.circuits;
  const ids = Array.from({ length: r.vocab }, (_, v) => String(v));
  $('lab-circuits-title').textContent = `Circuits of layer ${c.layer + 1}, head ${c.head + 1}`;
  $('lab-circuits').dataset.head = name(c.layer, c.head);
  map('lab-qk-tokens', { name: 'QK circuit (tokens)', scale: SCALES.signed, domain: 'symmetric', compact: true, maxCell: 10,
    rowAxis: 'query token', colAxis: 'key token', tableLimit: 0 }).setData({
    values: c.qkTokens, rows: r.vocab, cols: r.vocab, rowLabels: ids, colLabels: ids });
  map('lab-ov-tokens', { name: 'OV circuit (tokens)', scale: SCALES.signed, domain: 'symmetric', compact: true, maxCell: 10,
    rowAxis: 'attended token', colAxis: 'logit of token', tableLimit: 0 }).setData({
    values: c.ovTokens, rows: r.vocab, cols: r.vocab, rowLabels: ids, colLabels: ids });
  $('lab-qk-positions').hidden = !c.qkPositions;
  if (c.qkPositions) {
    const pos = Array.from({ length: T }, (_, t) => String(t));
    map('lab-qk-positions', { name: 'QK circuit (positions)', scale: SCALES.signed, domain: 'symmetric', compact: true,
      maxCell: 6, rowAxis: 'query position', colAxis: 'key position', tableLimit: 0 }).setData({
      values: c.qkPositions, rows: T, cols: T, rowLabels: pos, colLabels: pos });
  }
  document.getElementById('lab').dataset.ready = String(Number(document.getElementById('lab').dataset.ready ?? 0) + 1);
}
