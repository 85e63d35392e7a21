// The causal mask rule, the one place the page writes it (the engine's is
// src/attention/visibility.h's Visibility::End).
//
// The page describes a mask by one number, `shift`: query row i sees key
// columns j ≤ i + shift. 0 is the book's triangle (top-left, PyTorch's
// is_causal); keyLength − queryLength is bottom-right alignment (the last
// query sees every key, as in decoding); null is no mask. Panels take the
// mask from the settings, never from the values, so a weight that dropout
// zeroed is never mistaken for a masked one.

/** The shift for the page's settings: null when the causal mask is off. */
export function maskShiftFor({ causal, alignment }, queryLength, keyLength) {
  if (!causal) return null;
  return alignment === 'bottom-right' ? keyLength - queryLength : 0;
}

/** Keys [0, visibleEnd) of row i are visible, the rest masked (0 ≤ end ≤ cols). */
export function visibleEnd(i, cols, shift) {
  return shift === null ? cols : Math.max(0, Math.min(cols, i + shift + 1));
}

/** Whether cell (i, j) is masked. */
export function isMasked(i, j, shift) {
  return shift !== null && j > i + shift;
}
