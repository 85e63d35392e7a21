// The Learn section's training history: snapshots of what the page shows of
// the heads (every layer's weights on the probe, the heads' scores, the
// probe's loss) every `every` steps, in bounded memory: when more than
// `keep` are held, every other one goes (step 0 stays) and the interval
// doubles, so the kept ones always span the whole run evenly. No DOM and no
// messages: the training worker keeps them, the page's slider
// (learn-scrub.mjs) asks for one at a time.

import { bestInduction } from './metrics.mjs';

/** Memory the snapshots' weights may take in all. */
export const BUDGET_BYTES = 32 * 2 ** 20;
/** Bounds of the number kept, whatever the budget allows. */
export const KEEP = [5, 65];
/** The first interval, in steps. */
export const FIRST_EVERY = 10;

/**
 * What a checkpoint keeps of a trainer now: { step, weights (per layer [heads,
 * T, T]), scores, probeLoss (the mean loss on the probe's repeat), params
 * (every parameter, in the model's order: the lab runs on them) }, of the
 * whole model whatever the page has knocked out.
 */
export function snapshot(trainer) {
  const { weights, scores, probeLoss } = trainer.probe({ withAblation: false });
  const parts = trainer.model.net.parameters().map((p) => p.data);
  const params = new Float32Array(parts.reduce((n, a) => n + a.length, 0));
  let at = 0;
  for (const a of parts) {
    params.set(a, at);
    at += a.length;
  }
  return { step: trainer.step, weights, scores, probeLoss, params };
}

/**
 * Runs `fn()` with the trainer's parameters set to a checkpoint's `params`
 * (snapshot's), then puts the current ones back, bit for bit.
 * @template T
 * @param {{ model: { net: { parameters(): { data: Float32Array }[] } } }} trainer
 * @param {Float32Array} params
 * @param {() => T} fn
 * @returns {T}
 */
export function withParams(trainer, params, fn) {
  const live = trainer.model.net.parameters().map((p) => p.data);
  const saved = live.map((a) => a.slice());
  let at = 0;
  for (const a of live) {
    a.set(params.subarray(at, at + a.length));
    at += a.length;
  }
  try {
    return fn();
  } finally {
    live.forEach((a, i) => a.set(saved[i]));
  }
}

export class Checkpoints {
  /** `bytes`: one snapshot's size (its weights, layers · heads · T² floats, and its parameters; 4 bytes each). */
  constructor(bytes, { budget = BUDGET_BYTES, every = FIRST_EVERY } = {}) {
    this.every = every;
    this.keep = Math.min(KEEP[1], Math.max(KEEP[0], Math.floor(budget / bytes)));
    /** The kept snapshots, by step. */
    this.list = [];
  }

  /** Whether `step` is due a snapshot. */
  due(step) {
    return step % this.every === 0 && !(this.list.length && this.list[this.list.length - 1].step === step);
  }

  /** Keeps `snap`; thins the list when it holds more than `keep`. */
  add(snap) {
    this.list.push(snap);
    while (this.list.length > this.keep) {
      this.every *= 2;
      this.list = this.list.filter((c) => c.step % this.every === 0);
    }
  }

  /** What the slider shows of each one: { step, best: { score, layer, head }, probeLoss }. */
  summary() {
    return this.list.map((c) => ({ step: c.step, best: bestInduction(c.scores), probeLoss: c.probeLoss }));
  }
}
