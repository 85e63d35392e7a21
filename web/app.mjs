// The demo page's wiring: settings → tokens and embeddings → the wasm engine
// → linked heatmaps. Every change recomputes and redraws within the next
// frame. The words it shows come from explain.mjs.
//
// All user text reaches the page through textContent, attribute properties
// and canvas fillText, never as HTML.

import { init } from '/dist/index.mjs';
import { MASKED, SCALES } from './widgets/colors.mjs';
import {
  cellSentence, chipTitle, dropoutLine, engineLine, panelNotes, pipelineTitle, routeLine, rowSentence,
  timingLine, tokenCount,
} from './pipeline/explain.mjs';
import { tokenLabel, tokenName } from './core/format.mjs';
import { Heatmap } from './widgets/heatmap.mjs';
import { setupLearn } from './learn/learn.mjs';
import { setupModel } from './model/model.mjs';
import { runPipeline } from './pipeline/pipeline.mjs';
import { DEFAULT_PRESET, PRESETS, matchPreset, readForm, writeForm } from './pipeline/state.mjs';
import { D_IN, bookWord, embed, longText, tokenize } from './core/tokens.mjs';

const $ = (id) => document.getElementById(id);
const form = $('controls');
const fields = form.elements;

/** Panels: which matrix, which colour scale, how masked cells read. */
const PANEL_SPECS = {
  scores: { name: 'score', scale: SCALES.scores, domain: 'min-max' },
  scaled: { name: 'scaled score', scale: SCALES.scores, domain: 'min-max' },
  masked: { name: 'masked score', scale: SCALES.scores, domain: 'min-max', maskedText: '\u2212\u221e' },
  weights: { name: 'weight', scale: SCALES.weights, domain: 'zero-max', rowSums: true },
  dropout: { name: 'weight after dropout', scale: SCALES.weights, domain: 'zero-max', rowSums: true },
  context: {
    name: 'context value', scale: SCALES.signed, domain: 'symmetric', colAxis: 'dimension', maxCell: 72,
  },
  full: { name: 'unmasked weight', scale: SCALES.weights, domain: 'zero-max', rowSums: true },
  tri: { name: 'weight × triangle', scale: SCALES.weights, domain: 'zero-max', rowSums: true },
  renorm: { name: 'renormalised weight', scale: SCALES.weights, domain: 'zero-max', rowSums: true },
};

/** The probability panels: the colour mode (linear or per row) applies to them and the heads grid. */
const PROBABILITY_PANELS = ['weights', 'dropout', 'full', 'tri', 'renorm'];

/** Everything the page keeps between frames. */
const page = {
  ca: null, // the runtime, once init() has answered
  result: null, // runPipeline's last result
  view: null, // labels, names and embeddings of that result
  selectedRow: null, // query row index, shared by every panel
  tokens: { text: null, tokens: [], total: 0 }, // the last text's tokens
  chipsFor: null, // what the token chips on screen show (text, first query, embeddings, seed)
  panels: new Map(), // id → Heatmap
  headMaps: [], // the heads grid's heatmaps, one per head
  longText: null, // the long preset's text, generated when first asked for
  updatePending: false,
  generation: 0, // of the newest update(): older answers are dropped
  renderCount: 0,
};

function setNote(panelId, text) {
  const note = document.querySelector(`#panel-${panelId} .note`);
  if (note) note.textContent = text;
}

function makeHeatmap(root, spec) {
  return new Heatmap(root, { ...spec, onHover, onSelect: (row) => selectRow(row) });
}

function createPanels() {
  for (const [id, spec] of Object.entries(PANEL_SPECS)) {
    const hm = makeHeatmap(document.querySelector(`#panel-${id} .hm`), spec);
    hm.panelId = id;
    page.panels.set(id, hm);
  }
  const dropout = page.panels.get('dropout');
  dropout.options.explain = (i, j) => (!page.result?.dropoutActive || dropout.masked(i, j) ? ''
    : dropoutLine(page.panels.get('weights').value(i, j), dropout.value(i, j), page.result.dropoutScale));
}

/** The heads grid's heatmaps, rebuilt when the number of heads changes. */
function headMapsFor(H) {
  if (page.headMaps.length === H) return page.headMaps;
  const grid = $('heads-grid');
  for (const hm of page.headMaps) hm.dispose();
  grid.replaceChildren();
  page.headMaps = [];
  for (let h = 0; h < H; h++) {
    const fig = document.createElement('figure');
    fig.className = 'head-panel';
    const cap = document.createElement('figcaption');
    const button = document.createElement('button');
    button.type = 'button';
    button.className = 'head-button';
    button.textContent = `Head ${h + 1}`;
    button.setAttribute('aria-label', `Show head ${h + 1} in the pipeline`);
    button.addEventListener('click', () => {
      fields.head.value = String(h);
      schedule();
    });
    cap.append(button);
    const box = document.createElement('div');
    fig.append(cap, box);
    grid.append(fig);
    const hm = makeHeatmap(box, {
      name: `head ${h + 1} weight`, scale: SCALES.weights, domain: 'zero-max', compact: true,
      maxCell: 40, tableLimit: 400,
    });
    hm.headIndex = h;
    page.headMaps.push(hm);
  }
  return page.headMaps;
}

function allMaps() {
  return [...page.panels.values(), ...page.headMaps];
}

// ---------------------------------------------------------------- hover

function onHover(cell, source) {
  const t0 = performance.now();
  for (const hm of allMaps()) {
    if (!cell) {
      hm.setHover(null);
      continue;
    }
    // Panels with key columns share the whole cell; the context panel
    // (dimension columns) shares only the row.
    const sameColumns = (hm.panelId === 'context') === (source.panelId === 'context');
    hm.setHover({ i: cell.i, j: sameColumns ? cell.j : null }, { tooltip: hm === source });
  }
  if (cell && page.result) {
    const head = source.headIndex;
    $('inspector').textContent = cellSentence(page.result, page.view, cell, {
      context: source.panelId === 'context',
      head,
      weights: head !== undefined ? page.headMaps[head] : page.panels.get('weights'),
      dropout: page.panels.get('dropout'),
    });
  }
  // For the browser test's log: how long a hover takes to answer.
  document.body.dataset.hoverMs = (performance.now() - t0).toFixed(3);
}

function selectRow(row) {
  page.selectedRow = row;
  for (const hm of allMaps()) hm.setSelectedRow(row);
  for (const chip of $('tokens').children) {
    chip.setAttribute('aria-pressed', String(Number(chip.dataset.row) === row));
  }
  describeRow();
}

function describeRow() {
  const i = page.selectedRow;
  $('row-detail').textContent = i === null || !page.result ? '' : rowSentence(page.result, page.view, i);
}

// ---------------------------------------------------------------- tokens

function renderChips(tokens, q0, state) {
  const key = `${page.tokens.text}\u0000${q0}\u0000${state.bookEmbeddings}\u0000${state.seed}`;
  if (page.chipsFor === key) return;
  page.chipsFor = key;
  const chips = tokens.map((t, index) => {
    const b = document.createElement('button');
    b.type = 'button';
    b.className = 'chip';
    b.textContent = tokenLabel(t.text, 24);
    const row = index - q0;
    b.dataset.row = row;
    const w = page.result.dIn ?? D_IN; // a Learn head's input is its residual stream
    const x = Array.from(page.view.x.subarray(index * w, (index + 1) * w), (v) => v.toFixed(2));
    b.title = chipTitle(t, x, row);
    if (row < 0) b.classList.add('key-only');
    if (state.bookEmbeddings && bookWord(t)) b.classList.add('book');
    b.setAttribute('aria-pressed', String(row === page.selectedRow));
    if (row >= 0) b.addEventListener('click', () => selectRow(page.selectedRow === row ? null : row));
    else b.disabled = true;
    return b;
  });
  $('tokens').replaceChildren(...chips);
}

function getTokens(text) {
  if (page.tokens.text !== text) page.tokens = { text, ...tokenize(text) };
  return page.tokens;
}

// ---------------------------------------------------------------- update

function fillHeadSelect(H, current) {
  const select = fields.head;
  if (select.options.length !== H) {
    select.replaceChildren(...Array.from({ length: H }, (_, h) => new Option(`head ${h + 1}`, String(h))));
  }
  select.value = String(Math.min(current, H - 1));
  select.disabled = H === 1;
}

function schedule() {
  if (page.updatePending) return;
  page.updatePending = true;
  requestAnimationFrame(update);
}

async function update() {
  page.updatePending = false;
  // The engine runs in its worker: a later update may start before this one
  // is answered, and only the newest one draws.
  const generation = ++page.generation;
  const { state, errors } = readForm(fields);
  $('dropout-value').textContent = Number(fields.dropout.value).toFixed(2);
  fields.multiHead.disabled = state.heads === 1;
  const { tokens, total } = getTokens(state.text);
  const T = tokens.length;
  $('token-count').textContent = tokenCount(T, total);
  fields.queries.max = String(Math.max(1, T));
  if (T === 0) errors.push('The text has no tokens.');
  if (state.queries !== null && state.queries > T && T > 0) {
    errors.push(`Query tokens must be at most the number of tokens (${T}), got ${state.queries}.`);
  }
  fields.preset.value = matchPreset(state, page.longText);
  $('form-error').textContent = errors.join(' ');
  document.body.classList.toggle('has-error', errors.length > 0);
  if (errors.length) return;

  fillHeadSelect(state.heads, state.head);
  state.head = Number(fields.head.value);
  const x = embed(tokens, state);
  let r;
  document.body.dataset.computing = 'true';
  try {
    r = await runPipeline(page.ca, state, tokens, x);
  } catch (error) {
    if (generation !== page.generation) return;
    delete document.body.dataset.computing;
    $('form-error').textContent = `The engine refused: ${error.message}`;
    document.body.classList.add('has-error');
    return;
  }
  if (generation !== page.generation) return;
  delete document.body.dataset.computing;
  page.result = r;
  const t0 = performance.now();
  draw(state, tokens, x);
  delete document.body.dataset.learnHead;
  delete document.body.dataset.modelHead;
  const redrawMs = performance.now() - t0;
  $('timing').textContent = timingLine(r, redrawMs);
  Object.assign(document.body.dataset, {
    forwardMs: r.forwardMs.toFixed(3),
    computeMs: r.computeMs.toFixed(3),
    redrawMs: redrawMs.toFixed(3),
    tokens: String(r.T),
    renderCount: String(++page.renderCount),
    ready: 'true',
  });
}

function draw(state, tokens, x) {
  const r = page.result;
  const { panels } = page;
  const labels = tokens.map((t) => tokenLabel(t.text));
  const names = tokens.map((t) => tokenName(t.text));
  page.view = {
    x,
    rowLabels: labels.slice(r.q0), rowNames: names.slice(r.q0),
    colLabels: labels, colNames: names,
  };
  if (page.selectedRow !== null && page.selectedRow >= r.Tq) page.selectedRow = null;
  renderChips(tokens, r.q0, state);

  // Colour mode applies to the probability panels only; set before the data.
  const headMaps = headMapsFor(r.H);
  for (const hm of [...PROBABILITY_PANELS.map((id) => panels.get(id)), ...headMaps]) {
    hm.setOptions({ colourMode: state.colourMode });
  }

  const size = r.Tq * r.T;
  const v = page.view;
  const common = {
    rows: r.Tq, cols: r.T, rowLabels: v.rowLabels, rowNames: v.rowNames, colLabels: v.colLabels, colNames: v.colNames,
  };
  const off = r.head * size;
  panels.get('scores').setData({ ...common, values: r.scores, offset: off });
  panels.get('scaled').setData({ ...common, values: r.scores, offset: off, scale: r.scale });
  panels.get('masked').setData({ ...common, values: r.scores, offset: off, scale: r.scale, maskShift: r.maskShift });
  panels.get('weights').setData({ ...common, values: r.weights, offset: off, maskShift: r.maskShift });
  panels.get('dropout').setData({
    ...common, values: r.dropped ?? r.weights, offset: off, maskShift: r.maskShift,
  });
  const dims = Array.from({ length: r.outDim }, (_, d) => `d${d + 1}`);
  panels.get('context').setData({
    rows: r.Tq, cols: r.outDim, values: r.output,
    rowLabels: v.rowLabels, rowNames: v.rowNames, colLabels: dims, colNames: dims,
  });
  headMaps.forEach((hm, h) => {
    hm.setData({ ...common, values: r.weights, offset: h * size, maskShift: r.maskShift });
  });

  const rn = r.renorm;
  // (A Learn head skips the chapter's first route: its page section then says nothing.)
  $('renormalize-off').hidden = rn !== null || r.route.kind === 'learn' || r.route.kind === 'model';
  $('renormalize-panels').hidden = rn === null;
  if (rn) {
    panels.get('full').setData({ ...common, values: rn.full });
    panels.get('tri').setData({ ...common, values: rn.tri, maskShift: r.maskShift });
    panels.get('renorm').setData({ ...common, values: rn.renorm, maskShift: r.maskShift });
  }

  for (const [id, text] of Object.entries(panelNotes(r, state))) setNote(id, text);
  $('pipeline-title').textContent = r.title ?? pipelineTitle(r);
  $('route').textContent = r.route.line ?? routeLine(r, state);
  for (const hm of allMaps()) hm.setSelectedRow(page.selectedRow);
  describeRow();
}

/**
 * A trained head of the Learn section in the pipeline's panels: `r` is
 * learn-pipeline.mjs's result (runPipeline's shape), `tokens` the probe's.
 * The next change of a setting above draws the book's example again.
 */
function showLearnHead(r, tokens) {
  page.generation += 1; // an update on its way no longer draws over it
  page.result = r;
  page.selectedRow = null;
  page.chipsFor = null;
  draw({ ...readForm(fields).state, training: false }, tokens, r.x);
  const name = `${r.layer + 1}.${r.head + 1}`;
  delete document.body.dataset.learnHead;
  delete document.body.dataset.modelHead;
  Object.assign(document.body.dataset, r.route.kind === 'model' ? { modelHead: name, renderCount: String(++page.renderCount) }
    : { learnHead: name, renderCount: String(++page.renderCount) });
  $('pipeline-title').scrollIntoView({ block: 'start' });
}

// ---------------------------------------------------------------- start

function applyPreset(name) {
  const preset = PRESETS[name];
  if (!preset) return;
  // The long text is generated (and tokenised) only when first asked for.
  const text = preset.state.text ?? (page.longText ??= longText());
  writeForm(fields, { ...preset.state, text });
  page.selectedRow = null;
}

function wireControls() {
  const presetSelect = fields.preset;
  for (const [name, preset] of Object.entries(PRESETS)) presetSelect.append(new Option(preset.label, name));
  presetSelect.append(new Option('Custom settings', 'custom'));
  presetSelect.addEventListener('change', () => {
    applyPreset(presetSelect.value);
    schedule();
  });
  form.addEventListener('input', (e) => {
    if (e.target === presetSelect) return;
    if (e.target === fields.showTables) {
      document.body.classList.toggle('show-tables', fields.showTables.checked);
      return;
    }
    schedule();
  });
  form.addEventListener('submit', (e) => e.preventDefault());
  // Re-lay out on size changes (phone rotation, window resize): repaint
  // from the cached images, no recompute.
  let resizePending = false;
  new ResizeObserver(() => {
    if (resizePending) return;
    resizePending = true;
    requestAnimationFrame(() => {
      resizePending = false;
      for (const hm of allMaps()) hm.render();
    });
  }).observe(document.querySelector('main'));
}

async function main() {
  document.documentElement.dataset.started = 'true';  // boot.js: the modules loaded
  document.documentElement.style.setProperty('--masked', MASKED.css);
  document.documentElement.style.setProperty('--masked-hatch', MASKED.hatch);
  createPanels();
  wireControls();
  applyPreset(DEFAULT_PRESET);
  // The Learn section trains in a worker of its own, which loads the
  // package itself: it starts now, alongside the engine below.
  setupLearn({ getText: () => fields.text.value, showInPipeline: showLearnHead });
  setupModel({ showInPipeline: showLearnHead });
  // The one place the page obtains its runtime: in a worker, so that no
  // computation ever blocks the page's thread.
  page.ca = await init({ worker: true });
  const { ca } = page;
  $('engine').textContent = engineLine(ca, globalThis.crossOriginIsolated === true);
  Object.assign(document.body.dataset, { build: ca.build, threads: String(ca.threads) });
  update();
}

main().catch((error) => {
  $('engine').textContent = `Failed to start: ${error.message}`;
  throw error;
});
