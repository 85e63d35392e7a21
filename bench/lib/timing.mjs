// Timing helpers shared by every implementation: warm-up, then the median of
// repeated runs. Nothing here asserts on time.

export const now = () => performance.now();

export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** Default policy: at least 3 warm-up runs and 1 s, then 5-21 timed runs in about 2 s. */
export const DEFAULT_POLICY = {
  warmupRuns: 3,
  warmupMs: 1000,
  budgetMs: 2000,
  minRuns: 5,
  maxRuns: 21,
  // Runs slower than this get fewer warm-ups/repeats (a big shape at several
  // seconds a run is already well past V8's tier-up after two runs).
  slowRunMs: 1000,
  slowWarmupRuns: 2,
  slowMinRuns: 3,
};

/**
 * Warms `run` up (V8 starts wasm in its baseline tier; first calls are
 * several times slower), then times an odd number of runs and returns the
 * median. `run` may return a promise; it is awaited inside the timed region.
 */
export async function measure(run, policy = DEFAULT_POLICY) {
  const p = { ...DEFAULT_POLICY, ...policy };
  const warm = [];
  const start = now();
  for (;;) {
    const t0 = now();
    await run();
    warm.push(now() - t0);
    const slow = median(warm) > p.slowRunMs;
    const runsNeeded = slow ? p.slowWarmupRuns : p.warmupRuns;
    if (warm.length >= runsNeeded && (slow || now() - start >= p.warmupMs)) break;
  }
  const estimate = median(warm.slice(-3));
  const minRuns = estimate > p.slowRunMs ? p.slowMinRuns : p.minRuns;
  let runs = Math.max(minRuns, Math.min(p.maxRuns, Math.ceil(p.budgetMs / Math.max(estimate, 1e-3))));
  if (runs % 2 === 0) runs += 1; // odd: the median is one measured run
  const samples = [];
  for (let i = 0; i < runs; ++i) {
    const t0 = now();
    await run();
    samples.push(now() - t0);
  }
  return {
    medianMs: median(samples),
    minMs: Math.min(...samples),
    runs,
    warmupRuns: warm.length,
  };
}

export const gflops = (flopCount, ms) => flopCount / (ms * 1e6);
