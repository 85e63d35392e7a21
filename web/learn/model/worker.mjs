// The Learn section's training worker: it imports the package itself and
// calls it synchronously (no round trip per call), so training never touches
// the page's thread. It only drives a Trainer (learn-trainer.mjs) and talks.
//
// Page → worker: { type: 'configure', settings, run } (a new run, step 0;
//   every later message of the worker carries its `run`, so that the page
//   can drop what an older run said after it asked for a new one),
//   'start', 'pause', { type: 'step' } (one step), { type: 'generate',
//   prompt, count, delayMs } (pauses training while it runs), { type:
//   'ablate', heads: [[layer, head]] (0-based), run } (knocks those heads
//   out of the probe and generation, not of training; probes at once; an
//   older run's toggles are dropped).
// Worker → page: 'ready' { build }, 'configured' { info }, 'progress' { step,
//   losses (the new ones), stepsPerSecond, running }, 'probe' { step, weights,
//   scores, probeLoss, probeAccuracy, tokenLosses, icl, ablated }, 'token' {
//   index (−1: the prompt), id, weights (per layer [heads, queries, keys]),
//   queries, done }, 'error' { message }.
// Keeping the run (learn-keep.mjs: checkpoints, IndexedDB, state dicts):
//   page → worker { type: 'configure', ..., restore } (continue the saved
//   run if it has these settings), { type: 'checkpoint', index },
//   'state-dict', { type: 'load-state-dict', dict }, { type: 'pipeline',
//   layer, head }; worker → page 'ready'
//   { saved: the saved run's settings or null }, 'checkpoints' { summary },
//   'checkpoint' { index, step, weights, scores, probeLoss }, 'saved'
//   { step }, 'state-dict' { json }, 'loaded', 'keep-error' { message },
//   'pipeline' { result (pipeline.mjs's runPipeline shape) }.
//
// While running it trains in slices of about SLICE_MS, reports after each,
// probes the heads every PROBE_MS, and yields between slices so that
// messages (pause, generate) are answered within a slice.

import { init } from '/dist/index.mjs';
import { Trainer } from './trainer.mjs';
import { Keeper } from './keep.mjs';

const SLICE_MS = 25;
const PROBE_MS = 150;

let ca = null;
let trainer = null;
let run = 0;
let running = false;
let generating = false;
let lastProbe = 0;
const rate = { times: [], steps: [] }; // (time, step) pairs of the last second of running

const post = (message, transfer = []) => postMessage({ ...message, run }, transfer);
const keeper = new Keeper(post);

function reportProgress(from) {
  const now = performance.now();
  rate.times.push(now);
  rate.steps.push(trainer.step);
  while (rate.times.length > 2 && now - rate.times[0] > 1000) {
    rate.times.shift();
    rate.steps.shift();
  }
  const dt = (now - rate.times[0]) / 1000;
  const stepsPerSecond = dt > 0 ? (trainer.step - rate.steps[0]) / dt : 0;
  post({ type: 'progress', step: trainer.step, losses: trainer.losses.slice(from), stepsPerSecond, running });
}

function probe() {
  lastProbe = performance.now();
  const p = trainer.probe();
  post({
    type: 'probe', step: trainer.step, weights: p.weights, scores: p.scores,
    probeLoss: p.probeLoss, probeAccuracy: p.probeAccuracy, tokenLosses: p.tokenLosses, icl: p.icl,
    ablated: p.ablated,
  }, [...p.weights.map((w) => w.buffer), p.tokenLosses.buffer]);
}

// A zero-delay yield that setTimeout's clamping would slow down. Each
// (re)start begins a new chain of slices; a slice of an older chain (still
// queued when training was paused and started again) does nothing.
const channel = new MessageChannel();
let chain = 0;
channel.port1.onmessage = ({ data }) => data === chain && slice();
const yieldThenSlice = () => channel.port2.postMessage(chain);
const resume = () => {
  chain += 1;
  yieldThenSlice();
};

function slice() {
  if (!running || generating || !trainer) return;
  const from = trainer.step;
  const t0 = performance.now();
  do {
    trainer.trainStep();
    keeper.afterStep(trainer);
  } while (performance.now() - t0 < SLICE_MS);
  reportProgress(from);
  if (performance.now() - lastProbe >= PROBE_MS) probe();
  keeper.autosave(trainer);
  yieldThenSlice();
}

const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

async function generate({ prompt, count, delayMs }) {
  // A new run (configure) may arrive between tokens: this one then stops.
  const own = trainer;
  const ownRun = run;
  generating = true;
  try {
    let r = own.startGeneration(prompt);
    post({ type: 'token', index: -1, id: null, weights: r.weights, queries: prompt.length, done: false });
    for (let k = 0; k < count; k++) {
      await sleep(delayMs);
      if (run !== ownRun) return;
      const id = r.next;
      r = own.generateNext(id);
      const done = r === null || k === count - 1;
      post({ type: 'token', index: k, id, weights: r?.weights ?? null, queries: 1, done });
      if (r === null) break;
    }
  } finally {
    generating = false;
    own.dispose();
    if (running) resume();
  }
}

function handle(message) {
  switch (message.type) {
    case 'configure': {
      trainer?.dispose();
      running = false;
      run = message.run;
      trainer = new Trainer(ca, message.settings);
      keeper.configure(trainer, message.restore);
      rate.times.length = 0;
      rate.steps.length = 0;
      post({
        type: 'configured',
        info: {
          vocab: trainer.vocab, tokens: trainer.tokens, period: trainer.period, gpt2Ids: trainer.gpt2Ids,
          probeIds: trainer.probeIds, parameters: trainer.model.parameterCount(), settings: trainer.settings,
        },
      });
      probe();
      reportProgress(0);
      return;
    }
    case 'start':
      if (running) return;
      running = true;
      rate.times.length = 0;
      rate.steps.length = 0;
      resume();
      return;
    case 'pause':
      running = false;
      reportProgress(trainer.step);
      probe(); // the heads at the step it stopped at (what an ablation compares with)
      keeper.save(trainer);
      return;
    case 'step': {
      if (running || generating) return;
      const from = trainer.step;
      trainer.trainStep();
      keeper.afterStep(trainer);
      reportProgress(from);
      probe();
      keeper.save(trainer);
      return;
    }
    case 'ablate':
      if (message.run !== run) return;
      trainer.setAblation(message.heads);
      probe();
      return;
    case 'generate':
      if (generating) return;
      generate(message).catch((error) => post({ type: 'error', message: error.message }));
      return;
    default:
      if (keeper.handle(message, trainer)) {
        if (message.type === 'load-state-dict') probe();
        return;
      }
      throw new TypeError(`unknown message type ${message.type}`);
  }
}

function receive(message) {
  try {
    handle(message);
  } catch (error) {
    running = false;
    post({ type: 'error', message: error.message });
  }
}

// Messages that arrive while the engine loads wait for it.
const early = [];
self.onmessage = ({ data }) => (ca ? receive(data) : early.push(data));
// One thread: the model is small, and on a page whose engine worker and
// browser share a few cores a pool would only wait for them.
init({ build: 'single' }).then(async (runtime) => {
  const saved = await keeper.load();
  ca = runtime;
  post({ type: 'ready', build: ca.build, target: ca.target, saved });
  for (const message of early.splice(0)) receive(message);
}, (error) => post({ type: 'error', message: `The engine did not load: ${error.message}` }));
