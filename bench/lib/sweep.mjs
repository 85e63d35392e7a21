// The decode cases' cache sweep, free of node: imports so that the peers
// that use it also load in the browser bench (bench/browser/).

const SWEEP_BYTES = 128 * 2 ** 20;
let sweepBuffer = null;

/**
 * Reads 128 MiB of other memory, one float per cache line, so that what a
 * case touched before is out of the caches (a decode step then reads its KV
 * cache from memory, as it does in a model, whose other layers run between
 * two steps of one layer). Returns a sum so the reads are not dropped.
 */
export function sweepCaches() {
  if (!sweepBuffer) sweepBuffer = new Float32Array(SWEEP_BYTES / 4).fill(1);
  let sum = 0;
  for (let i = 0; i < sweepBuffer.length; i += 16) sum += sweepBuffer[i];
  return sum;
}
