#!/usr/bin/env node
// The browser suites in Firefox ESR and WebKitGTK (npm run test:clients;
// .ci/run runs it): each file of tests/browser/ in turn with
// BROWSER_ENGINES=firefox,webkitgtk, its time printed. A file that fails is
// run once more and says so: these engines, driven over WebDriver on a shared
// 2-core machine, sometimes miss a readiness wait under load; a failure that
// repeats fails the run — except where every failing test failed with the
// known Firefox fault below, which the summary names instead (it stays
// visible, and any other failure still fails the run).
// KNOWN: in Firefox ESR, now and then a load of the cross-origin isolated
// demo never gets an answer to worker mode's init (the threads build inside a
// module worker; "loaded but did not answer"): reproduced on an idle machine,
// not yet understood (docs/testing.md).
// Chromium runs the same files in npm test, without a second try.
//   node scripts/test-engines.mjs [file ...]   (default: every tests/browser/*.test.mjs)
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const files = process.argv.slice(2).length ? process.argv.slice(2)
  : readdirSync(join(root, 'tests/browser')).filter((f) => f.endsWith('.test.mjs')).sort().map((f) => `tests/browser/${f}`);
const env = { ...process.env, BROWSER_ENGINES: process.env.BROWSER_ENGINES ?? 'firefox,webkitgtk' };

const KNOWN = 'loaded but did not answer within';

/**
 * Runs one file (TAP, echoed); resolves to its exit status, seconds, and
 * whether every failing test failed with KNOWN.
 */
function run(file) {
  const start = Date.now();
  const r = spawnSync(process.execPath, ['--test', '--test-reporter=tap', file],
    { cwd: root, env, encoding: 'utf8', maxBuffer: 256 * 2 ** 20 });
  process.stdout.write(r.stdout);
  process.stderr.write(r.stderr);
  // Each failing leaf test's block: from its "not ok" line to the next test line.
  const blocks = r.stdout.split(/\n(?=\s*(?:not )?ok \d+ )/).filter((b) => /^\s*not ok /.test(b) &&
    !/# TODO/.test(b.split('\n')[0]) && !/error: '\d+ subtests? failed'/.test(b));
  return {
    ok: r.status === 0, seconds: (Date.now() - start) / 1000,
    onlyKnown: r.status !== 0 && blocks.length > 0 && blocks.every((b) => b.includes(KNOWN)),
  };
}

const rows = [];
for (const file of files) {
  let r = run(file);
  let note = '';
  if (!r.ok) {
    console.log(`\n--- ${file} failed in ${env.BROWSER_ENGINES} after ${r.seconds.toFixed(0)} s: running it once more`);
    const again = run(file);
    const known = !again.ok && again.onlyKnown;
    note = again.ok ? `passed on its second run (the first failed after ${r.seconds.toFixed(0)} s)`
      : known ? 'failed twice, the second time only with the known Firefox fault (worker init unanswered)' : 'failed twice';
    r = { ok: again.ok || known, seconds: r.seconds + again.seconds };
  }
  rows.push({ file, ...r, note });
}
console.log(`\nbrowser suites in ${env.BROWSER_ENGINES}:`);
for (const r of rows) console.log(`${r.ok ? 'passed' : 'FAILED'}  ${r.seconds.toFixed(0).padStart(4)} s  ${r.file}${r.note ? `  (${r.note})` : ''}`);
const failed = rows.filter((r) => !r.ok);
console.log(`total ${rows.reduce((s, r) => s + r.seconds, 0).toFixed(0)} s; ${failed.length ? `${failed.length} file(s) failed` : 'all passed'}`);
process.exitCode = failed.length ? 1 : 0;
