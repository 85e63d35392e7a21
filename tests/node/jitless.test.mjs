// A host without WebAssembly (`node --jitless`): init() rejects once, saying
// so, and nothing else surfaces: no unhandled rejection, no timer keeping
// the process alive (it exits at once, with the script's own exit code).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '../..');

describe('node --jitless (no WebAssembly)', () => {
  for (const options of [{ build: 'single' }, { build: 'threads', threads: 2 }, { worker: true }]) {
    it(`init(${JSON.stringify(options)}) rejects naming it, and nothing is left`, () => {
      const r = spawnSync(process.execPath, ['--jitless', '--input-type=module', '-e', `
        import { init } from 'causal-attention';
        init(${JSON.stringify(options)}).then(() => console.log('resolved'), (error) => console.log(error.message));
      `], { cwd: root, encoding: 'utf8', timeout: 20000 });
      assert.equal(r.status, 0, r.stderr);
      // V8's own notice about --jitless is all stderr may hold.
      assert.equal(r.stderr.replace(/^Warning: disabling flag --expose_wasm due to conflicting flags\n/gm, ''), '');
      assert.match(r.stdout, /^causal-attention: WebAssembly is not available here \(Node started with --jitless/);
    });
  }
});
