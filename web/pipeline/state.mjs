// The page's settings: presets, reading them from the form (with the checks
// the package would otherwise report as exceptions), and writing them back.

import { BOOK_TEXT } from '../core/tokens.mjs';

const LIMITS = { dOut: [1, 64], heads: [1, 12], seed: [0, 2 ** 32 - 1], dropout: [0, 0.95] };

const BOOK = {
  text: BOOK_TEXT, bookEmbeddings: true, dOut: 2, heads: 1, multiHead: 'wrapper', head: 0,
  dropout: 0, training: true, qkvBias: false, causal: true, alignment: 'top-left', queries: null,
  colourMode: 'linear',
};

/**
 * Presets. The book builds its modules in training mode (nn.Module's
 * default) with dropout 0.0, so training is on and changes nothing there.
 */
export const PRESETS = {
  'book-789': {
    label: 'Book 3.5: SelfAttention_v2 weights, masked (manualSeed(789))',
    state: { ...BOOK, seed: 789 },
  },
  'book-123': {
    label: 'Book 3.5.3: CausalAttention(3, 2, 6, 0.0) (manualSeed(123))',
    state: { ...BOOK, seed: 123 },
  },
  'book-dropout': {
    label: 'Book 3.5.2: dropout p = 0.5 in training (manualSeed(789))',
    state: { ...BOOK, seed: 789, dropout: 0.5 },
  },
  'book-heads': {
    label: 'Book 3.6.1: MultiHeadAttentionWrapper, 2 heads (manualSeed(123))',
    state: { ...BOOK, seed: 123, heads: 2 },
  },
  long: {
    label: 'Long input: 1024 tokens, 4 heads',
    // The text is generated (tokens.mjs longText) when the preset is applied.
    state: {
      ...BOOK, text: null, seed: 789, bookEmbeddings: false, dOut: 8, heads: 4, multiHead: 'mha',
      colourMode: 'row',
    },
  },
};

export const DEFAULT_PRESET = 'book-789';

// The settings a preset is recognised by (view choices such as the shown
// head or the colour mode are not among them).
const FIELDS = ['text', 'seed', 'bookEmbeddings', 'dOut', 'heads', 'multiHead', 'dropout',
  'training', 'qkvBias', 'causal', 'alignment', 'queries'];

/** The preset whose settings `state` equals, or 'custom'. */
export function matchPreset(state, longText) {
  for (const [name, preset] of Object.entries(PRESETS)) {
    const p = { ...preset.state, text: preset.state.text ?? longText };
    if (FIELDS.every((f) => p[f] === state[f])) return name;
  }
  return 'custom';
}

function integer(errors, label, raw, [lo, hi]) {
  const v = Number(raw);
  if (raw.trim() === '' || !Number.isInteger(v) || v < lo || v > hi) {
    errors.push(`${label} must be a whole number from ${lo} to ${hi}, got \u201c${raw}\u201d.`);
    return null;
  }
  return v;
}

/** Reads the form's controls: { state, errors } (errors: messages for people). */
export function readForm(f) {
  const errors = [];
  const state = {
    text: f.text.value,
    seed: integer(errors, 'Seed', f.seed.value, LIMITS.seed),
    bookEmbeddings: f.bookEmbeddings.checked,
    dOut: integer(errors, 'd_out', f.dOut.value, LIMITS.dOut),
    heads: integer(errors, 'Heads', f.heads.value, LIMITS.heads),
    multiHead: f.multiHead.value,
    head: Number(f.head.value) || 0,
    dropout: Number(f.dropout.value),
    training: f.training.checked,
    qkvBias: f.qkvBias.checked,
    causal: f.causal.checked,
    alignment: f.alignment.value,
    queries: null,
    colourMode: f.colourMode.value,
  };
  if (!(state.dropout >= LIMITS.dropout[0] && state.dropout <= LIMITS.dropout[1])) {
    errors.push(`Dropout p must be from ${LIMITS.dropout[0]} to ${LIMITS.dropout[1]}.`);
  }
  if (f.queries.value.trim() !== '') {
    state.queries = integer(errors, 'Query tokens', f.queries.value, [1, 1e9]);
  }
  if (state.heads > 1 && state.multiHead === 'mha' && state.dOut !== null && state.dOut % state.heads !== 0) {
    errors.push(`MultiHeadAttention splits d_out into heads, so d_out must be divisible by the number ` +
      `of heads (d_out ${state.dOut}, heads ${state.heads}). Change one, or use the wrapper.`);
  }
  return { state, errors };
}

/** Writes settings into the form (a preset, or a corrected value). */
export function writeForm(f, s) {
  f.text.value = s.text;
  f.seed.value = String(s.seed);
  f.bookEmbeddings.checked = s.bookEmbeddings;
  f.dOut.value = String(s.dOut);
  f.heads.value = String(s.heads);
  f.multiHead.value = s.multiHead;
  f.dropout.value = String(s.dropout);
  f.training.checked = s.training;
  f.qkvBias.checked = s.qkvBias;
  f.causal.checked = s.causal;
  f.alignment.value = s.alignment;
  f.queries.value = s.queries === null ? '' : String(s.queries);
  f.colourMode.value = s.colourMode;
}
