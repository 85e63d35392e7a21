// The Learn section's generation: the default prompt, reading the prompt
// (token numbers, or text in the training text's tokens), asking the worker
// for tokens and collecting the query rows it sends back with each.

import { tokenName } from '../../core/format.mjs';
import { labelsFor, setView } from './heads.mjs';
import { inductionGuesses } from '../model/metrics.mjs';
import { setButtons } from './settings.mjs';
import { $, learn } from './state.mjs';
import { parseTokenNumbers, toCompactIds } from '../model/tasks.mjs';
import { tokenize } from '../../core/tokens.mjs';

/** Milliseconds between generated tokens, so that the rows can be seen arriving. */
const TOKEN_DELAY_MS = 60;

/** The default prompt: the probe's first half and the first 4 tokens of its repeat. */
export function writePrompt() {
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

export function generate() {
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

export function addToken(m) {
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

