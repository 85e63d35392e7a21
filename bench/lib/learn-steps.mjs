// The Learn section's default model (web/learn/model/trainer.mjs DEFAULTS: two
// attention layers of four heads, d_model 64, 64 tokens, batches of 16,
// AdamW, seed 0) trained step by step, timed: a row of small calls (per-call
// cost, not arithmetic, is what it measures). Plain ES module: Node
// (bench/learn.mjs) and a Chromium worker (bench/browser/learn-worker.mjs)
// run the same rounds; bench/run.mjs and bench/learn.mjs render the rows.
import { DEFAULTS, Trainer } from '../../web/learn/model/trainer.mjs';
import { targetLine } from './format.mjs';
import { median } from './timing.mjs';

/**
 * The baseline the Learn target is judged against ("today" in the report):
 * steps/s of the default model, 60 in Node and 57.5 in Chromium (the middle
 * of 50–65). The target: twice that.
 */
export const LEARN_TODAY = { Node: 60, Chromium: 57.5 };

/** Process CPU time in ms (Node; null in a browser). */
const cpuMs = () => {
  const u = globalThis.process?.cpuUsage?.();
  return u ? (u.user + u.system) / 1000 : null;
};

/**
 * Trains `steps` steps from a fresh trainer (seed 0, so every run the same
 * steps); returns { ms, cpuMs, losses }. CPU time (Node: all the process's
 * threads) is steadier than the wall clock on a busy machine, but counts a
 * threads build's spinning workers too.
 */
function run(ca, steps) {
  const trainer = new Trainer(ca, { ...DEFAULTS });
  const c0 = cpuMs();
  const t0 = performance.now();
  for (let s = 0; s < steps; s++) trainer.trainStep();
  const ms = performance.now() - t0;
  const c1 = cpuMs();
  trainer.dispose();
  return { ms, cpuMs: c0 === null ? null : c1 - c0, losses: trainer.losses };
}

/**
 * One warm-up run per runtime, then `rounds` interleaved rounds (the order
 * reversed every other round). Returns per runtime { stepsPerSecond,
 * stepsPerCpuSecond (null in a browser) } from the medians, and whether
 * every run's losses were identical, bit for bit, to the first's.
 */
export function learnSteps(runtimes, { steps = 40, rounds = 7 } = {}) {
  for (const ca of runtimes) run(ca, steps);
  const runs = runtimes.map(() => []);
  let reference = null;
  let same = true;
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 ? [...runtimes.keys()].reverse() : [...runtimes.keys()];
    for (const i of order) {
      const result = run(runtimes[i], steps);
      runs[i].push(result);
      reference ??= result.losses;
      same &&= result.losses.every((l, k) => Object.is(l, reference[k]));
    }
  }
  const rate = (xs) => (xs.includes(null) ? null : steps / (median(xs) / 1000));
  return {
    rates: runs.map((rs) => ({
      stepsPerSecond: rate(rs.map((x) => x.ms)), stepsPerCpuSecond: rate(rs.map((x) => x.cpuMs)),
    })),
    same,
    lastLoss: reference.at(-1),
  };
}

/** A table row: rates (A, B and B/A with two runtimes) and the loss check. */
export function learnRow(label, { rates, same, lastLoss }) {
  const f = (x) => (x === null ? '' : x.toFixed(1));
  const two = rates.length > 1;
  const cells = rates.map((r, i) => `${two ? (i ? 'B ' : 'A ') : ''}${f(r.stepsPerSecond).padStart(6)} steps/s` +
    (r.stepsPerCpuSecond === null ? '' : ` (${f(r.stepsPerCpuSecond)} per CPU s)`));
  const [a, b] = rates;
  const ratio = two ? `   B/A ${(b.stepsPerSecond / a.stepsPerSecond).toFixed(2)}×` +
    (a.stepsPerCpuSecond === null ? '' : ` (CPU ${(b.stepsPerCpuSecond / a.stepsPerCpuSecond).toFixed(2)}×)`) : '';
  return `${label.padEnd(20)} ${cells.join('   ')}${ratio}   losses ${same ? 'identical' : 'DIFFER'} (last ${lastLoss})`;
}

/** The rows as text lines (with A/B columns when there were two packages). */
export const renderLearn = (rows) => rows.map((r) => (r.error
  ? `${r.engine} ${r.build}: ${r.error}`
  : learnRow(`${r.engine} ${r.build}`, r)));

/**
 * The Learn target line: ≥ 2× today's steps/s in Node and in Chromium with
 * the same losses, judged on the single build (the one web/learn/model/worker.mjs
 * trains with); the threads rows are listed. A row's rate is this
 * checkout's (the last runtime of an --against row).
 */
export function learnTargetLine(rows) {
  const today = (r) => LEARN_TODAY[r.engine.split(' ')[0]];
  // Firefox's and WebKitGTK's rows are listed in the table, not judged (no "today" for them).
  const measured = rows.filter((r) => !r.error && today(r) !== undefined);
  if (!measured.length) return [];
  const rate = (r) => r.rates.at(-1).stepsPerSecond;
  const cell = (r) => `${r.engine} ${r.build} ${rate(r).toFixed(1)} steps/s = ${(rate(r) / today(r)).toFixed(2)}×` +
    (r.same ? '' : ', losses DIFFER');
  const judged = measured.filter((r) => r.build === 'single');
  const others = measured.filter((r) => r.build !== 'single');
  const missing = Object.keys(LEARN_TODAY).filter((e) => !judged.some((r) => r.engine.startsWith(e)));
  return [targetLine('the Learn section\'s default model ≥ 2× today\'s steps/s in Node and in Chromium, same losses ' +
    `(today: Node ${LEARN_TODAY.Node}, Chromium ${LEARN_TODAY.Chromium} = the middle of the issue's 50–65; ` +
    'judged on the single build, which the page trains with)',
  missing.length === 0 && judged.every((r) => r.same && rate(r) >= 2 * today(r)),
  [...judged.map(cell), ...missing.map((e) => `${e} not measured`)].join('; ') +
  (others.length ? `; not judged: ${others.map(cell).join('; ')}` : ''), 21)];
}

/**
 * The rows under their heading and the target, for bench/run.mjs's report
 * and RESULTS.md (`fence`: the rows in a markdown code block).
 */
export const renderLearnText = (rows, { fence = false } = {}) => {
  const body = renderLearn(rows);
  return [
    'Learn section\'s default model trained step by step (web/learn/model/trainer.mjs DEFAULTS; ' +
    'browsers: a module worker, as the page trains):', '', ...(fence ? ['```', ...body, '```'] : body),
    '', ...learnTargetLine(rows)].join('\n');
};
