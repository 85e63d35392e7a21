// "Open in the pipeline": a select of the Learn model's heads
// (the best induction head until the learner picks one) and a button; the
// training worker computes the head on the probe (learn-pipeline.mjs) and
// the page's pipeline panels show it (app.mjs's showLearnHead, given to
// setupLearn).

import { $, learn } from './state.mjs';

/** The model's heads as options "layer L, head H" (values "L.H", 1-based). */
export function fillOpenSelect() {
  const { layers, heads } = learn.info.settings;
  const select = $('learn-pipeline-head');
  select.replaceChildren();
  for (let l = 0; l < layers; l++) {
    for (let h = 0; h < heads; h++) select.append(new Option(`layer ${l + 1}, head ${h + 1}`, `${l + 1}.${h + 1}`));
  }
  select.dataset.chosen = 'false';
  followBest();
}

/** Until the learner picks a head, the select follows the best induction head. */
export function followBest() {
  const select = $('learn-pipeline-head');
  if (select.dataset.chosen === 'true' || !learn.best) return;
  select.value = `${learn.best.layer + 1}.${learn.best.head + 1}`;
}

/** The probe's tokens as the pipeline's token objects ({ text, id }). */
function probeTokens(ids) {
  const { gpt2Ids } = learn.info;
  return Array.from(ids, (id) => (gpt2Ids
    ? learn.textTokens.get(gpt2Ids[id]) ?? { text: '\ufffd', id: gpt2Ids[id] }
    : { text: String(id), id }));
}

/** The worker's answer; true when `m` was one. */
export function onOpenMessage(m) {
  if (m.type !== 'pipeline') return false;
  learn.showInPipeline(m.result, probeTokens(m.result.ids));
  return true;
}

export function setupOpen() {
  const select = $('learn-pipeline-head');
  select.addEventListener('change', () => {
    select.dataset.chosen = 'true';
  });
  $('learn-open-pipeline').addEventListener('click', () => {
    const [layer, head] = select.value.split('.').map(Number);
    learn.worker.postMessage({ type: 'pipeline', layer: layer - 1, head: head - 1 });
  });
}
