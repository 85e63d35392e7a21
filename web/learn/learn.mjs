// The Learn section's wiring: settings → the training worker
// (learn-worker.mjs, which runs the package itself) → the loss curve
// (uPlot), the status line, every head's triangle on the probe with its
// scores and sparklines, and generation. Messages from the worker are
// applied at once; drawing waits for the next animation frame, once per
// frame, so the page stays smooth however fast the worker reports.
//
// Its topics: learn-state.mjs (the state, the frame's drawing),
// learn-settings.mjs (the form, the buttons), learn-progress.mjs (losses,
// chart, status line), learn-heads.mjs (the heads' triangles, scores, hover,
// selection), learn-generation.mjs (prompt and generated tokens); here the
// run (configure, the worker's messages) and the controls' events.
//
// User text reaches the page through textContent and canvas fillText only.

import { buildAblation, drawAblationStatus } from './views/ablation.mjs';
import { addToken, generate, writePrompt } from './views/generation.mjs';
import { addScores, buildHeads, drawHeads, setView } from './views/heads.mjs';
import { addIcl, createIclCharts, drawIcl, resetIcl } from './views/icl-view.mjs';
import { addLosses, createChart, drawChart, drawStatus } from './views/progress.mjs';
import { readSettings, setButtons, taskHint, writeSettings } from './views/settings.mjs';
import { onLabMessage, setupLab } from './views/lab.mjs';
import { fillOpenSelect, followBest, onOpenMessage, setupOpen } from './views/open.mjs';
import { followProbe, onScrubMessage, resetScrub, setupScrub } from './views/scrub.mjs';
import { onShareMessage, setupShare } from './views/share.mjs';
import { $, draw, learn, setPainters } from './views/state.mjs';
import { DEFAULTS, LIMITS, checkSettings } from './model/trainer.mjs';
import { variantHint } from './model/variants.mjs';
import { tokenize } from '../core/tokens.mjs';

setPainters({
  chart: drawChart, heads: drawHeads, icl: drawIcl,
  status: () => {
    drawStatus();
    drawAblationStatus();
  },
});

/**
 * Checks the form; with no problem, starts a new run (step 0, paused), or
 * with `restore` continues the run saved in this browser if it has these settings.
 */
function configure(restore = false) {
  const s = readSettings();
  $('task-hint').textContent = taskHint(s);
  $('learn-vocab').disabled = s.task !== 'induction';
  $('attention-hint').textContent = variantHint(s);
  $('learn-window').disabled = s.attention !== 'window';
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
  resetScrub();
  drawStatus(); // at once: step 0 from here on, whatever the old run still says
  learn.worker.postMessage({ type: 'configure', settings, run: ++learn.run, restore });
}

// ---------------------------------------------------------------- worker

function onMessage({ data: m }) {
  if (m.type !== 'ready' && m.type !== 'error' && m.run !== learn.run) return;
  switch (m.type) {
    case 'ready':
      learn.ready = true;
      if (m.saved) writeSettings(m.saved);
      configure(Boolean(m.saved));
      return;
    case 'configured':
      learn.info = m.info;
      buildHeads();
      buildAblation();
      resetIcl();
      fillOpenSelect();
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
      addIcl(m);
      followProbe();
      followBest();
      draw('heads', 'status', 'icl');
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
      if (onScrubMessage(m) || onShareMessage(m) || onOpenMessage(m) || onLabMessage(m)) return;
      throw new TypeError(`unknown message from the training worker: ${m.type}`);
  }
}

// ---------------------------------------------------------------- start

/**
 * Wires the section; `getText()` returns the text box's text (the text
 * task), `showInPipeline(result, tokens)` shows a head in the page's pipeline.
 */
export function setupLearn({ getText, showInPipeline }) {
  learn.getText = getText;
  learn.showInPipeline = showInPipeline;
  writeSettings(DEFAULTS);
  const s = readSettings();
  $('task-hint').textContent = taskHint(s);
  for (const [name, [lo, hi]] of Object.entries(LIMITS)) {
    const input = $('learn-controls').elements[name];
    if (input?.type === 'number') Object.assign(input, { min: String(lo), max: String(hi) });
  }
  createChart();
  createIclCharts();
  setupScrub();
  setupShare();
  setupOpen();
  setupLab();
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
  learn.worker = new Worker(new URL('./model/worker.mjs', import.meta.url), { type: 'module' });
  learn.worker.onmessage = onMessage;
  learn.worker.onerror = (e) => {
    $('learn-error').textContent = `The training worker failed: ${e.message ?? 'it did not load'}`;
  };
}
