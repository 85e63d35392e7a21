// The page's "A real model" section: a Hugging Face checkpoint (GPT-2,
// distilgpt2, SmolLM2, ...) loaded from the user's files or the hub into the
// package's GPTModel / Llama3Model, in a worker of its own (init({ worker:
// true }): the page never blocks on a 500 MB forward). It shows the text's
// tokens, the next-token distribution, every layer's heads as the page's
// triangles, the Learn section's head scores on a repeated random-token
// probe (so the user can find GPT-2's induction heads), and generation with
// the layers' KV caches.
//
// Hooks the tests read: #model-status data-loaded / data-model-type /
// data-layers / data-heads / data-parameters (data-error on a bad file);
// #model-predictions li data-token-id / data-probability; [data-model-head="L.H"]
// (1-based) per head, with data-previous-token / data-induction scores;
// #model-section data-analysed (a counter) after each drawing.

import { init } from '/dist/index.mjs';
import { headScores } from '../learn/model/metrics.mjs';
import { SCALES } from '../widgets/colors.mjs';
import { Heatmap } from '../widgets/heatmap.mjs';
import { fill, headName } from '../widgets/lab-views.mjs';
import { HUB_MODELS, fetchFromHub, readPicked } from './files.mjs';
import { LENS_POSITIONS, circuitTokens, modelComposition, modelLab } from './model-lab.mjs';
import { drawModelCircuits, drawModelComposition, drawModelLab, drawModelLens } from './model-lab-view.mjs';
import { tokenizerFor } from './tokenizer.mjs';

const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));

/** Most tokens the heads show (the last ones of a longer text). */
const MAX_TOKENS = 48;
/** The probe: PERIOD random tokens, then the same again. */
const PERIOD = 20;
const TOP = 10;

const state = {
  runtime: null, // the worker runtime, started on the first load
  model: null, // its remote model
  info: null, // { type, layers, heads, parameters, vocab }
  tokenizer: null,
  maps: [], // the heads' heatmaps
  busy: false,
  analysed: 0,
  pending: false,
  showInPipeline: null,
  probe: null, // the head scores' probe (the lab's clean run)
  labShown: false, // the lab ran: its lens and circuits follow the text
};

/**
 * Wires the section. `showInPipeline(result, tokens)` shows a head in the
 * page's pipeline (app.mjs; the Learn section's "open in the pipeline").
 * @param {{ showInPipeline: (result: object, tokens: { text: string, id: number }[]) => void }} hooks
 */
export function setupModel({ showInPipeline }) {
  state.showInPipeline = showInPipeline;
  const hub = $('model-hub-name');
  for (const [label, repo] of Object.entries(HUB_MODELS)) hub.append(new Option(label, repo));
  $('model-files').addEventListener('change', (e) => {
    const files = /** @type {HTMLInputElement} */ (e.target).files;
    if (files?.length) load(() => readPicked(files), 'your files');
  });
  $('model-hub-load').addEventListener('click', () => {
    const base = new URLSearchParams(location.search).get('hub') ?? 'https://huggingface.co';
    const repo = /** @type {HTMLSelectElement} */ (hub).value;
    load(() => fetchFromHub(base, repo, progress), repo);
  });
  let timer = 0;
  $('model-text').addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(analyse, 250);
  });
  $('model-generate').addEventListener('click', generate);
  $('model-lab-run').addEventListener('click', runLab);
  for (const id of ['model-lab-from', 'model-lab-to']) $(id).addEventListener('change', () => labWork('views', composition));
  $('model-lab-head').addEventListener('change', () => labWork('views', textViews));
}

/** The lab on the loaded model (model-lab.mjs), on the head scores' probe; then its other views. */
function runLab() {
  if (!state.probe) return;
  $('model-lab-note').textContent = 'Running: one forward and one backward for every head\u2019s estimate, then the best heads patched…';
  return labWork('ready', async () => {
    const r = await modelLab(state.runtime, state.model, state.probe, PERIOD, state.info);
    drawModelLab(r);
    // The other views start at the best head (by attribution) and the layer before it.
    const best = r.attribution[0];
    const to = Math.max(1, best.layer);
    /** @type {HTMLSelectElement} */ ($('model-lab-to')).value = String(to);
    /** @type {HTMLSelectElement} */ ($('model-lab-from')).value = String(to - 1);
    /** @type {HTMLSelectElement} */ ($('model-lab-head')).value = `${best.layer}.${best.head}`;
    state.labShown = true;
    $('model-lab-views').hidden = false;
    await composition();
    await textViews();
  });
}

/**
 * Runs `work` when the model is free, then counts it on #model-lab's
 * data-`counter` ('ready' after the whole lab, 'views' after a select
 * redrew a view); a failure is said in the lab's note.
 * @param {'ready' | 'views'} counter
 * @param {() => Promise<void>} work
 */
async function labWork(counter, work) {
  if (!state.model || state.busy || (counter === 'views' && !state.labShown)) return;
  state.busy = true;
  setButtons();
  try {
    await work();
    const box = $('model-lab');
    box.dataset[counter] = String(Number(box.dataset[counter] ?? 0) + 1);
  } catch (error) {
    $('model-lab-note').textContent = `The lab could not run: ${/** @type {Error} */ (error).message}`;
  } finally {
    state.busy = false;
    setButtons();
  }
}

/** Composition between the chosen layers (the later one after the earlier). */
async function composition() {
  const from = Number(/** @type {HTMLSelectElement} */ ($('model-lab-from')).value);
  const to = Number(/** @type {HTMLSelectElement} */ ($('model-lab-to')).value);
  if (!(to > from)) {
    $('model-lab-composition-body').replaceChildren();
    $('model-lab-composition-note').textContent = 'Choose a later layer to compose into.';
    return;
  }
  $('model-lab-composition-note').textContent = '';
  drawModelComposition(await modelComposition(state.runtime, state.model, state.info.type, from, to), from, to, state.info.heads);
}

/** The views on the text: the chosen head's circuits over its tokens and the logit lens. */
async function textViews() {
  const ids = tokens();
  if (!ids.length) return;
  const [layer, head] = /** @type {HTMLSelectElement} */ ($('model-lab-head')).value.split('.').map(Number);
  const chosen = circuitTokens(ids);
  const text = (/** @type {number} */ id) => JSON.stringify(state.tokenizer.decode([id])).slice(1, -1);
  drawModelCircuits(await state.runtime.headCircuits(state.model, layer, head, chosen), layer, head, chosen, text);
  const T = ids.length;
  const positions = Array.from({ length: Math.min(LENS_POSITIONS, T) }, (_, i) => T - Math.min(LENS_POSITIONS, T) + i);
  drawModelLens(await state.runtime.logitLens(state.model, Int32Array.from(ids), { positions }), positions, text);
}

/** The lab's choices for the loaded model: layers and heads. */
function labChoices() {
  const { layers, heads } = state.info;
  const layerOptions = () => Array.from({ length: layers }, (_, l) => new Option(String(l + 1), String(l)));
  fill($('model-lab-from'), layerOptions());
  fill($('model-lab-to'), layerOptions());
  fill($('model-lab-head'), Array.from({ length: layers * heads }, (_, i) =>
    new Option(headName(Math.floor(i / heads), i % heads), `${Math.floor(i / heads)}.${i % heads}`)));
  state.labShown = false;
  $('model-lab-views').hidden = true;
}

/**
 * @param {number} done
 * @param {number} total
 * @param {string} what
 */
function progress(done, total, what) {
  const bar = /** @type {HTMLProgressElement} */ ($('model-progress'));
  bar.hidden = false;
  if (total) {
    bar.max = total;
    bar.value = done;
  } else {
    bar.removeAttribute('value');
  }
  setStatus(`Downloading ${what}: ${(done / 2 ** 20).toFixed(1)} MiB${total ? ` of ${(total / 2 ** 20).toFixed(1)}` : ''}…`);
}

/**
 * @param {string} text
 * @param {Record<string, string>} [data]
 */
function setStatus(text, data) {
  const status = $('model-status');
  status.textContent = text;
  if (data) {
    for (const key of Object.keys(status.dataset)) delete status.dataset[key];
    Object.assign(status.dataset, data);
  }
}

/**
 * Loads a model from `source()`'s files, in the worker.
 * @param {() => Promise<{ config: string, safetensors: Uint8Array[], tokenizer: string | null, names: string[] }>} source
 * @param {string} from
 */
async function load(source, from) {
  if (state.busy) return;
  state.busy = true;
  setButtons();
  setStatus(`Loading ${from}…`, { loaded: 'false' });
  try {
    const files = await source();
    const config = JSON.parse(files.config);
    const tokenizer = await tokenizerFor(config.model_type, files.tokenizer);
    setStatus(`Reading ${files.names.join(', ')} into the worker…`, { loaded: 'false' });
    state.runtime ??= await init({ worker: true });
    // The previous model's handle is released when dropped (the worker runtime's FinalizationRegistry).
    const model = await state.runtime.loadPretrained({ config: files.config, safetensors: files.safetensors });
    state.model = model;
    state.tokenizer = tokenizer;
    state.info = {
      type: config.model_type, layers: await model.nLayers, heads: await model.nHeads,
      parameters: await model.numParameters(), vocab: await model.vocabSize, embDim: await model.embDim,
    };
    const i = state.info;
    setStatus(`${i.type} model from ${from}: ${i.layers} layers × ${i.heads} heads, ` +
      `${i.parameters.toLocaleString('en')} parameters; tokens by ${tokenizer.name}.`, {
      loaded: 'true', modelType: i.type, layers: String(i.layers), heads: String(i.heads), parameters: String(i.parameters),
    });
    buildHeads();
    labChoices();
    await scoreHeads();
    state.busy = false;
    await analyse();
  } catch (error) {
    setStatus(`Could not load the model: ${/** @type {Error} */ (error).message}`, {
      loaded: state.model ? 'true' : 'false', error: 'true',
    });
  } finally {
    state.busy = false;
    /** @type {HTMLProgressElement} */ ($('model-progress')).hidden = true;
    setButtons();
  }
}

function setButtons() {
  /** @type {HTMLButtonElement} */ ($('model-generate')).disabled = !state.model || state.busy;
  /** @type {HTMLButtonElement} */ ($('model-lab-run')).disabled = !state.model || state.busy;
  /** @type {HTMLButtonElement} */ ($('model-hub-load')).disabled = state.busy;
}

/** The text's last MAX_TOKENS tokens. */
function tokens() {
  const ids = state.tokenizer.encode(/** @type {HTMLTextAreaElement} */ ($('model-text')).value);
  return ids.slice(-MAX_TOKENS);
}

/** One triangle per head, layer by layer. */
function buildHeads() {
  const grid = $('model-heads');
  for (const hm of state.maps) hm.dispose();
  grid.replaceChildren();
  state.maps = [];
  const { layers, heads } = state.info;
  grid.style.setProperty('--model-heads', String(heads));
  for (let l = 0; l < layers; l++) {
    for (let h = 0; h < heads; h++) {
      const fig = document.createElement('figure');
      fig.className = 'model-head';
      fig.dataset.modelHead = `${l + 1}.${h + 1}`;
      const cap = document.createElement('figcaption');
      const open = document.createElement('button');
      open.type = 'button';
      open.className = 'head-button';
      open.textContent = `${l + 1}.${h + 1}`;
      open.setAttribute('aria-label', `Open layer ${l + 1}, head ${h + 1} in the pipeline`);
      open.addEventListener('click', () => openInPipeline(l, h));
      cap.append(open);
      const box = document.createElement('div');
      fig.append(cap, box);
      grid.append(fig);
      state.maps.push(new Heatmap(box, {
        name: `layer ${l + 1} head ${h + 1} weight`, scale: SCALES.weights, domain: 'zero-max', compact: true,
        maxCell: 12, tableLimit: 0,
      }));
    }
  }
}

/** Runs the text through the model: predictions and every head's weights. */
async function analyse() {
  if (!state.model) return;
  if (state.busy) {
    state.pending = true;
    return;
  }
  state.busy = true;
  setButtons();
  try {
    const ids = tokens();
    if (!ids.length) return;
    const T = ids.length;
    const r = await state.model.forward(Int32Array.from(ids), [1, T], { returnWeights: true });
    showTokens(ids);
    showPredictions(r.logits.subarray((T - 1) * state.info.vocab, T * state.info.vocab));
    const labels = ids.map((id) => state.tokenizer.decode([id]));
    r.weights.forEach((w, l) => {
      for (let h = 0; h < state.info.heads; h++) {
        state.maps[l * state.info.heads + h].setData({
          values: w, offset: h * T * T, rows: T, cols: T, rowLabels: labels, colLabels: labels,
        });
      }
    });
    if (state.labShown) await textViews();
    $('model-section').dataset.analysed = String(++state.analysed);
  } catch (error) {
    setStatus(`The model could not run: ${/** @type {Error} */ (error).message}`, { ...$('model-status').dataset, error: 'true' });
  } finally {
    state.busy = false;
    setButtons();
    if (state.pending) {
      state.pending = false;
      analyse();
    }
  }
}

/** @param {number[]} ids */
function showTokens(ids) {
  const box = $('model-tokens');
  box.replaceChildren(...ids.map((id) => {
    const chip = document.createElement('span');
    chip.className = 'chip';
    chip.textContent = JSON.stringify(state.tokenizer.decode([id])).slice(1, -1);
    chip.title = `token ${id}`;
    return chip;
  }));
}

/**
 * The TOP most likely next tokens: softmax of the last row's logits.
 * @param {Float32Array} logits
 */
function showPredictions(logits) {
  let max = -Infinity;
  for (const x of logits) max = Math.max(max, x);
  let sum = 0;
  for (const x of logits) sum += Math.exp(x - max);
  const best = [];
  for (let i = 0; i < logits.length; i++) {
    if (best.length < TOP || logits[i] > logits[best[best.length - 1]]) {
      best.push(i);
      best.sort((a, b) => logits[b] - logits[a]);
      if (best.length > TOP) best.pop();
    }
  }
  const first = Math.exp(logits[best[0]] - max) / sum;
  $('model-predictions').replaceChildren(...best.map((id) => {
    const p = Math.exp(logits[id] - max) / sum;
    const li = document.createElement('li');
    li.dataset.tokenId = String(id);
    li.dataset.probability = String(p);
    const word = document.createElement('code');
    word.textContent = JSON.stringify(state.tokenizer.decode([id]));
    const bar = document.createElement('span');
    bar.className = 'bar';
    bar.style.width = `${(10 * p / first).toFixed(2)}rem`; // the likeliest: 10rem
    li.append(word, ` ${(100 * p).toFixed(1)} %`, bar);
    return li;
  }));
}

/**
 * Head `head` of layer `layer` (0-based) on the text, in the shape of the
 * pipeline's result (as the Learn section's head-pipeline.mjs makes it):
 * the layer's attention input (the residual stream entering the layer,
 * through norm1), its scores and weights from att.forward, and the head's
 * context vectors (its weights times its value vectors, before out_proj).
 * Computed in the worker, one sub-module call after another.
 * @param {number} layer
 * @param {number} head
 */
async function openInPipeline(layer, head) {
  if (!state.model || state.busy) return;
  state.busy = true;
  setButtons();
  try {
    const started = performance.now();
    const ids = tokens();
    const T = ids.length;
    const { embDim: d, heads: H, type } = state.info;
    const hd = d / H;
    const m = state.model;
    const shape = [1, T, d];
    let x = await m.tokEmb.forward(Int32Array.from(ids), [1, T]);
    if (type === 'gpt2') {
      const pos = await m.posEmb.forward(Int32Array.from(ids.keys()), [1, T]);
      for (let i = 0; i < x.length; i++) x[i] += pos[i];
    }
    for (let l = 0; l < layer; l++) x = await (await m.trfBlocks.at(l)).forward(x, shape);
    const block = await m.trfBlocks.at(layer);
    const input = await block.norm1.forward(x, shape);
    const t0 = performance.now();
    const r = await block.att.forward(input, shape, { returnWeights: true, returnScores: true, returnQKV: true });
    const forwardMs = performance.now() - t0;
    // The head's context vectors: weights [T, T] · its values [T, hd].
    const context = new Float32Array(T * hd);
    const w0 = head * T * T;
    // (GroupedQueryAttention returns its key/value heads: a group of H / kvHeads query heads shares one.)
    const kvHeads = r.values.length / (T * hd);
    const valueHead = Math.floor(head / (H / kvHeads));
    const v0 = valueHead * T * hd;
    for (let i = 0; i < T; i++) {
      for (let j = 0; j <= i; j++) {
        const w = r.weights[w0 + i * T + j];
        for (let e = 0; e < hd; e++) context[i * hd + e] += w * r.values[v0 + j * hd + e];
      }
    }
    const kind = type === 'gpt2' ? 'MultiHeadAttention' : 'GroupedQueryAttention';
    const result = {
      mod: { kind, headDim: hd, outDim: hd, listing: 'model' },
      route: {
        kind: 'model',
        line: `A head of the loaded ${type} model: layer ${layer + 1}, head ${head + 1} of ${H} (${kind}, d_model ${d}) ` +
          `on the text's last ${T} tokens. Computed by trf_blocks[${layer}].att.forward(norm1(x)) in eval mode, x the ` +
          `residual stream entering layer ${layer + 1}${type === 'gpt2' ? '' : '; its queries and keys are rotated by position (RoPE)'}; ` +
          `the context panel shows this head's own ${hd} values (before out_proj). Change a setting above to go back to ` +
          'the book\u2019s example.',
      },
      title: `The pipeline: the loaded model\u2019s layer ${layer + 1}, head ${head + 1}`,
      layer, T, Tq: T, q0: 0, H, hd, head, outDim: hd, dIn: d, x: input,
      scale: Math.fround(1 / Math.sqrt(hd)), maskShift: 0, dropoutActive: false, dropoutScale: 1,
      scores: r.scores, weights: r.weights, dropped: null, output: context, renorm: null,
      forwardMs, computeMs: performance.now() - started, ids,
    };
    state.showInPipeline?.(result, ids.map((id) => ({ text: state.tokenizer.decode([id]), id })));
  } catch (error) {
    setStatus(`The head could not be opened: ${/** @type {Error} */ (error).message}`, { ...$('model-status').dataset, error: 'true' });
  } finally {
    state.busy = false;
    setButtons();
  }
}

/** Appends 10 tokens (greedy, with the KV caches) to the text. */
async function generate() {
  if (!state.model || state.busy) return;
  state.busy = true;
  setButtons();
  try {
    const ids = tokens();
    const out = await state.model.generate(Int32Array.from(ids), { maxNewTokens: 10 });
    const text = /** @type {HTMLTextAreaElement} */ ($('model-text'));
    text.value += state.tokenizer.decode([...out.subarray(ids.length)]);
  } finally {
    state.busy = false;
  }
  await analyse();
}

/**
 * The Learn section's scores on a probe of PERIOD random tokens said twice:
 * each head's previous-token and induction score; the table lists the best.
 */
async function scoreHeads() {
  const { vocab, heads } = state.info;
  let seed = 7;
  const random = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
  const half = Array.from({ length: PERIOD }, () => Math.floor(random() * Math.min(vocab, 20000)));
  const probe = Int32Array.from([...half, ...half]);
  state.probe = probe;
  $('model-lab').dataset.probe = probe.join(','); // the lab's clean run, for scripts and tests
  const T = probe.length;
  const r = await state.model.forward(probe, [1, T], { returnWeights: true });
  const scores = headScores(r.weights, heads, T, PERIOD);
  for (const s of scores) {
    const fig = /** @type {HTMLElement} */ (document.querySelector(`[data-model-head="${s.layer + 1}.${s.head + 1}"]`));
    fig.dataset.previousToken = s.previousToken.toFixed(3);
    fig.dataset.induction = s.induction.toFixed(3);
    fig.title = `previous-token ${s.previousToken.toFixed(2)}, induction ${s.induction.toFixed(2)}`;
    fig.classList.toggle('induction', s.induction > 0.3);
  }
  const rows = [...scores].sort((a, b) => b.induction - a.induction).slice(0, 8).map((s) => {
    const tr = document.createElement('tr');
    tr.dataset.scoreHead = `${s.layer + 1}.${s.head + 1}`;
    for (const text of [`${s.layer + 1}.${s.head + 1}`, s.induction.toFixed(3), s.previousToken.toFixed(3)]) {
      const td = document.createElement('td');
      td.textContent = text;
      tr.append(td);
    }
    return tr;
  });
  $('model-scores-body').replaceChildren(...rows);
}
