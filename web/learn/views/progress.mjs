// The Learn section's progress: the losses the worker reports (kept for the
// chart, every 10th / 100th in the table), the loss chart (uPlot) and the
// status line.

import { formatValue } from '../../core/format.mjs';
import { lineChart } from '../../widgets/line-chart.mjs';
import { $, learn } from './state.mjs';

export function addLosses(losses, step) {
  const first = step - losses.length;
  const table = $('loss-table').tBodies[0];
  const chance = Math.log(learn.info.vocab);
  for (let k = 0; k < losses.length; k++) {
    const loss = losses[k];
    const s = first + k;
    const previous = learn.smooth.length ? learn.smooth[learn.smooth.length - 1] : loss;
    learn.losses.push(loss);
    learn.smooth.push(learn.smooth.length ? 0.95 * previous + 0.05 * loss : loss);
    learn.chance.push(chance);
    if (s % (s < 1000 ? 10 : 100) === 0) {
      const tr = document.createElement('tr');
      const th = document.createElement('th');
      th.scope = 'row';
      th.textContent = String(s);
      const td = document.createElement('td');
      td.textContent = formatValue(loss);
      td.dataset.step = String(s);
      td.dataset.value = String(loss);
      tr.append(th, td);
      table.append(tr);
    }
  }
}

function statusLine() {
  const step = learn.losses.length;
  if (!learn.info) return 'Setting up the model…';
  const { info } = learn;
  const parts = [`Step ${step}`];
  if (step) {
    const what = info.settings.task === 'induction' ? 'on the repeats' : 'next token';
    parts.push(`loss ${formatValue(learn.losses[step - 1], 3)} (${what}; smoothed ` +
      `${formatValue(learn.smooth[step - 1], 3)}, guessing ${formatValue(Math.log(info.vocab), 2)})`);
  }
  if (learn.workerRunning) parts.push(`${learn.stepsPerSecond.toFixed(0)} steps/s`);
  if (learn.best) {
    parts.push(`best induction score ${formatValue(learn.best.score, 2)} (layer ${learn.best.layer + 1}, ` +
      `head ${learn.best.head + 1})`);
  }
  parts.push(`${info.parameters.toLocaleString('en')} parameters, ${info.vocab} token kinds`);
  return parts.join(' \u00b7 ');
}

export function drawStatus() {
  const el = $('train-status');
  el.textContent = statusLine();
  const step = learn.losses.length;
  Object.assign(el.dataset, {
    step: String(step),
    loss: step ? String(learn.losses[step - 1]) : '',
    bestInductionScore: learn.best ? String(learn.best.score) : '',
    stepsPerSecond: learn.stepsPerSecond.toFixed(1),
    running: String(learn.workerRunning),
    probeStep: learn.probe ? String(learn.probe.step) : '',
    task: learn.info?.settings.task ?? '',
  });
}

const legendValue = (u, v) => (v == null ? '' : formatValue(v, 3));

export async function createChart() {
  const opts = {
    scales: { x: { time: false }, y: { range: (u, min, max) => [0, Math.max(1, max * 1.05)] } },
    legend: { show: true },
    cursor: { drag: { x: false, y: false } },
    axes: [{ label: 'step' }, { label: 'loss', size: 50 }],
    // The legend reads the values under the cursor (nothing elsewhere).
    series: [
      { label: 'step', value: (u, v) => (v == null ? '' : String(v)) },
      { label: 'loss', stroke: 'rgba(28, 126, 214, 0.35)', width: 1, points: { show: false }, value: legendValue },
      { label: 'smoothed', stroke: '#1c7ed6', width: 2, points: { show: false }, value: legendValue },
      { label: 'guessing', stroke: '#868e96', width: 1, dash: [5, 4], points: { show: false }, value: legendValue },
    ],
  };
  learn.chart = await lineChart($('loss-chart'), opts, 4, 220);
  drawChart();
}

export function drawChart() {
  const n = learn.losses.length;
  const xs = Array.from({ length: n }, (_, k) => k);
  learn.chart?.setData([xs, learn.losses, learn.smooth, learn.chance]);
  $('loss-note').textContent = learn.info?.settings.task === 'induction'
    ? 'Cross-entropy on the repeats (the first P tokens of each sequence cannot be predicted and are not counted).'
    : 'Cross-entropy of the next token, over every position of each window of the text.';
}
