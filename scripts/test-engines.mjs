#!/usr/bin/env node
// The browser suites in Firefox ESR and WebKitGTK (npm run test:clients;
// .ci/run runs it): each file of tests/browser/ in turn with
// BROWSER_ENGINES=firefox,webkitgtk, its time printed. A file that fails is
// run once more and says so: these engines, driven over WebDriver on a shared
// 2-core machine, sometimes miss a readiness wait under load; a failure that
// repeats fails the run.
// Chromium runs the same files in npm test, without a second try. TurboFan
// compiles on the main thread (scripts/test.mjs says why).
//   node scripts/test-engines.mjs [file ...]   (default: every tests/browser/*.test.mjs)
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const files = process.argv.slice(2).length ? process.argv.slice(2)
  : readdirSync(join(root, 'tests/browser')).filter((f) => f.endsWith('.test.mjs')).sort().map((f) => `tests/browser/${f}`);
const env = { ...process.env, BROWSER_ENGINES: process.env.BROWSER_ENGINES ?? 'firefox,webkitgtk' };

/** Runs one file; resolves to its exit status and seconds. */
function run(file) {
  const start = Date.now();
  const r = spawnSync(process.execPath, ['--no-concurrent-recompilation', '--test', file], { cwd: root, env, stdio: 'inherit' });
  return { ok: r.status === 0, seconds: (Date.now() - start) / 1000 };
}

const rows = [];
for (const file of files) {
  let r = run(file);
  let note = '';
  if (!r.ok) {
    console.log(`\n--- ${file} failed in ${env.BROWSER_ENGINES} after ${r.seconds.toFixed(0)} s: running it once more`);
    const again = run(file);
    note = again.ok ? `passed on its second run (the first failed after ${r.seconds.toFixed(0)} s)` : 'failed twice';
    r = { ok: again.ok, seconds: r.seconds + again.seconds };
  }
  rows.push({ file, ...r, note });
}
console.log(`\nbrowser suites in ${env.BROWSER_ENGINES}:`);
for (const r of rows) console.log(`${r.ok ? 'passed' : 'FAILED'}  ${r.seconds.toFixed(0).padStart(4)} s  ${r.file}${r.note ? `  (${r.note})` : ''}`);
const failed = rows.filter((r) => !r.ok);
console.log(`total ${rows.reduce((s, r) => s + r.seconds, 0).toFixed(0)} s; ${failed.length ? `${failed.length} file(s) failed` : 'all passed'}`);
process.exitCode = failed.length ? 1 : 0;
