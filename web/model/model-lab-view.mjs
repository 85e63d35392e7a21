// Draws the real-model lab's views (model-lab.mjs's numbers) with the
// Learn lab's widgets (widgets/lab-views.mjs).
//
// Hooks: #model-lab data-ready (a counter, after "Find the circuit"),
// data-views (a counter, after a select redrew a view), data-ms,
// data-probe; the views' data- attributes (lab-views.mjs) inside
// #model-lab; #model-lab-circuits data-head; #model-lab-composition
// data-from-layer / data-to-layer (1-based).

import { drawCircuits, drawComposition, drawHeadRows, drawLens, headName } from '../widgets/lab-views.mjs';

/** @import { modelLab } from './model-lab.mjs' */

/** Heads the table lists (the attribution's best). */
const LISTED = 12;

const $ = (/** @type {string} */ id) => /** @type {HTMLElement} */ (document.getElementById(id));

/**
 * Draws the lab's patching numbers into #model-lab-body.
 * @param {Awaited<ReturnType<typeof modelLab>>} r
 */
export function drawModelLab(r) {
  const exact = new Map(r.exact.map((e) => [`${e.layer}.${e.head}`, e.restored]));
  drawHeadRows($('model-lab-body'), r.attribution.slice(0, LISTED).map((a) => ({
    ...a, restored: exact.get(`${a.layer}.${a.head}`),
  })));
  const box = $('model-lab');
  box.dataset.ms = r.ms.toFixed(0);
  $('model-lab-note').textContent = `Clean repeat loss ${r.lossClean.toFixed(3)}, corrupted ${r.lossCorrupt.toFixed(3)}; ` +
    `every head's attribution from one forward and one backward, the best ${r.exact.length} patched exactly, ` +
    `in ${(r.ms / 1000).toFixed(1)} s. Direct logit: the head's own contribution to the correct next token's logit ` +
    'on the clean repeat, through the final norm.' +
    (r.measurable ? '' : ' The repeat is no easier than the corrupted sequence: this model has no induction to restore.');
}

/**
 * Draws composition scores from layer `from` to layer `to` (0-based).
 * @param {{ q: Float32Array, k: Float32Array, v: Float32Array }} scores
 * @param {number} from
 * @param {number} to
 * @param {number} heads
 */
export function drawModelComposition(scores, from, to, heads) {
  drawComposition($('model-lab-composition-head'), $('model-lab-composition-body'), [{ from, to, scores }], heads);
  Object.assign($('model-lab-composition').dataset, { fromLayer: String(from + 1), toLayer: String(to + 1) });
}

/**
 * Draws a head's circuits over `tokens`, labelled by `text`.
 * @param {{ qk: Float32Array, ov: Float32Array, qkPositions: Float32Array | null }} c
 * @param {number} layer
 * @param {number} head
 * @param {number[]} tokens
 * @param {(id: number) => string} text
 */
export function drawModelCircuits(c, layer, head, tokens, text) {
  $('model-lab-circuits-title').textContent = `Circuits of layer ${layer + 1}, head ${head + 1} over the text\u2019s tokens`;
  $('model-lab-circuits').dataset.head = headName(layer, head);
  drawCircuits({ qkTokens: $('model-lab-qk-tokens'), ovTokens: $('model-lab-ov-tokens'), qkPositions: $('model-lab-qk-positions') },
    c, tokens.map(text));
}

/**
 * Draws ca.logitLens's result at `positions` (the ones it was asked for).
 * @param {{ tokens: Int32Array, probabilities: Float32Array }} lens
 * @param {number[]} positions
 * @param {(id: number) => string} text
 */
export function drawModelLens(lens, positions, text) {
  const n = positions.length;
  const layers = lens.tokens.length / n;
  // drawLens reads layer[t] at each shown position t.
  const rows = Array.from({ length: layers }, (_, l) => {
    const row = [];
    positions.forEach((t, i) => { row[t] = { token: lens.tokens[l * n + i], probability: lens.probabilities[l * n + i] }; });
    return row;
  });
  drawLens($('model-lab-lens-body'), rows, positions, text);
}
