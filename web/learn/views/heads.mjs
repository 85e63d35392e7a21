// The Learn section's heads: one figure per head (caption with its scores
// and sparklines, the triangle), drawn on the probe or on the generated
// sequence; hover and the selected row, shared by every head.

import { SCALES } from '../../widgets/colors.mjs';
import { formatValue, tokenLabel, tokenName } from '../../core/format.mjs';
import { Heatmap } from '../../widgets/heatmap.mjs';
import { bestInduction } from '../model/metrics.mjs';
import { $, draw, learn } from './state.mjs';
import { drawSparkline } from '../../widgets/sparkline.mjs';

/** Sparkline colours: previous-token and induction scores. */
const PREVIOUS_COLOUR = '#1c7ed6';
const INDUCTION_COLOUR = '#d9480f';
/** Most points a sparkline keeps (older ones are thinned by half). */
const SPARK_POINTS = 400;

export function addScores({ step, scores }) {
  scores.forEach((sc, k) => {
    const h = (learn.history[k] ??= { steps: [], previous: [], induction: [] });
    if (h.steps.length && h.steps[h.steps.length - 1] === step) {
      h.previous.pop();
      h.induction.pop();
      h.steps.pop();
    }
    h.steps.push(step);
    h.previous.push(sc.previousToken);
    h.induction.push(sc.induction);
    if (h.steps.length > SPARK_POINTS) {
      for (const key of ['steps', 'previous', 'induction']) h[key] = h[key].filter((_, i) => i % 2 === 0);
    }
  });
  learn.best = bestInduction(scores);
}

// One figure per head: caption with its scores and sparklines, the triangle.
export function buildHeads() {
  const { layers, heads } = learn.info.settings;
  const grid = $('learn-head-grid');
  for (const m of learn.maps) m.hm.dispose();
  grid.replaceChildren();
  learn.maps = [];
  for (let l = 0; l < layers; l++) {
    // One row of heads per layer: layer 1's previous-token heads above the
    // layer-2 heads that read them.
    const row = document.createElement('div');
    row.className = 'learn-layer';
    row.setAttribute('role', 'group');
    row.setAttribute('aria-label', `Layer ${l + 1}`);
    grid.append(row);
    for (let h = 0; h < heads; h++) {
      const fig = document.createElement('figure');
      fig.className = 'head-panel learn-head';
      fig.dataset.head = `${l + 1}.${h + 1}`;
      const cap = document.createElement('figcaption');
      const title = document.createElement('strong');
      title.textContent = `Layer ${l + 1} \u00b7 head ${h + 1}`;
      const scores = document.createElement('div');
      scores.className = 'head-scores';
      const line = (label, colour) => {
        const row = document.createElement('div');
        row.className = 'score-line';
        const name = document.createElement('span');
        name.textContent = label;
        const value = document.createElement('span');
        value.className = 'score-value';
        const canvas = document.createElement('canvas');
        canvas.className = 'sparkline';
        canvas.setAttribute('aria-hidden', 'true');
        canvas.dataset.colour = colour;
        row.append(name, value, canvas);
        scores.append(row);
        return { value, canvas };
      };
      const previous = line('previous token', PREVIOUS_COLOUR);
      const induction = line('induction', INDUCTION_COLOUR);
      cap.append(title, scores);
      const box = document.createElement('div');
      fig.append(cap, box);
      row.append(fig);
      const hm = new Heatmap(box, {
        name: `layer ${l + 1} head ${h + 1} weight`, scale: SCALES.weights, domain: 'zero-max', compact: true,
        maxCell: 24, tableLimit: 400, onHover: onHeadHover, onSelect: selectRow,
      });
      learn.maps.push({ hm, fig, previous, induction, layer: l, head: h });
    }
  }
}

/** Labels and names of compact token ids. */
export function labelsFor(ids) {
  const { gpt2Ids } = learn.info;
  if (!gpt2Ids) {
    const labels = Array.from(ids, (id) => String(id));
    return { labels, names: labels.map((l) => `token ${l}`) };
  }
  const texts = Array.from(ids, (id) => learn.textTokens.get(gpt2Ids[id])?.text ?? '\ufffd');
  return { labels: texts.map((t) => tokenLabel(t)), names: texts.map((t) => tokenName(t)) };
}

// What the triangles show: { ids, T, weights (per layer [heads, T, T]) }.
function shown() {
  if (learn.view === 'generation' && learn.generation) {
    const g = learn.generation;
    const n = g.rows.length;
    if (n === 0) return null; // the prompt's rows are on their way
    const { layers, heads } = learn.info.settings;
    const weights = Array.from({ length: layers }, (_, l) => {
      const w = new Float32Array(heads * n * n);
      g.rows.forEach((row, i) => {
        for (let h = 0; h < heads; h++) w.set(row[l][h], h * n * n + i * n);
      });
      return w;
    });
    return { ids: g.ids.slice(0, n), T: n, weights };
  }
  // A checkpoint the slider (learn-scrub.mjs) went back to, else the latest probe.
  const probe = learn.checkpoint ?? learn.probe;
  if (!probe) return null;
  return { ids: learn.info.probeIds, T: learn.info.tokens, weights: probe.weights };
}

export function drawHeads() {
  const view = shown();
  if (!view) return;
  const { labels, names } = labelsFor(view.ids);
  const scores = (learn.checkpoint ?? learn.probe)?.scores;
  const best = learn.checkpoint?.best ?? learn.best;
  for (const [k, m] of learn.maps.entries()) {
    m.hm.setData({
      values: view.weights[m.layer], offset: m.head * view.T * view.T, rows: view.T, cols: view.T, maskShift: 0,
      rowLabels: labels, colLabels: labels, rowNames: names, colNames: names,
    });
    m.hm.setSelectedRow(learn.selectedRow !== null && learn.selectedRow < view.T ? learn.selectedRow : null);
    const sc = scores?.[k];
    const h = learn.history[k];
    m.previous.value.textContent = sc ? formatValue(sc.previousToken, 2) : '';
    m.induction.value.textContent = sc ? formatValue(sc.induction, 2) : '';
    // The numbers the caption shows, for scripts and tests: [data-head="L.H"].
    m.fig.dataset.previousToken = m.previous.value.textContent;
    m.fig.dataset.induction = m.induction.value.textContent;
    if (h) {
      drawSparkline(m.previous.canvas, h.steps, h.previous, { colour: PREVIOUS_COLOUR });
      drawSparkline(m.induction.canvas, h.steps, h.induction, { colour: INDUCTION_COLOUR });
    }
    const isBest = best && best.layer === m.layer && best.head === m.head && best.score > 0.2;
    m.fig.classList.toggle('best', Boolean(isBest));
  }
  const T = learn.info.tokens;
  const P = learn.info.period;
  $('probe-hint').textContent = learn.view === 'generation' && learn.generation
    ? `Weights on the generated sequence (${view.T} tokens: the prompt's ${learn.generation.promptLength} and ` +
      `${view.T - learn.generation.promptLength} generated), one query row per token as it was produced.`
    : `Weights on the probe: ${T} tokens whose second half repeats the first (P = ${P}), never trained on as ` +
      'such. The previous-token score is the mean weight on the key just before each query; the induction ' +
      'score, on the repeat, the mean weight on the key right after the earlier occurrence of the query\'s ' +
      `token (key i \u2212 ${P - 1}): a stripe parallel to the diagonal. Uniform attention scores about ` +
      `${formatValue(2 / T, 2)} on both.`;
}

// ---------------------------------------------------------------- hover and selection

function onHeadHover(cell, source) {
  for (const m of learn.maps) m.hm.setHover(cell, { tooltip: m.hm === source });
  if (!cell || !source.data || !learn.info) return;
  const m = learn.maps.find((x) => x.hm === source);
  const d = source.data;
  const { i, j } = cell;
  let text = `Layer ${m.layer + 1}, head ${m.head + 1}: query ${d.rowNames[i]} (row ${i + 1})`;
  if (j !== null) {
    text += ` \u2192 key ${d.colNames[j]} (column ${j + 1}): ` +
      (source.masked(i, j) ? 'masked (the future)' : `weight ${formatValue(source.value(i, j))}`);
    const P = learn.info.period;
    if (j === i - 1) text += ' \u2014 the previous token';
    if (learn.view === 'probe' && i >= P && j === i - P + 1) {
      text += ' \u2014 the token after the earlier occurrence of this one (what an induction head looks at)';
    }
  }
  $('learn-inspector').textContent = text;
}

function selectRow(row) {
  learn.selectedRow = row;
  for (const m of learn.maps) m.hm.setSelectedRow(row);
}

export function setView(view) {
  learn.view = view;
  $(`view-${view}`).checked = true;
  selectRow(null);
  draw('heads');
}
