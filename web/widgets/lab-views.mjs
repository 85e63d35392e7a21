// The lab's views, drawn once for both labs (the Learn section's model,
// web/learn/views/lab.mjs; a loaded real model, web/model/model-lab.mjs):
//
//   head rows     per head: [data-patch-head="L.H"] data-restored (exact
//                 patching; empty where the head was not patched),
//                 [data-attrib-head="L.H"] data-estimate (attribution
//                 patching), [data-dla-head="L.H"] data-logit (direct logit);
//   composition   [data-compose="K|Q|V"][data-from="L.H"][data-to="L.H"]
//                 data-score, rows the earlier layer's heads, columns the later's;
//   logit lens    [data-lens-layer][data-position] data-token data-probability;
//   circuits      the QK circuit over tokens, the OV circuit over tokens →
//                 logits, the QK circuit over positions (heatmaps).
// Heads are 1-based on the page ("L.H"), as in the ablation buttons.

import { formatValue } from '../core/format.mjs';
import { SCALES } from './colors.mjs';
import { Heatmap } from './heatmap.mjs';

/** @type {WeakMap<HTMLElement, Heatmap>} */
const maps = new WeakMap();

/**
 * The heatmap drawn into `el` (built on first use).
 * @param {HTMLElement} el
 * @param {object} options  Heatmap's
 */
function heatmap(el, options) {
  let m = maps.get(el);
  if (!m) maps.set(el, (m = new Heatmap(el, options)));
  return m;
}

/**
 * `parent`'s children replaced by `nodes` (one at a time: their count is a
 * model's heads or layers, not bounded by the page).
 * @param {Element} parent
 * @param {Iterable<Node>} nodes
 */
export function fill(parent, nodes) {
  parent.replaceChildren();
  for (const node of nodes) parent.append(node);
}

/**
 * @param {number} l  0-based layer
 * @param {number} h  0-based head
 */
export const headName = (l, h) => `${l + 1}.${h + 1}`;

/**
 * @param {string} text
 * @param {Record<string, string>} [data]
 */
function cell(text, data = {}) {
  const td = document.createElement('td');
  td.textContent = text;
  Object.assign(td.dataset, data);
  return td;
}

/** @param {string} text */
function rowHeader(text) {
  const th = document.createElement('th');
  th.scope = 'row';
  th.textContent = text;
  return th;
}

/**
 * One row per head: patching (or empty), attribution, direct logit.
 * @param {HTMLElement} body  a tbody
 * @param {{ layer: number, head: number, restored?: number, estimate: number, logit: number }[]} rows
 */
export function drawHeadRows(body, rows) {
  fill(body, rows.map((r) => {
    const name = headName(r.layer, r.head);
    const tr = document.createElement('tr');
    tr.append(rowHeader(`layer ${r.layer + 1}, head ${r.head + 1}`),
      r.restored === undefined ? cell('') : cell(formatValue(r.restored, 2), { patchHead: name, restored: String(r.restored) }),
      cell(formatValue(r.estimate, 2), { attribHead: name, estimate: String(r.estimate) }),
      cell(formatValue(r.logit, 2), { dlaHead: name, logit: String(r.logit) }));
    return tr;
  }));
}

/**
 * Composition from every head of layer `from` to every head of layer `to`
 * (0-based), each cell "K / Q / V".
 * @param {HTMLElement} head  the header row
 * @param {HTMLElement} body  a tbody
 * @param {{ from: number, to: number, scores: { q: Float32Array, k: Float32Array, v: Float32Array } }[]} pairs
 * @param {number} heads  per layer
 */
export function drawComposition(head, body, pairs, heads) {
  const rows = [];
  for (const { from, to, scores } of pairs) {
    for (let a = 0; a < heads; a++) {
      const tr = document.createElement('tr');
      tr.append(rowHeader(`${headName(from, a)} →`));
      for (let b = 0; b < heads; b++) {
        const at = a * heads + b;
        const td = cell(['k', 'q', 'v'].map((kind) => formatValue(scores[kind][at], 2)).join(' / '));
        td.title = `from head ${headName(from, a)} to head ${headName(to, b)}: K / Q / V composition`;
        for (const kind of ['K', 'Q', 'V']) {
          const span = document.createElement('span');
          Object.assign(span.dataset, { compose: kind, from: headName(from, a), to: headName(to, b),
            score: String(scores[kind.toLowerCase()][at]) });
          td.append(span);
        }
        tr.append(td);
      }
      rows.push(tr);
    }
  }
  fill(body, rows);
  const to = pairs[0]?.to ?? 0;
  fill(head, [document.createElement('th'), ...Array.from({ length: heads }, (_, b) => {
    const th = document.createElement('th');
    th.scope = 'col';
    th.textContent = `→ ${headName(to, b)}`;
    return th;
  })]);
}

/**
 * The logit lens: a row per layer (row 0: the embeddings), a cell per
 * shown position with the top token and its probability.
 * @param {HTMLElement} body  a tbody
 * @param {{ token: number, probability: number }[][]} lens  [layer][position]
 * @param {number[]} positions  the positions shown
 * @param {(id: number) => string} text  a token's label
 */
export function drawLens(body, lens, positions, text) {
  fill(body, lens.map((layer, l) => {
    const tr = document.createElement('tr');
    fill(tr, [rowHeader(l === 0 ? 'embeddings' : `after layer ${l}`), ...positions.map((t) => {
      const x = layer[t];
      return cell(`${text(x.token)} (${formatValue(x.probability, 2)})`,
        { lensLayer: String(l), position: String(t), token: String(x.token), probability: String(x.probability) });
    })]);
    return tr;
  }));
}

/**
 * A head's circuits as heatmaps: `qk` and `ov` [n, n] over `labels`,
 * `qkPositions` [m, m] (or null: its figure hidden).
 * @param {{ qkTokens: HTMLElement, ovTokens: HTMLElement, qkPositions: HTMLElement }} into
 * @param {{ qk: Float32Array, ov: Float32Array, qkPositions: Float32Array | null }} c
 * @param {string[]} labels
 */
export function drawCircuits(into, c, labels) {
  const n = labels.length;
  const options = { scale: SCALES.signed, domain: 'symmetric', compact: true, maxCell: 10, tableLimit: 0 };
  heatmap(into.qkTokens, { ...options, name: 'QK circuit (tokens)', rowAxis: 'query token', colAxis: 'key token' })
    .setData({ values: c.qk, rows: n, cols: n, rowLabels: labels, colLabels: labels });
  heatmap(into.ovTokens, { ...options, name: 'OV circuit (tokens)', rowAxis: 'attended token', colAxis: 'logit of token' })
    .setData({ values: c.ov, rows: n, cols: n, rowLabels: labels, colLabels: labels });
  const figure = /** @type {HTMLElement} */ (into.qkPositions.closest('figure') ?? into.qkPositions);
  figure.hidden = !c.qkPositions;
  if (c.qkPositions) {
    const m = Math.round(Math.sqrt(c.qkPositions.length));
    const pos = Array.from({ length: m }, (_, t) => String(t));
    heatmap(into.qkPositions, { ...options, maxCell: 6, name: 'QK circuit (positions)', rowAxis: 'query position',
      colAxis: 'key position' }).setData({ values: c.qkPositions, rows: m, cols: m, rowLabels: pos, colLabels: pos });
  }
}

/**
 * The per-position patching grid (rows: heads, columns: positions).
 * @param {HTMLElement} el
 * @param {Float32Array} values  [rows, cols]
 * @param {string[]} rowLabels
 * @param {number} cols
 */
export function drawPatchingGrid(el, values, rowLabels, cols) {
  heatmap(el, { name: 'loss gap restored', scale: SCALES.signed, domain: 'symmetric', compact: true, maxCell: 14,
    rowAxis: 'head', colAxis: 'position', tableLimit: 0 }).setData({
    values, rows: rowLabels.length, cols, rowLabels, colLabels: Array.from({ length: cols }, (_, t) => String(t)),
  });
}
