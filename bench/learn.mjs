#!/usr/bin/env node
// The Learn section's default model trained step by step (bench/lib/
// learn-steps.mjs): steps per second in Node (single and threads builds)
// and in a module worker of each browser engine (Chromium, Firefox ESR,
// WebKitGTK; BROWSER_ENGINES narrows), as the page trains it (bench/browser/
// learn.mjs). One process per engine, interleaved rounds, medians.
//   node bench/learn.mjs [--steps=N] [--rounds=R] [--builds=single,threads]
//                        [--against=<checkout with dist/ built>] [--no-browser]
// With --against the other checkout's package (A) trains the same model
// (this checkout's web/ modules) in the same rounds as this one's (B): the
// B/A ratio is the number to quote on a shared machine; both must give the
// same losses, bit for bit. bench/run.mjs runs it too (runLearnTable) for
// its "Learn" rows (rendered by bench/lib/learn-steps.mjs).
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { runLearnBrowser } from './browser/learn.mjs';
import { learnSteps, renderLearn } from './lib/learn-steps.mjs';

const here = resolve(new URL('..', import.meta.url).pathname);
const entry = (dir) => resolve(dir, existsSync(resolve(dir, 'dist/node.mjs')) ? 'dist/node.mjs' : 'dist/index.mjs');

/**
 * The rows, Node's then each browser engine's (browser: false leaves them out):
 * { engine, build, ...learnSteps' result }.
 */
export async function runLearnTable({
  steps = 40, rounds = 7, builds = ['single', 'threads'], against = null, browser = true, log = () => {},
} = {}) {
  const rows = [];
  for (const build of builds) {
    log(`Learn, Node ${build}...`);
    const runtimes = [];
    for (const dir of against ? [against, here] : [here]) {
      const { init } = await import(pathToFileURL(entry(dir)).href);
      runtimes.push(await init({ build, threads: build === 'threads' ? 2 : 1 }));
    }
    try {
      rows.push({ engine: 'Node', build, ...learnSteps(runtimes, { steps, rounds }) });
    } finally {
      for (const ca of runtimes) ca.dispose();
    }
  }
  if (browser) {
    rows.push(...await runLearnBrowser({ steps, rounds, builds, against, log }));
  }
  return rows;
}

if (process.argv[1] === new URL(import.meta.url).pathname) {
  const args = Object.fromEntries(process.argv.slice(2).map((a) => {
    const [k, v = 'true'] = a.replace(/^--/, '').split('=');
    return [k, v];
  }));
  const options = {
    steps: Number(args.steps ?? 40), rounds: Number(args.rounds ?? 7),
    builds: (args.builds ?? 'single,threads').split(','),
    against: args.against ? resolve(args.against) : null, browser: !args['no-browser'],
  };
  console.log(`Learn default model: ${options.steps} steps per run, ${options.rounds} interleaved rounds, medians` +
    (options.against ? ` (A = ${options.against}, B = this checkout)` : ''));
  console.log(renderLearn(await runLearnTable({ ...options, log: console.error })).join('\n'));
}
