// Timing helpers shared by every implementation: warm-up, a run count, the
// median. Nothing here asserts on time.

export const now = () => performance.now();

export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/**
 * Default policy: at least 3 warm-up runs and 1 s (V8 starts wasm in its
 * baseline tier, and every pthread worker tiers up on its own), then 5-21
 * timed runs in about 2 s. Runs slower than 1 s: 2 warm-ups, at least 3 runs.
 */
export const DEFAULT_POLICY = {
  warmupRuns: 3,
  warmupMs: 1000,
  budgetMs: 2000,
  minRuns: 5,
  maxRuns: 21,
  slowRunMs: 1000,
  slowWarmupRuns: 2,
  slowMinRuns: 3,
};

/** The bench's timing policy: DEFAULT_POLICY's budgets, or short ones for a --quick sanity run. */
export const benchPolicy = (quick) => (quick
  ? { warmupRuns: 2, warmupMs: 100, budgetMs: 400, minRuns: 3, maxRuns: 9 }
  : { warmupRuns: 3, warmupMs: 1000, budgetMs: 2000, minRuns: 5, maxRuns: 21 });

/** Runs `run` until warm; resolves to the run count and an estimate of one run's time. */
export async function warmUp(run, policy = DEFAULT_POLICY) {
  const p = { ...DEFAULT_POLICY, ...policy };
  const times = [];
  const start = now();
  for (;;) {
    const t0 = now();
    await run();
    times.push(now() - t0);
    const slow = median(times) > p.slowRunMs;
    const runsNeeded = slow ? p.slowWarmupRuns : p.warmupRuns;
    if (times.length >= runsNeeded && (slow || now() - start >= p.warmupMs)) break;
  }
  return { warmupRuns: times.length, estimateMs: median(times.slice(-3)) };
}

/**
 * How many timed runs (odd, so the median is one measured run) fit the
 * budget when one round costs `roundMs`; `slowestMs` picks the slow policy.
 */
export function planRuns(roundMs, slowestMs, policy = DEFAULT_POLICY) {
  const p = { ...DEFAULT_POLICY, ...policy };
  const minRuns = slowestMs > p.slowRunMs ? p.slowMinRuns : p.minRuns;
  let runs = Math.max(minRuns, Math.min(p.maxRuns, Math.ceil(p.budgetMs / Math.max(roundMs, 1e-3))));
  if (runs % 2 === 0) runs += 1;
  return runs;
}

export function summarize(samples) {
  return { medianMs: median(samples), minMs: Math.min(...samples), runs: samples.length };
}

export const gflops = (flopCount, ms) => flopCount / (ms * 1e6);

/**
 * A/B timing on a shared machine: a and b alternately for warmupMs, then
 * `runs` runs each, interleaved (the order flipping each round); their medians
 * of wall time, then (in Node; NaN elsewhere) of this process's CPU time, all
 * its threads: on a loaded machine the CPU time of a one-thread run is the
 * steadier of the two (an A/A run of bench/studies/ab.mjs: 0.999–1.002).
 * @returns {[number, number, number, number]}
 */
export function interleaved(a, b, warmupMs = 1500, runs = 15) {
  const end = now() + warmupMs;
  while (now() < end) { a(); b(); }
  const cpuUsage = globalThis.process?.cpuUsage;
  const times = [[], []], cpu = [[], []];
  for (let r = 0; r < runs; r++) {
    for (const i of r % 2 ? [1, 0] : [0, 1]) {
      const c0 = cpuUsage?.();
      const t0 = now();
      [a, b][i]();
      times[i].push(now() - t0);
      const c = cpuUsage ? cpuUsage(c0) : { user: NaN, system: NaN };
      cpu[i].push((c.user + c.system) / 1000);
    }
  }
  return [median(times[0]), median(times[1]), median(cpu[0]), median(cpu[1])];
}

/** A Float32Array maker of uniform [-0.5, 0.5) values from one LCG stream (seeded 1). */
export function lcgRandom() {
  let seed = 1;
  return (n) => {
    const x = new Float32Array(n);
    for (let i = 0; i < n; i++) {
      seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
      x[i] = seed / 2 ** 32 - 0.5;
    }
    return x;
  };
}
