// Text → GPT-2 tokens → 3-d input embeddings.
//
// Tokenisation is GPT-2's byte-pair encoding (r50k_base, the encoding the
// book uses through tiktoken), run offline by gpt-tokenizer, served from
// node_modules at /vendor/gpt-tokenizer/.
//
// The book's chapter-3 inputs are hand-made 3-d vectors for six words, not a
// trained embedding layer. The page keeps those six vectors (in the book
// presets) and gives every other token a deterministic vector: uniform in
// [0, 1) from a hash of (seed, token id, component), rounded to two decimals
// like the book's. A hash rather than the runtime's generator, so that the
// module's parameters after manualSeed(seed) stay exactly the book's (the
// generator is not consumed), and a token keeps its vector when d_out or the
// number of heads changes.
import { decode, encode } from '/vendor/gpt-tokenizer/esm/encoding/r50k_base.js';
import { mix32 } from './hash.mjs';

/** The page stays interactive up to this many tokens (T × T matrices per head). */
export const MAX_TOKENS = 1024;

/** Embedding width: the book's d_in. */
export const D_IN = 3;

export const BOOK_TEXT = 'Your journey starts with one step';

/** The book's inputs (section 3.3): one row per word, x^1 … x^6. */
const BOOK_EMBEDDINGS = new Map([
  ['Your', [0.43, 0.15, 0.89]],
  ['journey', [0.55, 0.87, 0.66]],
  ['starts', [0.57, 0.85, 0.64]],
  ['with', [0.22, 0.58, 0.33]],
  ['one', [0.77, 0.25, 0.10]],
  ['step', [0.05, 0.80, 0.55]],
]);

/**
 * Tokens of `text`, at most MAX_TOKENS: { tokens: [{ id, text }], total }.
 * `total` is the count before truncation.
 */
export function tokenize(text) {
  const ids = encode(text);
  const kept = ids.slice(0, MAX_TOKENS);
  // GPT-2's tokens are bytes: a multi-byte character (an emoji, curly
  // quotes) can span several tokens, and a piece alone decodes to nothing
  // or to U+FFFD. Those show as U+FFFD, which is what they are alone.
  return {
    tokens: kept.map((id) => {
      const text = decode([id]);
      return text === '' || text.includes('\ufffd') ? { id, text: '\ufffd', partial: true } : { id, text };
    }),
    total: ids.length,
  };
}

/** Uniform [0, 1) with 24 bits (torch.rand's resolution) for (seed, id, k). */
function hashUniform(seed, id, k) {
  let h = mix32((seed >>> 0) ^ 0x9e3779b9);
  h = mix32(h ^ id);
  h = mix32(h ^ Math.imul(k + 1, 0x85ebca6b));
  return (h >>> 8) / 2 ** 24;
}

/** Whether `token` is one of the book's six words (its text without the BPE space). */
export function bookWord(token) {
  const word = token.text.startsWith(' ') ? token.text.slice(1) : token.text;
  return BOOK_EMBEDDINGS.has(word) ? word : null;
}

/**
 * The input matrix x [T, D_IN] for `tokens`. With `bookEmbeddings`, the
 * book's six words get the book's vectors; every other token its hashed one.
 */
export function embed(tokens, { seed, bookEmbeddings }) {
  const x = new Float32Array(tokens.length * D_IN);
  tokens.forEach((token, t) => {
    const word = bookEmbeddings ? bookWord(token) : null;
    for (let k = 0; k < D_IN; k++) {
      x[t * D_IN + k] = word
        ? BOOK_EMBEDDINGS.get(word)[k]
        : Math.round(hashUniform(seed, token.id, k) * 100) / 100;
    }
  });
  return x;
}

const LONG_PARAGRAPHS = [
  'A language model writes one token at a time. When it predicts the next word, it may look back at',
  'everything it has written so far, but never ahead, because the future does not exist yet. Causal',
  'attention enforces that rule with a mask: every query token scores every key token, and the scores',
  'of keys that come later are set to minus infinity before the softmax, so their weights become zero.',
  'The weights of each row still sum to one, spread over the past and the present only.\n\n',
  'Dropout then zeroes some of those weights at random while the model trains, and scales the rest up',
  'by one over one minus p, so that on average nothing changes. At inference time dropout is off.',
  'Several heads do the same thing side by side with their own projections, and their context vectors',
  'are concatenated, so that each head can learn to follow a different kind of relation.\n\n',
];

/**
 * A text of exactly `n` GPT-2 tokens (n ≤ MAX_TOKENS), for the long-input
 * preset: the paragraphs above repeated and cut at a token boundary.
 */
export function longText(n = MAX_TOKENS) {
  const paragraph = LONG_PARAGRAPHS.join(' ').replace(/ \n/g, '\n');
  let text = paragraph;
  while (encode(text).length < n) text += paragraph;
  return decode(encode(text).slice(0, n));
}
