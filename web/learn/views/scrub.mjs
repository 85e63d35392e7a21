// The Learn section's checkpoint slider: `#learn-checkpoint`
// ranges over the checkpoints the training worker keeps (learn-keep.mjs)
// plus, at its right end, the run as it trains. Moving it asks the worker
// for that checkpoint; the heads then show its weights and scores
// (learn.checkpoint, read by learn-heads.mjs) until it is back at the right
// end. The shown step is in the slider's data-step; a sentence and a table
// of the kept checkpoints say the same for screen readers.

import { formatValue } from '../../core/format.mjs';
import { setView } from './heads.mjs';
import { followCheckpoint } from './lab.mjs';
import { $, draw, learn } from './state.mjs';

/** The worker's kept checkpoints: [{ step, best: { score, layer, head }, probeLoss }]. */
let summary = [];

const head = (best) => `layer ${best.layer + 1}, head ${best.head + 1}`;

function describeShown() {
  const slider = $('learn-checkpoint');
  const c = learn.checkpoint;
  const every = summary.length > 2 ? summary[2].step - summary[1].step : null;
  const kept = `${summary.length} checkpoint${summary.length === 1 ? '' : 's'} kept${every ? `, every ${every} steps` : ''}`;
  if (c) {
    slider.dataset.step = String(c.step);
    slider.setAttribute('aria-valuetext', `step ${c.step}`);
    $('learn-checkpoint-text').textContent = `The heads at step ${c.step}: best induction score ` +
      `${formatValue(c.best.score, 2)} (${head(c.best)}), loss on the probe\u2019s repeat ` +
      `${formatValue(c.probeLoss, 3)}. ${kept}; the right end follows training.`;
  } else {
    const step = learn.probe?.step ?? 0;
    slider.dataset.step = String(step);
    slider.setAttribute('aria-valuetext', `now (step ${step})`);
    $('learn-checkpoint-text').textContent = `The heads now, as training goes (${kept}: move left to go back).`;
  }
}

function writeTable() {
  const body = $('checkpoint-table').tBodies[0];
  body.replaceChildren(...summary.map((c) => {
    const tr = document.createElement('tr');
    const th = document.createElement('th');
    th.scope = 'row';
    th.textContent = String(c.step);
    const cells = [formatValue(c.best.score, 3), head(c.best), formatValue(c.probeLoss, 3)].map((text) => {
      const td = document.createElement('td');
      td.textContent = text;
      return td;
    });
    tr.append(th, ...cells);
    return tr;
  }));
}

/** A new run: the slider follows training again. */
export function resetScrub() {
  summary = [];
  learn.checkpoint = null;
  const slider = $('learn-checkpoint');
  slider.max = '0';
  slider.value = '0';
  describeShown();
  writeTable();
}

/** The worker's checkpoint messages; true when `m` was one. */
export function onScrubMessage(m) {
  const slider = $('learn-checkpoint');
  if (m.type === 'checkpoints') {
    summary = m.summary;
    slider.max = String(summary.length);
    // Pinned to a checkpoint: it keeps its place (the nearest kept one if it was thinned out).
    if (learn.checkpoint) {
      const at = summary.findLastIndex((c) => c.step <= learn.checkpoint.step);
      slider.value = String(Math.max(0, at));
    } else {
      slider.value = slider.max;
    }
    describeShown();
    writeTable();
    return true;
  }
  if (m.type === 'checkpoint') {
    if (Number(slider.value) !== m.index) return true; // the slider has moved on
    learn.checkpoint = { ...m, best: summary[m.index]?.best ?? m.best };
    describeShown();
    draw('heads');
    followCheckpoint();
    return true;
  }
  return false;
}

/** A newer probe: the slider's right end follows it. */
export function followProbe() {
  if (!learn.checkpoint) describeShown();
}

export function setupScrub() {
  const slider = $('learn-checkpoint');
  slider.addEventListener('input', () => {
    const index = Number(slider.value);
    if (index >= summary.length) {
      learn.checkpoint = null;
      describeShown();
      draw('heads');
      followCheckpoint();
      return;
    }
    if (learn.view !== 'probe') setView('probe');
    learn.worker.postMessage({ type: 'checkpoint', index });
  });
  resetScrub();
}
