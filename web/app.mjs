// The demo page: settings → tokens and embeddings → the wasm engine → linked
// heatmaps. Every change recomputes and redraws within the next frame.
//
// All user text reaches the page through textContent, attribute properties
// and canvas fillText, never as HTML.

import { init } from '/dist/index.mjs';
import { SCALES } from './colors.mjs';
import { formatMs, formatValue, tokenLabel, tokenName } from './format.mjs';
import { Heatmap } from './heatmap.mjs';
import { describeModule, runPipeline } from './pipeline.mjs';
import { DEFAULT_PRESET, PRESETS, matchPreset, readForm, writeForm } from './state.mjs';
import { D_IN, MAX_TOKENS, bookWord, embed, longText, tokenize } from './tokens.mjs';

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

let ca;
let result = null;
let view = null; // labels and embeddings of the current result
let selectedRow = null; // query row index, shared by every panel
let tokenCache = { text: null, tokens: [], total: 0 };
let chipsFor = null;
let headsShown = -1;
const panels = new Map(); // id → Heatmap
let headMaps = [];
let renderCount = 0;
let longTextCache = null;

function setNote(panelId, text) {
  const note = document.querySelector(`#panel-${panelId} .note`);
  if (note) note.textContent = text;
}

function makeHeatmap(root, spec) {
  return new Heatmap(root, {
    ...spec,
    onHover: onHover,
    onSelect: (row) => selectRow(row),
  });
}

function createPanels() {
  for (const [id, spec] of Object.entries(PANEL_SPECS)) {
    const hm = makeHeatmap(document.querySelector(`#panel-${id} .hm`), spec);
    hm.panelId = id;
    panels.set(id, hm);
  }
  panels.get('dropout').options.explain = (i, j) => {
    if (!result?.dropoutActive || panels.get('dropout').masked(i, j)) return '';
    const w = panels.get('weights').value(i, j);
    const d = panels.get('dropout').value(i, j);
    return d === 0 && w !== 0
      ? `dropped (was ${formatValue(w)})`
      : `= ${formatValue(w)} \u00d7 ${formatValue(result.dropoutScale, 2)}`;
  };
}

/** The heads grid's heatmaps, rebuilt when the number of heads changes. */
function headMapsFor(H) {
  if (headsShown === H) return headMaps;
  headsShown = H;
  const grid = $('heads-grid');
  for (const hm of headMaps) hm.dispose();
  grid.replaceChildren();
  headMaps = [];
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
    headMaps.push(hm);
  }
  return headMaps;
}

function allMaps() {
  return [...panels.values(), ...headMaps];
}

// ---------------------------------------------------------------- hover

/** Text following cell (i, j) of head h through the pipeline. */
function describeCell(cell, source) {
  const r = result;
  const v = view;
  const i = cell.i;
  const q = `query ${v.rowNames[i]} (row ${i + 1})`;
  if (source.panelId === 'context' && cell.j !== null) {
    const o = r.output[i * r.outDim + cell.j];
    return `${q}, context dimension ${cell.j + 1}: ${formatValue(o)}`;
  }
  const h = source.headIndex ?? r.head;
  const weights = source.headIndex !== undefined ? headMaps[h] : panels.get('weights');
  if (cell.j === null) {
    return `${q}: weights sum to ${formatValue(weights.rowSum(i))}` +
      (r.dropoutActive && source.headIndex === undefined
        ? `, ${formatValue(panels.get('dropout').rowSum(i))} after dropout` : '') +
      '. Click to select this row.';
  }
  const j = cell.j;
  const k = `key ${v.colNames[j]} (column ${j + 1})`;
  const at = (a) => a[(h * r.Tq + i) * r.T + j];
  const masked = r.maskShift !== null && j > i + r.maskShift;
  const s = at(r.scores);
  const parts = [
    `score ${formatValue(s)}`,
    `scaled ${formatValue(s * r.scale)}`,
    `masked ${masked ? '\u2212\u221e' : formatValue(s * r.scale)}`,
    `softmax ${masked ? '0 (masked)' : formatValue(at(r.weights))}`,
  ];
  if (r.dropoutActive) {
    const d = at(r.dropped);
    parts.push(`after dropout ${masked ? '0' : formatValue(d)}${!masked && d === 0 ? ' (dropped)' : ''}`);
  }
  return `${q} \u2192 ${k}, head ${h + 1}: ${parts.join(' \u2192 ')}; row sum ${formatValue(weights.rowSum(i))}`;
}

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
  if (cell && result) $('inspector').textContent = describeCell(cell, source);
  // For the browser test's log: how long a hover takes to answer.
  document.body.dataset.hoverMs = (performance.now() - t0).toFixed(3);
}

function selectRow(row) {
  selectedRow = row;
  for (const hm of allMaps()) hm.setSelectedRow(row);
  for (const chip of $('tokens').children) {
    chip.setAttribute('aria-pressed', String(Number(chip.dataset.row) === row));
  }
  describeRow();
}

/** The selected query's strongest keys, in words. */
function describeRow() {
  const out = $('row-detail');
  if (selectedRow === null || !result) {
    out.textContent = '';
    return;
  }
  const r = result;
  const i = selectedRow;
  const base = (r.head * r.Tq + i) * r.T;
  const weights = r.weights.subarray(base, base + r.T);
  const order = Array.from(weights.keys()).filter((j) => weights[j] > 0).sort((a, b) => weights[b] - weights[a]);
  const top = order.slice(0, 5).map((j) => `${view.colNames[j]} ${formatValue(weights[j])}`);
  out.textContent = `Selected query ${view.rowNames[i]} (row ${i + 1}) attends most to: ${top.join(', ')}` +
    (order.length > 5 ? ` (and ${order.length - 5} more keys)` : '') + '.';
}

// ---------------------------------------------------------------- tokens

function renderChips(tokens, q0, state) {
  const key = `${tokenCache.text}\u0000${q0}\u0000${state.bookEmbeddings}\u0000${state.seed}`;
  if (chipsFor === key) return;
  chipsFor = key;
  const box = $('tokens');
  const chips = tokens.map((t, index) => {
    const b = document.createElement('button');
    b.type = 'button';
    b.className = 'chip';
    b.textContent = tokenLabel(t.text, 24);
    const row = index - q0;
    b.dataset.row = row;
    const x = Array.from(view.x.subarray(index * D_IN, (index + 1) * D_IN), (v) => v.toFixed(2));
    b.title = `${tokenName(t.text)}${t.partial ? ' (a byte piece of a multi-byte character)' : ''} ` +
      `\u00b7 token id ${t.id} \u00b7 x = [${x.join(', ')}]` +
      (row < 0 ? ' \u00b7 key only (not a query)' : '');
    if (row < 0) b.classList.add('key-only');
    if (state.bookEmbeddings && bookWord(t)) b.classList.add('book');
    b.setAttribute('aria-pressed', String(row === selectedRow));
    if (row >= 0) b.addEventListener('click', () => selectRow(selectedRow === row ? null : row));
    else b.disabled = true;
    return b;
  });
  box.replaceChildren(...chips);
}

function getTokens(text) {
  if (tokenCache.text !== text) tokenCache = { text, ...tokenize(text) };
  return tokenCache;
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

let pending = false;
function schedule() {
  if (pending) return;
  pending = true;
  requestAnimationFrame(update);
}

function update() {
  pending = false;
  const { state, errors } = readForm(fields);
  $('dropout-value').textContent = Number(fields.dropout.value).toFixed(2);
  fields.multiHead.disabled = state.heads === 1;
  const { tokens, total } = getTokens(state.text);
  const T = tokens.length;
  $('token-count').textContent = T === 0 ? 'Type some text: no tokens yet.'
    : `${T} token${T === 1 ? '' : 's'}` + (total > T ? ` (the first ${MAX_TOKENS} of ${total})` : '') +
      '. Hover a token for its id and embedding.';
  fields.queries.max = String(Math.max(1, T));
  if (T === 0) errors.push('The text has no tokens.');
  if (state.queries !== null && state.queries > T && T > 0) {
    errors.push(`Query tokens must be at most the number of tokens (${T}), got ${state.queries}.`);
  }
  fields.preset.value = matchPreset(state, longTextCache);
  $('form-error').textContent = errors.join(' ');
  document.body.classList.toggle('has-error', errors.length > 0);
  if (errors.length) return;

  fillHeadSelect(state.heads, state.head);
  state.head = Number(fields.head.value);
  const x = embed(tokens, state);
  try {
    result = runPipeline(ca, state, tokens, x);
  } catch (error) {
    $('form-error').textContent = `The engine refused: ${error.message}`;
    document.body.classList.add('has-error');
    return;
  }
  const t0 = performance.now();
  draw(state, tokens, x);
  const redrawMs = performance.now() - t0;
  $('timing').textContent = `\u00b7 last forward pass ${formatMs(result.forwardMs)} ms \u00b7 all matrices ` +
    `${formatMs(result.computeMs)} ms \u00b7 redraw ${formatMs(redrawMs)} ms (T = ${result.T})`;
  Object.assign(document.body.dataset, {
    forwardMs: result.forwardMs.toFixed(3),
    computeMs: result.computeMs.toFixed(3),
    redrawMs: redrawMs.toFixed(3),
    tokens: String(result.T),
    renderCount: String(++renderCount),
    ready: 'true',
  });
}

function draw(state, tokens, x) {
  const r = result;
  const labels = tokens.map((t) => tokenLabel(t.text));
  const names = tokens.map((t) => tokenName(t.text));
  view = {
    x,
    rowLabels: labels.slice(r.q0), rowNames: names.slice(r.q0),
    colLabels: labels, colNames: names,
  };
  if (selectedRow !== null && selectedRow >= r.Tq) selectedRow = null;
  renderChips(tokens, r.q0, state);

  // Colour mode applies to the probability panels only; set before the data.
  const probability = [...['weights', 'dropout', 'full', 'tri', 'renorm'].map((id) => panels.get(id)), ...headMapsFor(r.H)];
  for (const hm of probability) hm.setOptions({ colourMode: state.colourMode });

  const size = r.Tq * r.T;
  const common = {
    rows: r.Tq, cols: r.T,
    rowLabels: view.rowLabels, rowNames: view.rowNames, colLabels: view.colLabels, colNames: view.colNames,
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
    rowLabels: view.rowLabels, rowNames: view.rowNames, colLabels: dims, colNames: dims,
  });

  const hd = r.hd;
  setNote('scaled', `Divided by \u221a${hd} (the head size d_k), i.e. \u00d7 ${formatValue(r.scale)}, ` +
    'so the softmax does not saturate as d_k grows.');
  setNote('masked', r.maskShift === null
    ? 'Causal mask off: nothing is masked, every query sees the future too.'
    : `Scores of future keys set to \u2212\u221e (${state.alignment}` +
      `${r.maskShift > 0 ? `: query i sees keys up to i + ${r.maskShift}` : ''}).`);
  setNote('weights', r.maskShift === null
    ? 'softmax over every key: each row sums to 1.'
    : 'softmax per row: e^\u2212\u221e = 0, so the future gets weight 0 and each row still sums to 1.');
  setNote('dropout', r.dropoutActive
    ? `p = ${state.dropout}: each weight dropped with probability p, the kept ones \u00d7 1/(1 \u2212 p) = ` +
      `\u00d7 ${formatValue(r.dropoutScale, 2)}, so rows no longer sum to 1.`
    : `Dropout is off (${state.training ? 'p = 0' : 'eval mode'}): the weights pass unchanged.`);
  setNote('context', `Weights \u00d7 V: row i mixes the value vectors of the keys it sees. ` +
    (r.mod.kind === 'MultiHeadAttention' ? 'All heads, merged and through out_proj.'
      : r.mod.kind === 'MultiHeadAttentionWrapper' ? `All heads concatenated (head ${r.head + 1}: ` +
        `d${r.head * hd + 1}\u2013d${(r.head + 1) * hd}).` : '') +
    (r.dropoutActive ? ' With dropout applied.' : ''));

  headMapsFor(r.H).forEach((hm, h) => {
    hm.setData({ ...common, values: r.weights, offset: h * size, maskShift: r.maskShift });
  });

  const rn = r.renorm;
  $('renormalize-off').hidden = rn !== null;
  $('renormalize-panels').hidden = rn === null;
  if (rn) {
    panels.get('full').setData({ ...common, values: rn.full });
    panels.get('tri').setData({ ...common, values: rn.tri, maskShift: r.maskShift });
    panels.get('renorm').setData({ ...common, values: rn.renorm, maskShift: r.maskShift });
    setNote('renorm', `Rows sum to 1 again. Largest difference from panel 4 (the \u2212\u221e route): ` +
      `${rn.manualVsMinusInf.toExponential(1)}; the engine\u2019s maskStrategy 'renormalize': ` +
      `${rn.engineVsMinusInf.toExponential(1)} (float32 rounding).`);
  }

  const m = describeModule(state);
  $('pipeline-title').textContent = r.H > 1 ? `The pipeline, head ${r.head + 1} of ${r.H}` : 'The pipeline';
  $('route').textContent = `${m.kind} (listing ${m.listing}), d_in ${D_IN}, d_out ${state.dOut}` +
    `${r.H > 1 ? `, ${r.H} heads of ${hd}` : ''}, ${r.Tq} quer${r.Tq === 1 ? 'y' : 'ies'} \u00d7 ${r.T} keys. ` +
    `Computed by ${r.route.call}.`;
  for (const hm of allMaps()) hm.setSelectedRow(selectedRow);
  describeRow();
}

// ---------------------------------------------------------------- start

function applyPreset(name) {
  const preset = PRESETS[name];
  if (!preset) return;
  // The long text is generated (and tokenised) only when first asked for.
  const text = preset.state.text ?? (longTextCache ??= longText());
  writeForm(fields, { ...preset.state, text });
  selectedRow = null;
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
  createPanels();
  wireControls();
  applyPreset(DEFAULT_PRESET);
  ca = await init();
  const isolated = globalThis.crossOriginIsolated === true;
  $('engine').textContent = `Engine: ${ca.target} SIMD, ${ca.build} build, ${ca.threads} ` +
    `thread${ca.threads === 1 ? '' : 's'}` +
    (isolated ? ' (page cross-origin isolated)' : ' (page not cross-origin isolated: single-threaded fallback)');
  Object.assign(document.body.dataset, { build: ca.build, threads: String(ca.threads) });
  update();
}

main().catch((error) => {
  $('engine').textContent = `Failed to start: ${error.message}`;
  throw error;
});
