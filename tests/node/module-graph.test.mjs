// The shape of dist/'s module graph that bundlers depend on:
// a worker must not import, directly or not, the module that starts it
// (Turbopack's `next build` waited forever on that cycle), and the Node
// entry's files are found by path, not by forms bundlers rewrite.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const dist = join(dirname(fileURLToPath(import.meta.url)), '../../dist');
/** A dist/ file's code, comments left out. */
const read = (file) => readFileSync(join(dist, file), 'utf8').replace(/\/\*[\s\S]*?\*\/|(?<![:'"])\/\/.*$/gm, '');

/** The dist/ files `entry` imports statically, itself included (relative specifiers only). */
function graph(entry) {
  const seen = new Set();
  const visit = (file) => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const [, spec] of read(file).matchAll(/^\s*(?:import|export)\b[^'"]*?from\s*'(\.[^']+)'|^import\s*'(\.[^']+)'/gm)) {
      visit(join(dirname(file), spec));
    }
  };
  visit(entry);
  return seen;
}

/** The files a module starts as workers with `new Worker(new URL('./…', import.meta.url)`. */
const workersStarted = (file) => [...read(file).matchAll(/new Worker\(new URL\('(\.[^']+)', import\.meta\.url\)/g)]
  .map(([, spec]) => join(dirname(file), spec));

describe('dist/ module graph', () => {
  it('finds the imports it walks (the check can fail)', () => {
    const files = graph('worker.mjs');
    for (const f of ['remote/remote-host.mjs', 'index.mjs', 'engine/loader.mjs', 'platform-web.mjs']) {
      assert.ok(files.has(f), f);
    }
  });

  it('no worker imports a module that starts it', () => {
    for (const entry of ['browser.mjs', 'index.mjs', 'node.mjs']) {
      for (const file of graph(entry)) {
        for (const worker of workersStarted(file)) {
          assert.ok(!graph(worker).has(file), `${worker} imports ${file}, which starts it`);
        }
      }
    }
    assert.deepEqual(workersStarted('browser.mjs'), ['worker.mjs']);
  });

  it('the Node platform names its files by path: no new URL(…, import.meta.url), no new Worker(…)', () => {
    const code = read('platform-node.mjs');
    assert.doesNotMatch(code, /new URL\(/);
    assert.doesNotMatch(code, /new Worker\(/);
  });
});
