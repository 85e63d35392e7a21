// The page's words: the notes under the panels, the route line, the
// inspector's and the selected row's sentences, the status line. Functions
// of a result (pipeline.mjs runPipeline) and the settings (state.mjs) that
// return plain strings; app.mjs puts them in place with textContent.
// Sentences that never change live in index.html.

import { formatMs, formatValue, tokenName } from '../core/format.mjs';
import { isMasked } from '../core/mask.mjs';
import { D_IN, MAX_TOKENS } from '../core/tokens.mjs';

const MINUS_INF = '\u2212\u221e';

/** The engine line: SIMD target, build, threads and whether the page is isolated. */
export function engineLine(ca, isolated) {
  return `Engine: ${ca.target} SIMD, ${ca.build} build, ${ca.threads} ` +
    `thread${ca.threads === 1 ? '' : 's'}` +
    (isolated ? ' (page cross-origin isolated)' : ' (page not cross-origin isolated: single-threaded fallback)');
}

/** The time of the last forward pass, of every matrix, and of the redraw. */
export function timingLine(r, redrawMs) {
  return `\u00b7 last forward pass ${formatMs(r.forwardMs)} ms \u00b7 all matrices ` +
    `${formatMs(r.computeMs)} ms \u00b7 redraw ${formatMs(redrawMs)} ms (T = ${r.T})`;
}

/** How many tokens the text has (and how many are used). */
export function tokenCount(T, total) {
  if (T === 0) return 'Type some text: no tokens yet.';
  return `${T} token${T === 1 ? '' : 's'}` + (total > T ? ` (the first ${MAX_TOKENS} of ${total})` : '') +
    '. Hover a token for its id and embedding.';
}

/** A token chip's tooltip: exact text, id, embedding x, and whether it asks. */
export function chipTitle(token, x, row) {
  return `${tokenName(token.text)}${token.partial ? ' (a byte piece of a multi-byte character)' : ''} ` +
    `\u00b7 token id ${token.id} \u00b7 x = [${x.join(', ')}]` +
    (row < 0 ? ' \u00b7 key only (not a query)' : '');
}

/** The pipeline's heading. */
export function pipelineTitle(r) {
  return r.H > 1 ? `The pipeline, head ${r.head + 1} of ${r.H}` : 'The pipeline';
}

/** Which module ran, its sizes, and the call that computed the panels. */
export function routeLine(r, state) {
  const m = r.mod;
  return `${m.kind} (listing ${m.listing}), d_in ${D_IN}, d_out ${state.dOut}` +
    `${r.H > 1 ? `, ${r.H} heads of ${r.hd}` : ''}, ${r.Tq} quer${r.Tq === 1 ? 'y' : 'ies'} \u00d7 ${r.T} keys. ` +
    `Computed by ${r.route.call}.`;
}

/** The notes under the panels, by panel id (renorm only when that route ran). */
export function panelNotes(r, state) {
  const hd = r.hd;
  const notes = {
    scaled: `Divided by \u221a${hd} (the head size d_k), i.e. \u00d7 ${formatValue(r.scale)}, ` +
      'so the softmax does not saturate as d_k grows.',
    masked: r.maskShift === null
      ? 'Causal mask off: nothing is masked, every query sees the future too.'
      : `Scores of future keys set to ${MINUS_INF} (${state.alignment}` +
        `${r.maskShift > 0 ? `: query i sees keys up to i + ${r.maskShift}` : ''}).`,
    weights: r.maskShift === null
      ? 'softmax over every key: each row sums to 1.'
      : 'softmax per row: e^\u2212\u221e = 0, so the future gets weight 0 and each row still sums to 1.',
    dropout: r.dropoutActive
      ? `p = ${state.dropout}: each weight dropped with probability p, the kept ones \u00d7 1/(1 \u2212 p) = ` +
        `\u00d7 ${formatValue(r.dropoutScale, 2)}, so rows no longer sum to 1.`
      : `Dropout is off (${state.training ? 'p = 0' : 'eval mode'}): the weights pass unchanged.`,
    context: 'Weights \u00d7 V: row i mixes the value vectors of the keys it sees. ' +
      (r.route.kind === 'model' ? `This head's own ${r.hd} values, before the heads merge and out_proj.`
        : r.mod.kind === 'MultiHeadAttention' ? 'All heads, merged and through out_proj.'
        : r.mod.kind === 'MultiHeadAttentionWrapper' ? `All heads concatenated (head ${r.head + 1}: ` +
          `d${r.head * hd + 1}\u2013d${(r.head + 1) * hd}).` : '') +
      (r.dropoutActive ? ' With dropout applied.' : ''),
  };
  if (r.renorm) {
    notes.renorm = 'Rows sum to 1 again. Largest difference from panel 4 (the \u2212\u221e route): ' +
      `${r.renorm.manualVsMinusInf.toExponential(1)}; the engine\u2019s maskStrategy 'renormalize': ` +
      `${r.renorm.engineVsMinusInf.toExponential(1)} (float32 rounding).`;
  }
  return notes;
}

/** The dropout panel's extra tooltip line for a weight w that became d. */
export function dropoutLine(w, d, dropoutScale) {
  return d === 0 && w !== 0
    ? `dropped (was ${formatValue(w)})`
    : `= ${formatValue(w)} \u00d7 ${formatValue(dropoutScale, 2)}`;
}

/**
 * The inspector's sentence for `cell` ({ i, j }, j null on a row label):
 * the value followed through every step. Where the cell is: context (on the
 * context panel), head (a head of the heads grid; undefined in the
 * pipeline, which shows r.head), weights and dropout (the heatmaps whose
 * rowSum(i) the sentence quotes).
 */
export function cellSentence(r, view, cell, { context, head, weights, dropout }) {
  const i = cell.i;
  const q = `query ${view.rowNames[i]} (row ${i + 1})`;
  if (context && cell.j !== null) {
    return `${q}, context dimension ${cell.j + 1}: ${formatValue(r.output[i * r.outDim + cell.j])}`;
  }
  const inGrid = head !== undefined;
  const h = head ?? r.head;
  if (cell.j === null) {
    return `${q}: weights sum to ${formatValue(weights.rowSum(i))}` +
      (r.dropoutActive && !inGrid ? `, ${formatValue(dropout.rowSum(i))} after dropout` : '') +
      '. Click to select this row.';
  }
  const j = cell.j;
  const k = `key ${view.colNames[j]} (column ${j + 1})`;
  const at = (a) => a[(h * r.Tq + i) * r.T + j];
  const masked = isMasked(i, j, r.maskShift);
  const s = at(r.scores);
  const parts = [
    `score ${formatValue(s)}`,
    `scaled ${formatValue(s * r.scale)}`,
    `masked ${masked ? MINUS_INF : formatValue(s * r.scale)}`,
    `softmax ${masked ? '0 (masked)' : formatValue(at(r.weights))}`,
  ];
  if (r.dropoutActive) {
    const d = at(r.dropped);
    parts.push(`after dropout ${masked ? '0' : formatValue(d)}${!masked && d === 0 ? ' (dropped)' : ''}`);
  }
  return `${q} \u2192 ${k}, head ${h + 1}: ${parts.join(' \u2192 ')}; row sum ${formatValue(weights.rowSum(i))}`;
}

/** The selected query's strongest keys, in words. */
export function rowSentence(r, view, i) {
  const base = (r.head * r.Tq + i) * r.T;
  const weights = r.weights.subarray(base, base + r.T);
  const order = Array.from(weights.keys()).filter((j) => weights[j] > 0).sort((a, b) => weights[b] - weights[a]);
  const top = order.slice(0, 5).map((j) => `${view.colNames[j]} ${formatValue(weights[j])}`);
  return `Selected query ${view.rowNames[i]} (row ${i + 1}) attends most to: ${top.join(', ')}` +
    (order.length > 5 ? ` (and ${order.length - 5} more keys)` : '') + '.';
}
