// The Learn section's settings form: reading and writing it, the task's
// hint, and which buttons are usable.

import { period } from '../model/tasks.mjs';
import { $, learn } from './state.mjs';

const SETTING_FIELDS = ['vocab', 'layers', 'heads', 'dModel', 'contextLength', 'seed', 'lr', 'batch', 'window'];

export function readSettings() {
  const form = $('learn-controls').elements;
  const s = { task: form.task.value, attention: form.attention.value };
  for (const name of SETTING_FIELDS) s[name] = form[name].value === '' ? NaN : Number(form[name].value);
  return s;
}

export function writeSettings(s) {
  const form = $('learn-controls').elements;
  form.task.value = s.task;
  form.attention.value = s.attention ?? 'full';
  for (const name of SETTING_FIELDS) form[name].value = String(s[name]);
}

export function taskHint(s) {
  if (s.task === 'induction') {
    return `Sequences of ${s.contextLength} random tokens out of ${s.vocab} kinds that start over after ` +
      `P tokens (P from ${Math.ceil(s.contextLength / 4)} to ${period(s.contextLength)}, new for each ` +
      'sequence): only the repeat can be predicted, and only by looking back. The loss counts the repeat ' +
      `only; guessing gives ln ${s.vocab} = ${Math.log(s.vocab).toFixed(2)}.`;
  }
  return 'Next-token prediction on the text in the box at the top (its GPT-2 tokens, at most 1024), ' +
    'renumbered into a compact vocabulary of the tokens it contains: the model can only ever write tokens ' +
    'of your text. A short text is learnt by heart at once; the long-input preset gives 1024 tokens. Edit ' +
    'the text, then Reset to train on the new one.';
}

// Start and Step stay usable while a new run is set up: the worker answers
// messages in order, so a Start right after a change of settings (the
// field's change event comes first) starts the new run.
export function setButtons() {
  const ok = learn.ready && $('learn-error').textContent === '';
  const start = $('train-start');
  start.disabled = !ok && !learn.running; // Pause stays possible
  start.textContent = learn.running ? 'Pause' : 'Start';
  start.setAttribute('aria-pressed', String(learn.running));
  const generating = learn.generation?.done === false;
  $('train-step').disabled = !ok || learn.running || generating;
  $('train-reset').disabled = !learn.ready;
  $('gen-start').disabled = !ok || learn.info === null || generating;
}
