// The Learn section's ablation: a toggle on each head panel
// (button[data-ablate="L.H"], 1-based, aria-pressed) knocks that head out of
// the probe and of generation — the worker runs the modules' forward with
// headMask 0 for it (training keeps every head) — and the status line shows
// the probe's loss and accuracy with the current ablations, as text and as
// #train-status's data-probe-loss (and data-probe-accuracy), with the best induction head's place
// (data-best-induction-layer, data-best-induction-head).

import { formatValue } from '../../core/format.mjs';
import { $, learn } from './state.mjs';

/** The heads knocked out, as "layer.head" keys (0-based); emptied by each new run. */
const ablated = new Set();
/** The run the toggles were built for: the worker drops what they say once a newer one is asked for. */
let builtFor = 0;

const key = (layer, head) => `${layer}.${head}`;

/** Adds a toggle to every head panel (after buildHeads) and clears the ablations of the last run. */
export function buildAblation() {
  ablated.clear();
  builtFor = learn.run;
  for (const m of learn.maps) {
    const button = document.createElement('button');
    button.type = 'button';
    button.className = 'ablate';
    button.dataset.ablate = `${m.layer + 1}.${m.head + 1}`;
    button.textContent = 'Knock out';
    button.setAttribute('aria-pressed', 'false');
    button.setAttribute('aria-label', `Knock out layer ${m.layer + 1} head ${m.head + 1}`);
    button.title = 'Zero this head\u2019s output on the probe and in generation (training keeps it)';
    button.addEventListener('click', () => toggle(m, button));
    m.fig.querySelector('figcaption').append(button);
  }
}

function toggle(m, button) {
  const k = key(m.layer, m.head);
  const on = !ablated.has(k);
  if (on) ablated.add(k);
  else ablated.delete(k);
  button.setAttribute('aria-pressed', String(on));
  button.textContent = on ? 'Knocked out' : 'Knock out';
  m.fig.classList.toggle('ablated', on);
  const heads = [...ablated].map((s) => s.split('.').map(Number));
  learn.worker.postMessage({ type: 'ablate', heads, run: builtFor });
}

/**
 * Appends the probe loss to the status line (drawStatus wrote the rest) and
 * sets the hooks on #train-status.
 */
export function drawAblationStatus() {
  const el = $('train-status');
  const p = learn.probe;
  const hasLoss = p && p.probeLoss !== undefined;
  if (hasLoss) {
    const n = p.ablated.length;
    const what = n === 0 ? 'every head' : `${n} head${n === 1 ? '' : 's'} knocked out`;
    el.textContent += ` \u00b7 probe loss ${formatValue(p.probeLoss, 3)} on the repeat, ` +
      `${Math.round(100 * p.probeAccuracy)}% of its tokens predicted (${what})`;
  }
  Object.assign(el.dataset, {
    probeLoss: hasLoss ? String(p.probeLoss) : '',
    probeAccuracy: hasLoss ? String(p.probeAccuracy) : '',
    ablated: hasLoss ? p.ablated.map(([l, h]) => `${l + 1}.${h + 1}`).join(' ') : '',
    bestInductionLayer: learn.best ? String(learn.best.layer + 1) : '',
    bestInductionHead: learn.best ? String(learn.best.head + 1) : '',
  });
}
