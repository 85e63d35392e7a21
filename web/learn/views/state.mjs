// The Learn section's state, shared by its topic modules (learn.mjs and
// learn-settings, -progress, -heads, -generation), and the drawing they ask
// for: applied at the next animation frame, once per frame, so the page
// stays smooth however fast the worker reports.

export const $ = (id) => document.getElementById(id);

export const learn = {
  worker: null,
  ready: false,
  run: 0, // the newest run asked for: messages of older ones are dropped
  getText: () => '',
  showInPipeline: null, // (result, tokens) => void: the page's pipeline shows a head (app.mjs)
  info: null, // the run's sizes from the worker ('configured')
  textTokens: null, // { gpt2 id → token } of the text the run trains on (and of prompts)
  running: false, // what the page asked for (the Start / Pause button)
  workerRunning: false, // what the worker last said: false once no more steps are on their way
  losses: [],
  smooth: [],
  chance: [],
  stepsPerSecond: 0,
  probe: null, // the latest { step, weights, scores }
  checkpoint: null, // the checkpoint the slider shows ({ step, weights, scores, probeLoss, best }), or null: the latest
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

/** What draw() can redraw, in the order it does: part → function (set by learn.mjs). */
const painters = { chart: null, heads: null, status: null };

export function setPainters(p) {
  Object.assign(painters, p);
}

/**
 * The share of the page's thread that drawing may take while the worker
 * trains: after a frame that painted for c ms, the next paints no sooner
 * than c / PAINT_SHARE ms after that frame began. Where drawing is cheap
 * (a few ms) this is every frame; where it is dear (WebKitGTK's software
 * GL: tens of ms) the page draws less often, so that on a machine with few
 * cores it leaves the worker its core (measured: bench/learn.mjs).
 */
export const PAINT_SHARE = 0.25;

/** When the next paint may start (performance.now() ms); 0: at the next frame. */
let paintNotBefore = 0;

/** Marks parts ('chart', 'heads', 'status') to redraw at the next animation frame (see PAINT_SHARE). */
export function draw(...parts) {
  for (const p of parts) learn.dirty.add(p);
  if (learn.framePending) return;
  learn.framePending = true;
  const wait = paintNotBefore - performance.now();
  if (wait > 0) setTimeout(() => requestAnimationFrame(paint), wait);
  else requestAnimationFrame(paint);
}

function paint() {
  const start = performance.now();
  learn.framePending = false;
  const dirty = new Set(learn.dirty);
  learn.dirty.clear();
  for (const [part, fn] of Object.entries(painters)) if (dirty.has(part)) fn();
  // Only while the worker trains: otherwise nothing competes for the cores.
  paintNotBefore = learn.workerRunning ? start + (performance.now() - start) / PAINT_SHARE : 0;
}
