// One training run of the Learn section: the settings, the model, AdamW,
// the task's batches, and what the page shows of it (losses, the heads'
// weights and scores on the probe, generation). No DOM and no messages: the
// training worker (learn-worker.mjs) drives it and the Node tests call it
// directly, so both see the same numbers.

import { iclScore, repeatTargets, tokenLosses } from './icl.mjs';
import { headScores } from './metrics.mjs';
import { AttentionOnlyTransformer } from './model.mjs';
import {
  IGNORE, compactVocabulary, inductionBatch, inductionProbe, period, textBatch, textProbe,
} from './tasks.mjs';
import { checkVariant } from './variants.mjs';

/** Bounds of each setting (inclusive). */
export const LIMITS = {
  layers: [1, 3],
  heads: [1, 8],
  dModel: [8, 256],
  contextLength: [8, 256],
  vocab: [4, 512],
  batch: [1, 64],
  seed: [0, 2 ** 32 - 1],
  lr: [1e-5, 0.1],
  window: [1, 256],
};

/**
 * Defaults, chosen so that an induction head appears within a few hundred
 * steps, in a few seconds (tests/node/learn.test.mjs and the browser test
 * measure it): two layers (a previous-token head in layer 1 composes with a
 * head in layer 2), four heads of 16 dimensions, 32 token kinds, 64-token
 * sequences, batches of 16. Measured over seeds 0–4 in Node, probing every
 * 10 steps: the best induction score passes 0.4 after 130–160 steps with
 * lr 5e-3 (180–240 with 3e-3); d_model 32 needs 360–510 steps at twice the
 * speed per step.
 */
export const DEFAULTS = {
  task: 'induction',
  layers: 2,
  heads: 4,
  dModel: 64,
  contextLength: 64,
  vocab: 32,
  batch: 16,
  lr: 5e-3,
  seed: 0,
  attention: 'full', // learn-variants.mjs
  window: 16, // the sliding window's tokens (attention 'window')
};

/**
 * The settings' problems as sentences (empty when they are fine). `text`:
 * the text task's token count (GPT-2 ids), when the task is 'text'.
 */
export function checkSettings(s, textTokens = 0) {
  const problems = [];
  for (const [name, [lo, hi]] of Object.entries(LIMITS)) {
    const v = s[name];
    const integer = name !== 'lr';
    if (typeof v !== 'number' || !Number.isFinite(v) || (integer && !Number.isInteger(v)) || v < lo || v > hi) {
      problems.push(`${name} must be ${integer ? 'an integer' : 'a number'} from ${lo} to ${hi}, got ${v}.`);
    }
  }
  if (Number.isInteger(s.dModel) && Number.isInteger(s.heads) && s.heads > 0 && s.dModel % s.heads !== 0) {
    problems.push(`d_model must be a multiple of the number of heads (${s.heads}), got ${s.dModel}.`);
  }
  problems.push(...checkVariant(s));
  if (s.task !== 'induction' && s.task !== 'text') problems.push(`task must be 'induction' or 'text', got ${s.task}.`);
  if (s.task === 'text' && textTokens < 3) {
    problems.push(`The text needs at least 3 tokens to train on, got ${textTokens}.`);
  }
  return problems;
}

export class Trainer {
  /**
   * settings: DEFAULTS' keys; for the 'text' task also `text`, the text's
   * GPT-2 token ids (the page's tokenizer). `ca`: a runtime (init()).
   */
  constructor(ca, settings) {
    const problems = checkSettings(settings, settings.text?.length ?? 0);
    if (problems.length) throw new RangeError(problems.join(' '));
    this.ca = ca;
    this.settings = { ...settings };
    const s = this.settings;
    if (s.task === 'text') {
      const { ids, vocab } = compactVocabulary(settings.text);
      this.stream = ids;
      /** The GPT-2 id of each compact id (the text task); null for induction. */
      this.gpt2Ids = vocab;
      this.vocab = vocab.length;
      /** Tokens per training sequence (a text shorter than the context trains on shorter windows). */
      this.tokens = Math.min(s.contextLength, ids.length - 1);
      this.probeIds = textProbe({ tokens: this.tokens, stream: ids });
    } else {
      this.stream = null;
      this.gpt2Ids = null;
      this.vocab = s.vocab;
      this.tokens = s.contextLength;
      this.probeIds = inductionProbe({ seed: s.seed, tokens: this.tokens, vocab: this.vocab });
    }
    this.period = period(this.tokens);
    ca.manualSeed(s.seed);
    this.model = new AttentionOnlyTransformer(ca, {
      vocab: this.vocab, layers: s.layers, heads: s.heads, dModel: s.dModel, contextLength: s.contextLength,
      attention: s.attention, window: s.window,
    });
    this.optimizer = new ca.optim.AdamW(this.model.modules(), { lr: s.lr });
    /** Steps taken; losses[k] is step k's mean loss (before its update). */
    this.step = 0;
    this.losses = [];
    /** The heads knocked out of the probe and generation (not of training): [[layer, head]], 0-based. */
    this.ablated = [];
    /** Per layer the modules' headMask (0 for an ablated head) or null: the layers without ablations. */
    this.headMasks = null;
  }

  /**
   * Knocks `heads` ([[layer, head]], 0-based; [] for none) out of the probe
   * and generation through the modules' headMask; training keeps every
   * head. A layer without ablated heads runs without a mask, so that
   * un-ablating gives the unablated numbers bit for bit.
   */
  setAblation(heads) {
    const { layers, heads: perLayer } = this.settings;
    for (const [l, h] of heads) {
      if (!(Number.isInteger(l) && l >= 0 && l < layers && Number.isInteger(h) && h >= 0 && h < perLayer)) {
        throw new RangeError(`an ablated head must be [layer in 0…${layers - 1}, head in 0…${perLayer - 1}], got [${l}, ${h}]`);
      }
    }
    this.ablated = heads.map(([l, h]) => [l, h]);
    this.headMasks = heads.length ? Array.from({ length: layers }, () => null) : null;
    for (const [l, h] of heads) (this.headMasks[l] ??= new Float32Array(perLayer).fill(1))[h] = 0;
  }

  /** The batch of step `step`. */
  batch(step = this.step) {
    const { seed, batch } = this.settings;
    return this.stream
      ? textBatch({ seed, step, batch, tokens: this.tokens, stream: this.stream })
      : inductionBatch({ seed, step, batch, tokens: this.tokens, vocab: this.vocab });
  }

  /** One AdamW step on the next batch; returns its loss (the mean over the scored targets). */
  trainStep() {
    const { ids, targets } = this.batch();
    const model = this.model.train();
    this.optimizer.zeroGrad();
    const { logits } = model.forward(ids, this.settings.batch, this.tokens);
    const { loss, gradLogits } = this.ca.crossEntropy(logits, targets, { ignoreIndex: IGNORE });
    model.backward(gradLogits);
    this.optimizer.step();
    this.losses.push(loss);
    this.step += 1;
    return loss;
  }

  /**
   * The heads on the probe, in eval mode, with the current ablations: { ids,
   * tokens, period, weights: per layer [heads, T, T], scores:
   * headScores(...), probeLoss (crossEntropy on the repeat), probeAccuracy
   * (the share of the repeat's next tokens predicted, greedy), tokenLosses
   * (Float64Array [T − 1]), icl (iclScore), ablated }. withAblation false:
   * the whole model, whatever is knocked out (the checkpoints' snapshots).
   */
  probe({ withAblation = true } = {}) {
    const T = this.tokens;
    const { logits, weights } = this.model.eval().forward(this.probeIds, 1, T,
      { returnWeights: true, headMasks: withAblation ? this.headMasks : null });
    const losses = tokenLosses(logits, this.probeIds, this.vocab);
    const targets = repeatTargets(this.probeIds, this.period);
    return {
      ids: this.probeIds, tokens: T, period: this.period, weights,
      scores: headScores(weights, this.settings.heads, T, this.period),
      probeLoss: this.ca.crossEntropy(logits, targets, { ignoreIndex: IGNORE }).loss,
      probeAccuracy: accuracy(logits, targets, this.vocab),
      tokenLosses: losses, icl: iclScore(losses), ablated: withAblation ? this.ablated : [],
    };
  }

  /** The loss of `step`'s batch under the current parameters, without training (eval mode). */
  evaluate(step) {
    const { ids, targets } = this.batch(step);
    const { logits } = this.model.eval().forward(ids, this.settings.batch, this.tokens);
    return this.ca.crossEntropy(logits, targets, { ignoreIndex: IGNORE }).loss;
  }

  /**
   * Starts generating after `prompt` (compact ids, at least one): empties
   * the KV caches and runs the prompt at once. Returns { weights: per layer
   * [heads, P, P], next: the most likely next id }.
   */
  startGeneration(prompt) {
    if (!(prompt.length >= 1)) throw new RangeError('the prompt needs at least one token');
    this.model.eval().resetCache();
    const r = this.model.forwardCached(Int32Array.from(prompt), { headMasks: this.headMasks });
    return { weights: r.weights, next: argmax(r.logits) };
  }

  /**
   * Feeds one token (the last one produced) through the KV caches. Returns
   * { weights: per layer [heads, 1, length] (its query row), next }, or null
   * when the sequence has reached the context length.
   */
  generateNext(id) {
    if (this.model.cacheLength >= this.settings.contextLength) return null;
    this.model.eval();
    const r = this.model.forwardCached(Int32Array.of(id), { headMasks: this.headMasks });
    return { weights: r.weights, next: argmax(r.logits) };
  }

  /** Frees the KV caches (what the model holds in wasm memory). */
  dispose() {
    this.model.resetCache();
  }
}

/** The share of the scored targets (not IGNORE) that are their row's argmax of logits [T, vocab]. */
export function accuracy(logits, targets, vocab) {
  let scored = 0;
  let right = 0;
  targets.forEach((t, i) => {
    if (t === IGNORE) return;
    scored += 1;
    if (argmax(logits.subarray(i * vocab, (i + 1) * vocab)) === t) right += 1;
  });
  return scored ? right / scored : 0;
}

/** Index of the largest value (the first of ties): greedy decoding. */
export function argmax(values) {
  let best = 0;
  for (let k = 1; k < values.length; k++) if (values[k] > values[best]) best = k;
  return best;
}
