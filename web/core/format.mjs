// Text for numbers and tokens, shared by the canvases, the tables and the
// inspector, so that every place shows a value the same way.

/** The typographic minus: screen readers say "minus", and it lines up. */
const MINUS = '\u2212';

/** A matrix value with `digits` decimals; −∞ for masked scores. */
export function formatValue(v, digits = 4) {
  if (v === -Infinity) return `${MINUS}\u221e`;
  if (v === Infinity) return '\u221e';
  if (Number.isNaN(v)) return 'NaN';
  let s = v.toFixed(digits);
  // -0.0000 is a rounding artefact, not information.
  if (s.startsWith('-') && Number(s) === 0) s = s.slice(1);
  return s.replace('-', MINUS);
}

/** Milliseconds for the status line: 3 significant figures, at least 2 decimals below 1. */
export function formatMs(ms) {
  if (ms < 1) return ms.toFixed(2);
  if (ms < 100) return ms.toFixed(1);
  return ms.toFixed(0);
}

/**
 * A short axis label for a GPT-2 token. GPT-2's BPE keeps the space before a
 * word inside the token (" journey"); the axis drops that one space so the
 * book's sentence reads as in the book, and shows other whitespace with
 * visible marks, since an empty label would look like a missing one.
 */
export function tokenLabel(text, maxChars = 10) {
  let s = text.startsWith(' ') && text.trim() !== '' ? text.slice(1) : text;
  s = s.replace(/\r\n|\n|\r/g, '\u21b5').replace(/\t/g, '\u21e5').replace(/ /g, '\u2423');
  if (s === '') s = '\u2205';
  const chars = Array.from(s);
  return chars.length > maxChars ? `${chars.slice(0, maxChars - 1).join('')}\u2026` : s;
}

/** The exact token between quotes, for tooltips and the inspector. */
export function tokenName(text) {
  const s = text.replace(/\n/g, '\\n').replace(/\r/g, '\\r').replace(/\t/g, '\\t');
  return `\u2018${s}\u2019`;
}

/**
 * `tag` when Intl accepts it as a locale, else `fallback`: formatting that
 * follows the browser's language must not throw where the tag is not one
 * (WebKitGTK under LANG=C.UTF-8 reports navigator.language "C").
 * @param {string | undefined} tag
 * @param {string} [fallback]
 */
export function validLocale(tag, fallback = 'en-US') {
  try {
    return Intl.getCanonicalLocales(tag ?? [])[0] ?? fallback;
  } catch {
    return fallback;
  }
}
