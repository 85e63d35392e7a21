// The Learn section's in-context-learning panel: the probe's loss by token
// index (the latest probe, with the current ablations) and the ICL score
// (learn-icl.mjs: loss of the last quarter of the indices minus the first
// quarter's) per step, as two uPlot charts and, for screen readers and
// exact values, two tables.

import { formatValue } from '../../core/format.mjs';
import { lineChart } from '../../widgets/line-chart.mjs';
import { iclSpan } from '../model/icl.mjs';
import { $, learn } from './state.mjs';

/** Most points the ICL curve keeps (older ones are thinned by half), and rows its table shows. */
const CURVE_POINTS = 2000;
const TABLE_ROWS = 60;
const HEIGHT = 180;

/**
 * The ICL score per probed step (reset by each new run), the two charts, and
 * whether the panel is on screen (the charts are redrawn only then: the
 * page's thread has frames to keep).
 */
const icl = { steps: [], scores: [], tokenChart: null, scoreChart: null, visible: false };

const legendValue = (u, v) => (v == null ? '' : formatValue(v, 3));

/** A line chart of the panel (null where charts cannot be drawn). */
function iclChart(box, xLabel, yLabel, series) {
  return lineChart(box, {
    scales: { x: { time: false } },
    legend: { show: true },
    cursor: { drag: { x: false, y: false } },
    axes: [{ label: xLabel }, { label: yLabel, size: 50 }],
    series: [{ label: xLabel, value: (u, v) => (v == null ? '' : String(v)) },
      ...series.map((s) => ({ width: 1.5, points: { show: false }, value: legendValue, ...s }))],
  }, series.length + 1, HEIGHT);
}

export async function createIclCharts() {
  $('icl-numbers').addEventListener('toggle', () => drawIclTables());
  new IntersectionObserver(([entry]) => {
    icl.visible = entry.isIntersecting;
    if (icl.visible) drawIcl();
  }).observe($('icl-panel'));
  [icl.tokenChart, icl.scoreChart] = await Promise.all([
    iclChart($('icl-token-chart'), 'token index', 'loss', [
      { label: 'loss', stroke: '#1c7ed6', width: 2 },
      { label: 'guessing', stroke: '#868e96', width: 1, dash: [5, 4] },
    ]),
    iclChart($('icl-score-chart'), 'step', 'ICL score', [{ label: 'ICL score', stroke: '#d9480f', width: 2 }]),
  ]);
  drawIcl();
}

/** A new run: no curve yet. */
export function resetIcl() {
  icl.steps = [];
  icl.scores = [];
}

/** A probe's ICL score joins the curve (replacing one of the same step: a re-probe after an ablation). */
export function addIcl({ step, icl: score }) {
  if (score === undefined) return;
  if (icl.steps.length && icl.steps[icl.steps.length - 1] === step) {
    icl.steps.pop();
    icl.scores.pop();
  }
  icl.steps.push(step);
  icl.scores.push(score);
  if (icl.steps.length > CURVE_POINTS) {
    icl.steps = icl.steps.filter((_, i) => i % 2 === 0);
    icl.scores = icl.scores.filter((_, i) => i % 2 === 0);
  }
}

export function drawIcl() {
  const p = learn.probe;
  const info = learn.info;
  if (!info) return;
  if (icl.visible) {
    const losses = p?.tokenLosses ? Array.from(p.tokenLosses) : [];
    const xs = losses.map((_, i) => i);
    icl.tokenChart?.setData([xs, losses, xs.map(() => Math.log(info.vocab))]);
    icl.scoreChart?.setData([icl.steps, icl.scores]);
  }
  const n = info.tokens - 1;
  const q = iclSpan(n);
  const latest = icl.scores.length ? icl.scores[icl.scores.length - 1] : null;
  const panel = $('icl-panel');
  panel.dataset.icl = latest === null ? '' : String(latest);
  panel.dataset.step = p ? String(p.step) : '';
  $('icl-note').textContent = `The probe's loss at each token (predicting token i + 1 from tokens 0 \u2026 i), ` +
    `with the current ablations: the first ${info.period} are random, the rest repeat them. ICL score = mean ` +
    `loss of the last ${q} indices \u2212 the first ${q}` +
    (latest === null ? '.' : `: ${formatValue(latest, 3)} at step ${icl.steps[icl.steps.length - 1]} ` +
      '(negative: later tokens are predicted better, from the context).');
  drawIclTables();
}

// The tables, rebuilt only while their <details> is open.
function drawIclTables() {
  if (!$('icl-numbers').open) return;
  const p = learn.probe;
  const rows = (pairs) => pairs.map(([head, value]) => {
    const tr = document.createElement('tr');
    const th = document.createElement('th');
    th.scope = 'row';
    th.textContent = String(head);
    const td = document.createElement('td');
    td.textContent = formatValue(value, 3);
    td.dataset.value = String(value);
    tr.append(th, td);
    return tr;
  });
  $('icl-token-table').tBodies[0].replaceChildren(...rows(p?.tokenLosses ? Array.from(p.tokenLosses, (v, i) => [i, v]) : []));
  const every = Math.max(1, Math.ceil(icl.steps.length / TABLE_ROWS));
  const picked = icl.steps.map((s, i) => [s, icl.scores[i]])
    .filter((_, i) => i % every === 0 || i === icl.steps.length - 1);
  $('icl-score-table').tBodies[0].replaceChildren(...rows(picked));
}
