// The Learn section's "Keep and share" panel: the run is saved
// in this browser as it trains (by the worker: learn-keep.mjs) and a
// reload continues it; the model's state dict downloads as JSON under
// PyTorch's names, and a state dict uploaded (the same settings) replaces
// the model's weights.

import { $, learn } from './state.mjs';

const say = (text) => {
  $('learn-keep-status').textContent = text;
};

export function setupShare() {
  $('learn-download').addEventListener('click', () => learn.worker.postMessage({ type: 'state-dict' }));
  $('learn-upload').addEventListener('change', async (e) => {
    const input = e.target;
    const file = input.files[0];
    if (!file) return;
    let dict;
    try {
      dict = JSON.parse(await file.text());
    } catch (error) {
      say(`${file.name} is not JSON: ${error.message}`);
      return;
    } finally {
      input.value = '';
    }
    learn.worker.postMessage({ type: 'load-state-dict', dict });
  });
}

/** The worker's keeping messages; true when `m` was one. */
export function onShareMessage(m) {
  switch (m.type) {
    case 'saved':
      $('learn-keep').dataset.savedStep = String(m.step);
      say(`Saved in this browser at step ${m.step}: a reload continues from there.`);
      return true;
    case 'state-dict': {
      const s = learn.info.settings;
      const a = document.createElement('a');
      a.href = URL.createObjectURL(new Blob([m.json], { type: 'application/json' }));
      a.download = `learn-${s.attention}-${s.layers}x${s.heads}-d${s.dModel}-step${learn.losses.length}.json`;
      a.click();
      setTimeout(() => URL.revokeObjectURL(a.href), 10000);
      say(`Downloaded ${a.download}.`);
      return true;
    }
    case 'loaded':
      $('learn-keep').dataset.loaded = String(Number($('learn-keep').dataset.loaded ?? 0) + 1);
      say('The state dict is loaded: the heads below show its weights.');
      return true;
    case 'keep-error':
      say(m.message);
      return true;
    default:
      return false;
  }
}
