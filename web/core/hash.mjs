// A 32-bit integer hash for the page's seeded, order-free randomness: the
// hashed embeddings of tokens.mjs and the Learn section's batches
// (learn-tasks.mjs). Pure; no DOM.

/** lowbias32 (Chris Wellons' 32-bit integer hash): good avalanche, cheap. */
export function mix32(x) {
  x ^= x >>> 16;
  x = Math.imul(x, 0x7feb352d);
  x ^= x >>> 15;
  x = Math.imul(x, 0x846ca68b);
  x ^= x >>> 16;
  return x >>> 0;
}
