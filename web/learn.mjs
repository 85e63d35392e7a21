// The Learn section's wiring: settings → the training worker
// (learn-worker.mjs, which runs the package itself) → the loss curve
// (uPlot), the status line, every head's triangle on the probe with its
// scores and sparklines, and generation. Messages from the worker are
// applied at once; drawing waits for the next animation frame, once per
// frame, so the page stays smooth however fast the worker reports.
//
// User text reaches the page through textContent and canvas fillText only.

import uPlot from '/vendor/uplot/dist/uPlot.esm.js';
import { SCALES } from './colors.mjs';
import { formatValue, tokenLabel, tokenName } from './format.mjs';
import { Heatmap } from './heatmap.mjs';
import { inductionGuesses } from './learn-metrics.mjs';
import { parseTokenNumbers, period, toCompactIds } from './learn-tasks.mjs';
import { DEFAULTS, LIMITS, checkSettings } from './learn-trainer.mjs';
import { drawSparkline } from './sparkline.mjs';
import { tokenize } from './tokens.mjs';

const $ = (id) => document.getElementById(id);

/** Sparkline colours: previous-token and induction scores. */
const PREVIOUS_COLOUR = '#1c7ed6';
const INDUCTION_COLOUR = '#d9480f';
/** Most points a sparkline keeps (older ones are thinned by half). */
const SPARK_POINTS = 400;
/** Milliseconds between generated tokens, so that the rows can be seen arriving. */
const TOKEN_DELAY_MS = 60;

const SETTING_FIELDS = ['vocab', 'layers', 'heads', 'dModel', 'contextLength', 'seed', 'lr', 'batch'];

const learn = {
  worker: null,
  ready: false,
  run: 0, // the newest run asked for: messages of older ones are dropped
  getText: () => '',
  info: null, // the run's sizes from the worker ('configured')
  textTokens: null, // { gpt2 id → token } of the text the run trains on (and of prompts)
  running: false, // what the page asked for (the Start / Pause button)
  workerRunning: false, // what the worker last said: false once no more steps are on their way
  losses: [],
  smooth: [],
  chance: [],
  stepsPerSecond: 0,
  probe: null, // the latest { step, weights, scores }
  history: [], // per head: { steps, previous, induction } (sparklines)
  best: null, // { score, layer, head }
  maps: [], // per head: { hm, fig, scores, sparkPrevious, sparkInduction, layer, head }
  view: 'probe',
  generation: null,
  selectedRow: null,
  chart: null,
  dirty: new Set(),
  framePending: false,
};

// ---------------------------------------------------------------- settings

function readSettings() {
  const form = $('learn-controls').elements;
  const s = { task: form.task.value };
  for (const name of SETTING_FIELDS) s[name] = form[name].value === '' ? NaN : Number(form[name].value);
  return s;
}

function writeSettings(s) {
  const form = $('learn-controls').elements;
  form.task.value = s.task;
  for (const name of SETTING_FIELDS) form[name].value = String(s[name]);
}

function taskHint(s) {
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

/** Checks the form; with no problem, starts a new run (step 0, paused). */
function configure() {
  const s = readSettings();
  $('task-hint').textContent = taskHint(s);
  $('learn-vocab').disabled = s.task !== 'induction';
  const settings = { ...s };
  let tokens = [];
  if (s.task === 'text') {
    // The page's tokenizer: GPT-2 tokens, at most its 1024.
    tokens = tokenize(learn.getText()).tokens;
    settings.text = tokens.map((t) => t.id);
    learn.textTokens = new Map(tokens.map((t) => [t.id, t]));
  }
  const problems = checkSettings(s, tokens.length);
  $('learn-error').textContent = problems.join(' ');
  setButtons();
  if (problems.length || !learn.ready) return;
  learn.running = false;
  learn.workerRunning = false;
  learn.losses = [];
  learn.smooth = [];
  learn.chance = [];
  learn.probe = null;
  learn.best = null;
  learn.history = [];
  learn.generation = null;
  setView('probe');
  $('view-generation').disabled = true;
  $('gen-output').textContent = '';
  $('gen-error').textContent = '';
  delete $('gen-output').dataset.tokens;
  delete $('gen-output').dataset.done;
  $('loss-table').tBodies[0].replaceChildren();
  learn.info = null;
  setButtons();
  drawStatus(); // at once: step 0 from here on, whatever the old run still says
  learn.worker.postMessage({ type: 'configure', settings, run: ++learn.run });
}

// Start and Step stay usable while a new run is set up: the worker answers
// messages in order, so a Start right after a change of settings (the
// field's change event comes first) starts the new run.
function setButtons() {
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

// ---------------------------------------------------------------- worker

function onMessage({ data: m }) {
  if (m.type !== 'ready' && m.type !== 'error' && m.run !== learn.run) return;
  switch (m.type) {
    case 'ready':
      learn.ready = true;
      configure();
      return;
    case 'configured':
      learn.info = m.info;
      buildHeads();
      writePrompt();
      $('learn').dataset.ready = 'true';
      setButtons();
      draw('chart', 'status');
      return;
    case 'progress':
      addLosses(m.losses, m.step);
      learn.stepsPerSecond = m.stepsPerSecond;
      learn.workerRunning = m.running;
      draw('chart', 'status');
      return;
    case 'probe':
      learn.probe = m;
      addScores(m);
      draw('heads', 'status');
      return;
    case 'token':
      addToken(m);
      draw('heads');
      return;
    case 'error':
      learn.running = false;
      learn.workerRunning = false;
      $('learn-error').textContent = `Training stopped: ${m.message}`;
      setButtons();
      draw('status');
      return;
    default:
      throw new TypeError(`unknown message from the training worker: ${m.type}`);
  }
}

function addLosses(losses, step) {
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

function addScores({ step, scores }) {
  let best = null;
  scores.forEach((sc, k) => {
    const h = (learn.history[k] ??= { steps: [], previous: [], induction: [] });
    if (h.steps.length && h.steps[h.steps.length - 1] === step) {
      h.previous.pop();
      h.induction.pop();
      h.steps.pop();
    }
    h.steps.push(step);
    h.previous.push(sc.previousToken);
    h.induction.push(sc.induction);
    if (h.steps.length > SPARK_POINTS) {
      for (const key of ['steps', 'previous', 'induction']) h[key] = h[key].filter((_, i) => i % 2 === 0);
    }
    if (!best || sc.induction > best.score) best = { score: sc.induction, layer: sc.layer, head: sc.head };
  });
  learn.best = best;
}

// ---------------------------------------------------------------- drawing

function draw(...parts) {
  for (const p of parts) learn.dirty.add(p);
  if (learn.framePending) return;
  learn.framePending = true;
  requestAnimationFrame(() => {
    learn.framePending = false;
    const dirty = new Set(learn.dirty);
    learn.dirty.clear();
    if (dirty.has('chart')) drawChart();
    if (dirty.has('heads')) drawHeads();
    if (dirty.has('status')) drawStatus();
  });
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

function drawStatus() {
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

function createChart() {
  const box = $('loss-chart');
  const opts = {
    width: Math.max(200, box.clientWidth),
    height: 220,
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
  learn.chart = new uPlot(opts, [[], [], [], []], box);
  new ResizeObserver(() => {
    const w = Math.max(200, box.clientWidth);
    if (learn.chart.width !== w) learn.chart.setSize({ width: w, height: 220 });
  }).observe(box);
}

function drawChart() {
  const n = learn.losses.length;
  const xs = Array.from({ length: n }, (_, k) => k);
  learn.chart.setData([xs, learn.losses, learn.smooth, learn.chance]);
  $('loss-note').textContent = learn.info?.settings.task === 'induction'
    ? 'Cross-entropy on the repeats (the first P tokens of each sequence cannot be predicted and are not counted).'
    : 'Cross-entropy of the next token, over every position of each window of the text.';
}

// One figure per head: caption with its scores and sparklines, the triangle.
function buildHeads() {
  const { layers, heads } = learn.info.settings;
  const grid = $('learn-head-grid');
  for (const m of learn.maps) m.hm.dispose();
  grid.replaceChildren();
  learn.maps = [];
  for (let l = 0; l < layers; l++) {
    // One row of heads per layer: layer 1's previous-token heads above the
    // layer-2 heads that read them.
    const row = document.createElement('div');
    row.className = 'learn-layer';
    row.setAttribute('role', 'group');
    row.setAttribute('aria-label', `Layer ${l + 1}`);
    grid.append(row);
    for (let h = 0; h < heads; h++) {
      const fig = document.createElement('figure');
      fig.className = 'head-panel learn-head';
      const cap = document.createElement('figcaption');
      const title = document.createElement('strong');
      title.textContent = `Layer ${l + 1} \u00b7 head ${h + 1}`;
      const scores = document.createElement('div');
      scores.className = 'head-scores';
      const line = (label, colour) => {
        const row = document.createElement('div');
        row.className = 'score-line';
        const name = document.createElement('span');
        name.textContent = label;
        const value = document.createElement('span');
        value.className = 'score-value';
        const canvas = document.createElement('canvas');
        canvas.className = 'sparkline';
        canvas.setAttribute('aria-hidden', 'true');
        canvas.dataset.colour = colour;
        row.append(name, value, canvas);
        scores.append(row);
        return { value, canvas };
      };
      const previous = line('previous token', PREVIOUS_COLOUR);
      const induction = line('induction', INDUCTION_COLOUR);
      cap.append(title, scores);
      const box = document.createElement('div');
      fig.append(cap, box);
      row.append(fig);
      const hm = new Heatmap(box, {
        name: `layer ${l + 1} head ${h + 1} weight`, scale: SCALES.weights, domain: 'zero-max', compact: true,
        maxCell: 24, tableLimit: 400, onHover: onHeadHover, onSelect: selectRow,
      });
      learn.maps.push({ hm, fig, previous, induction, layer: l, head: h });
    }
  }
}

/** Labels and names of compact token ids. */
function labelsFor(ids) {
  const { gpt2Ids } = learn.info;
  if (!gpt2Ids) {
    const labels = Array.from(ids, (id) => String(id));
    return { labels, names: labels.map((l) => `token ${l}`) };
  }
  const texts = Array.from(ids, (id) => learn.textTokens.get(gpt2Ids[id])?.text ?? '\ufffd');
  return { labels: texts.map((t) => tokenLabel(t)), names: texts.map((t) => tokenName(t)) };
}

// What the triangles show: { ids, T, weights (per layer [heads, T, T]) }.
function shown() {
  if (learn.view === 'generation' && learn.generation) {
    const g = learn.generation;
    const n = g.rows.length;
    if (n === 0) return null; // the prompt's rows are on their way
    const { layers, heads } = learn.info.settings;
    const weights = Array.from({ length: layers }, (_, l) => {
      const w = new Float32Array(heads * n * n);
      g.rows.forEach((row, i) => {
        for (let h = 0; h < heads; h++) w.set(row[l][h], h * n * n + i * n);
      });
      return w;
    });
    return { ids: g.ids.slice(0, n), T: n, weights };
  }
  if (!learn.probe) return null;
  return { ids: learn.info.probeIds, T: learn.info.tokens, weights: learn.probe.weights };
}

function drawHeads() {
  const view = shown();
  if (!view) return;
  const { labels, names } = labelsFor(view.ids);
  const scores = learn.probe?.scores;
  for (const [k, m] of learn.maps.entries()) {
    m.hm.setData({
      values: view.weights[m.layer], offset: m.head * view.T * view.T, rows: view.T, cols: view.T, maskShift: 0,
      rowLabels: labels, colLabels: labels, rowNames: names, colNames: names,
    });
    m.hm.setSelectedRow(learn.selectedRow !== null && learn.selectedRow < view.T ? learn.selectedRow : null);
    const sc = scores?.[k];
    const h = learn.history[k];
    m.previous.value.textContent = sc ? formatValue(sc.previousToken, 2) : '';
    m.induction.value.textContent = sc ? formatValue(sc.induction, 2) : '';
    if (h) {
      drawSparkline(m.previous.canvas, h.steps, h.previous, { colour: PREVIOUS_COLOUR });
      drawSparkline(m.induction.canvas, h.steps, h.induction, { colour: INDUCTION_COLOUR });
    }
    const isBest = learn.best && learn.best.layer === m.layer && learn.best.head === m.head && learn.best.score > 0.2;
    m.fig.classList.toggle('best', Boolean(isBest));
  }
  const T = learn.info.tokens;
  const P = learn.info.period;
  $('probe-hint').textContent = learn.view === 'generation' && learn.generation
    ? `Weights on the generated sequence (${view.T} tokens: the prompt's ${learn.generation.promptLength} and ` +
      `${view.T - learn.generation.promptLength} generated), one query row per token as it was produced.`
    : `Weights on the probe: ${T} tokens whose second half repeats the first (P = ${P}), never trained on as ` +
      'such. The previous-token score is the mean weight on the key just before each query; the induction ' +
      'score, on the repeat, the mean weight on the key right after the earlier occurrence of the query\'s ' +
      `token (key i \u2212 ${P - 1}): a stripe parallel to the diagonal. Uniform attention scores about ` +
      `${formatValue(2 / T, 2)} on both.`;
}

// ---------------------------------------------------------------- hover and selection

function onHeadHover(cell, source) {
  for (const m of learn.maps) m.hm.setHover(cell, { tooltip: m.hm === source });
  if (!cell || !source.data || !learn.info) return;
  const m = learn.maps.find((x) => x.hm === source);
  const d = source.data;
  const { i, j } = cell;
  let text = `Layer ${m.layer + 1}, head ${m.head + 1}: query ${d.rowNames[i]} (row ${i + 1})`;
  if (j !== null) {
    text += ` \u2192 key ${d.colNames[j]} (column ${j + 1}): ` +
      (source.masked(i, j) ? 'masked (the future)' : `weight ${formatValue(source.value(i, j))}`);
    const P = learn.info.period;
    if (j === i - 1) text += ' \u2014 the previous token';
    if (learn.view === 'probe' && i >= P && j === i - P + 1) {
      text += ' \u2014 the token after the earlier occurrence of this one (what an induction head looks at)';
    }
  }
  $('learn-inspector').textContent = text;
}

function selectRow(row) {
  learn.selectedRow = row;
  for (const m of learn.maps) m.hm.setSelectedRow(row);
}

function setView(view) {
  learn.view = view;
  $(`view-${view}`).checked = true;
  selectRow(null);
  draw('heads');
}

// ---------------------------------------------------------------- generation

/** The default prompt: the probe's first half and the first 4 tokens of its repeat. */
function writePrompt() {
  const { info } = learn;
  const n = Math.min(info.tokens - 1, info.period + 4);
  const ids = info.probeIds.slice(0, n);
  if (info.gpt2Ids) {
    $('gen-prompt').value = Array.from(ids, (id) => learn.textTokens.get(info.gpt2Ids[id]).text).join('');
    $('gen-prompt-hint').textContent = '(text; only tokens of the training text)';
  } else {
    $('gen-prompt').value = Array.from(ids).join(' ');
    $('gen-prompt-hint').textContent = `(token numbers 0\u2013${info.vocab - 1}, separated by spaces)`;
  }
  $('gen-count').max = String(Math.max(1, info.settings.contextLength - 1));
  $('gen-count').value = String(Math.min(16, info.settings.contextLength - n));
}

function parsePrompt() {
  const { info } = learn;
  const text = $('gen-prompt').value;
  if (!info.gpt2Ids) return parseTokenNumbers(text, info.vocab);
  const { tokens } = tokenize(text);
  if (!tokens.length) return { error: 'The prompt has no tokens.' };
  for (const t of tokens) if (!learn.textTokens.has(t.id)) learn.textTokens.set(t.id, t);
  const { ids, unknown } = toCompactIds(tokens.map((t) => t.id), info.gpt2Ids);
  if (unknown.length) {
    return {
      error: `The model knows only the tokens of its training text; not ${unknown.slice(0, 5)
        .map((id) => tokenName(learn.textTokens.get(id).text)).join(', ')}${unknown.length > 5 ? ', …' : ''}.`,
    };
  }
  return { ids };
}

function generate() {
  if (!learn.info) return;
  const { ids, error } = parsePrompt();
  const limit = learn.info.settings.contextLength;
  const count = Number($('gen-count').value);
  let problem = error;
  if (!problem && ids.length >= limit) problem = `The prompt must be shorter than the context length (${limit} tokens), got ${ids.length}.`;
  if (!problem && !(Number.isInteger(count) && count >= 1)) problem = `New tokens must be a whole number from 1, got ${$('gen-count').value}.`;
  $('gen-error').textContent = problem ?? '';
  if (problem) return;
  learn.generation = {
    ids: Array.from(ids), promptLength: ids.length, rows: [], produced: [], done: false,
  };
  $('view-generation').disabled = false;
  setView('generation');
  $('gen-output').textContent = 'Generating…';
  setButtons();
  learn.worker.postMessage({ type: 'generate', prompt: ids, count: Math.min(count, limit - ids.length), delayMs: TOKEN_DELAY_MS });
}

// The query rows of one generation message: per layer [heads, queries,
// keys], the queries being the newest `queries` tokens of `keys`. Row r
// sees keys 0 … keys − queries + r (the rest is the mask's zeros).
function appendRows(g, weights, queries) {
  const { heads } = learn.info.settings;
  const keys = weights[0].length / (heads * queries);
  for (let r = 0; r < queries; r++) {
    const visible = keys - queries + r + 1;
    g.rows.push(weights.map((w) => Array.from({ length: heads }, (_, h) => {
      const at = (h * queries + r) * keys;
      return w.slice(at, at + visible);
    })));
  }
}

function addToken(m) {
  const g = learn.generation;
  if (!g) return;
  if (m.id !== null) {
    g.ids.push(m.id);
    g.produced.push(m.id);
  }
  if (m.weights) appendRows(g, m.weights, m.queries);
  if (m.done) g.done = true;
  describeGeneration();
  setButtons();
}

function describeGeneration() {
  const g = learn.generation;
  const { labels } = labelsFor(g.produced);
  const out = $('gen-output');
  if (!g.produced.length) {
    out.textContent = g.done ? 'No token: the prompt fills the context.' : 'Generating…';
    return;
  }
  if (learn.info.gpt2Ids) {
    const texts = g.produced.map((id) => learn.textTokens.get(learn.info.gpt2Ids[id])?.text ?? '\ufffd');
    out.textContent = `Generated: \u201c${texts.join('')}\u201d`;
  } else {
    // Checked against what a perfect induction head would say at each step.
    const guesses = inductionGuesses(g.ids);
    let known = 0;
    let right = 0;
    g.produced.forEach((id, k) => {
      const guess = guesses[g.promptLength - 1 + k];
      if (guess !== null) {
        known++;
        if (guess === id) right++;
      }
    });
    out.textContent = `Generated: ${labels.join(' ')}` +
      (known ? ` \u00b7 ${right} of ${known} continue the repeat (copy what followed the earlier occurrence)` : '');
  }
  out.dataset.tokens = String(g.produced.length);
  if (g.done) out.dataset.done = 'true';
  else delete out.dataset.done;
}

// ---------------------------------------------------------------- start

/** Wires the section; `getText()` returns the text box's text (the text task). */
export function setupLearn({ getText }) {
  learn.getText = getText;
  writeSettings(DEFAULTS);
  const s = readSettings();
  $('task-hint').textContent = taskHint(s);
  for (const [name, [lo, hi]] of Object.entries(LIMITS)) {
    const input = $('learn-controls').elements[name];
    if (input?.type === 'number') Object.assign(input, { min: String(lo), max: String(hi) });
  }
  createChart();
  $('learn-controls').addEventListener('change', (e) => {
    if (e.target.closest('.train-buttons')) return;
    configure();
  });
  $('learn-controls').addEventListener('submit', (e) => e.preventDefault());
  $('train-start').addEventListener('click', () => {
    learn.running = !learn.running;
    if (learn.running) setView('probe');
    learn.worker.postMessage({ type: learn.running ? 'start' : 'pause' });
    setButtons();
    draw('status');
  });
  $('train-step').addEventListener('click', () => {
    setView('probe');
    learn.worker.postMessage({ type: 'step' });
  });
  $('train-reset').addEventListener('click', () => configure());
  $('generate-form').addEventListener('submit', (e) => {
    e.preventDefault();
    generate();
  });
  for (const radio of document.querySelectorAll('input[name="learn-view"]')) {
    radio.addEventListener('change', () => setView(radio.value));
  }
  learn.worker = new Worker(new URL('./learn-worker.mjs', import.meta.url), { type: 'module' });
  learn.worker.onmessage = onMessage;
  learn.worker.onerror = (e) => {
    $('learn-error').textContent = `The training worker failed: ${e.message ?? 'it did not load'}`;
  };
}
