// The two things the Learn section trains on, as batches of token ids and
// next-token targets. Pure functions (no DOM, no engine): the worker and the
// Node tests call them alike.
//
//   induction  random tokens that repeat: the first P are drawn at random,
//              then the sequence starts over (token i = token i − P). In the
//              repeat, token i+1 is the token that followed the earlier
//              occurrence of token i, which a model can only find by looking
//              back: the job of an induction head (Olsson et al. 2022). P
//              varies from sequence to sequence (T/4 … T/2), so that no head
//              can solve it by position alone ("look P − 1 back"); the probe
//              uses P = T/2, the second half repeating the first. Only the
//              repeat is scored (targets elsewhere are IGNORE), so the loss
//              starts near log(vocabulary) and falls when the head appears.
//   text       next-token prediction on windows of a text's GPT-2 tokens,
//              renumbered into a compact vocabulary of the tokens present.
//
// Batches are a pure function of (seed, step): the same seed and settings
// give the same data at every step, whatever the page did in between
// (pausing, probing, generating), so the loss curve repeats step for step.

import { mix32 } from '../../core/hash.mjs';

/** crossEntropy's default ignoreIndex: targets the loss skips. */
export const IGNORE = -100;

/**
 * A small seeded generator (a hashed counter): `below(n)` draws an integer
 * in [0, n). `stream` separates independent uses of one seed (each training
 * step, the probe, the prompt).
 */
export function random(seed, stream) {
  let state = mix32(mix32((seed >>> 0) ^ 0x9e3779b9) ^ Math.imul(stream + 1, 0x85ebca6b));
  let counter = 0;
  return {
    below(n) {
      const x = mix32(state ^ mix32(++counter));
      // 2^32 / n bias is below 1e-7 for the vocabularies here.
      return Math.floor((x / 2 ** 32) * n);
    },
  };
}

// Streams of one seed: step s uses STEP_STREAM + s.
const PROBE_STREAM = 1;
const STEP_STREAM = 16;

/** The probe's period: its second half repeats the first (⌊tokens / 2⌋). */
export const period = (tokens) => Math.floor(tokens / 2);

/** One sequence of `tokens` ids: random for i < p, then ids[i] = ids[i − p] (a repeat after p). */
function repeatedSequence(rng, tokens, vocab, p, out, at) {
  for (let i = 0; i < tokens; i++) out[at + i] = i < p ? rng.below(vocab) : out[at + i - p];
}

/**
 * An induction batch for `step`: { ids: Int32Array [batch · tokens],
 * targets: Int32Array (the next token in the repeat, IGNORE elsewhere) }.
 * Each sequence repeats after its own P in [⌈tokens / 4⌉, ⌊tokens / 2⌋];
 * position i is scored when i ≥ P and i + 1 < tokens.
 */
export function inductionBatch({ seed, step, batch, tokens, vocab }) {
  const rng = random(seed, STEP_STREAM + step);
  const ids = new Int32Array(batch * tokens);
  const targets = new Int32Array(batch * tokens).fill(IGNORE);
  const longest = period(tokens);
  const shortest = Math.max(1, Math.ceil(tokens / 4));
  for (let b = 0; b < batch; b++) {
    const at = b * tokens;
    const p = shortest + rng.below(longest - shortest + 1);
    repeatedSequence(rng, tokens, vocab, p, ids, at);
    for (let i = p; i + 1 < tokens; i++) targets[at + i] = ids[at + i + 1];
  }
  return { ids, targets };
}

/** The induction probe: one fixed repeated sequence for the seed (never trained on as such). */
export function inductionProbe({ seed, tokens, vocab }) {
  const ids = new Int32Array(tokens);
  repeatedSequence(random(seed, PROBE_STREAM), tokens, vocab, period(tokens), ids, 0);
  return ids;
}

/**
 * GPT-2 token ids → a compact vocabulary of the tokens present:
 * { ids: Int32Array (each GPT-2 id replaced by its index), vocab: the
 * GPT-2 ids in index order (ascending) }.
 */
export function compactVocabulary(gpt2Ids) {
  const vocab = [...new Set(gpt2Ids)].sort((a, b) => a - b);
  const index = new Map(vocab.map((id, k) => [id, k]));
  return { ids: Int32Array.from(gpt2Ids, (id) => index.get(id)), vocab };
}

/**
 * A text batch for `step`: `batch` windows of `tokens` ids from `stream`
 * (compact ids), each target the next id. The stream needs at least
 * tokens + 1 ids. Windows start at random offsets.
 */
export function textBatch({ seed, step, batch, tokens, stream }) {
  if (stream.length < tokens + 1) {
    throw new RangeError(`the text needs at least ${tokens + 1} tokens for windows of ${tokens}, got ${stream.length}`);
  }
  const rng = random(seed, STEP_STREAM + step);
  const ids = new Int32Array(batch * tokens);
  const targets = new Int32Array(batch * tokens);
  for (let b = 0; b < batch; b++) {
    const start = rng.below(stream.length - tokens);
    ids.set(stream.subarray(start, start + tokens), b * tokens);
    targets.set(stream.subarray(start + 1, start + tokens + 1), b * tokens);
  }
  return { ids, targets };
}

/**
 * The text probe: the text's first ⌊tokens / 2⌋ ids twice, so that the
 * induction score means the same as on the induction task (a head that
 * finds the earlier occurrence of the current token and looks one further).
 */
export function textProbe({ tokens, stream }) {
  const p = period(tokens);
  const ids = new Int32Array(tokens);
  for (let i = 0; i < tokens; i++) ids[i] = i < p ? stream[i] : ids[i - p];
  return ids;
}

/**
 * GPT-2 ids → compact ids of `vocab` (compactVocabulary's list): { ids,
 * unknown: the GPT-2 ids that are not in it, in order of first appearance }.
 */
export function toCompactIds(gpt2Ids, vocab) {
  const index = new Map(vocab.map((id, k) => [id, k]));
  const ids = [];
  const unknown = [];
  for (const id of gpt2Ids) {
    if (index.has(id)) ids.push(index.get(id));
    else if (!unknown.includes(id)) unknown.push(id);
  }
  return { ids: Int32Array.from(ids), unknown };
}

/**
 * An induction prompt typed as numbers ("3 17 5", commas allowed): { ids }
 * or { error } (a sentence) when a number is not an integer in [0, vocab)
 * or there is none.
 */
export function parseTokenNumbers(text, vocab) {
  const parts = text.split(/[\s,]+/).filter((p) => p !== '');
  if (parts.length === 0) return { error: 'The prompt has no tokens: type token numbers separated by spaces.' };
  const bad = parts.find((p) => !/^\d+$/.test(p) || Number(p) >= vocab);
  if (bad !== undefined) {
    return { error: `Prompt tokens are numbers from 0 to ${vocab - 1}, got \u2018${bad}\u2019.` };
  }
  return { ids: Int32Array.from(parts, Number) };
}
