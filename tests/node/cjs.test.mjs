// require('causal-attention'): the CommonJS entry (dist/index.cjs, node.mjs
// bundled as CommonJS: no import(), so Jest's default config can load it)
// computes the book's numbers and offers everything the ES module entry exports.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import vm from 'node:vm';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import * as esm from 'causal-attention';

const root = join(dirname(fileURLToPath(import.meta.url)), '../..');

describe('CommonJS', () => {
  it('exports what the ES module entry exports', () => {
    const cjs = createRequire(import.meta.url)('causal-attention');
    assert.deepEqual(Object.keys(cjs).sort(), Object.keys(esm).sort());
  });

  it("computes the book's numbers from a CommonJS script", () => {
    const out = execFileSync(process.execPath, ['-e', `
      const { init } = require('causal-attention');
      init({ build: 'threads', threads: 2 }).then((ca) => {
        ca.manualSeed(123);
        const x = new Float32Array([0.43, 0.15, 0.89, 0.55, 0.87, 0.66, 0.57, 0.85, 0.64,
          0.22, 0.58, 0.33, 0.77, 0.25, 0.10, 0.05, 0.80, 0.55]);
        const y = new ca.CausalAttention(3, 2, 6, 0.0).forward(x, [6, 3]);
        console.log(ca.build, y[0].toFixed(4), y[1].toFixed(4));
      });
    `], { cwd: root, encoding: 'utf8', timeout: 30000 });
    assert.equal(out.trim(), 'threads -0.4519 0.2216');
  });

  it('loads as Jest loads it: compiled by node:vm without a dynamic import callback', async () => {
    // Jest's default config runs CommonJS in vm.Script without
    // importModuleDynamically: an import() there rejects (it needs
    // --experimental-vm-modules), so the entry must not use one.
    const file = join(root, 'dist/index.cjs');
    const wrapper = new vm.Script(`(function (exports, require, module, __filename, __dirname) {${
      readFileSync(file, 'utf8')}\n})`, { filename: file }).runInThisContext();
    const module = { exports: {} };
    wrapper(module.exports, createRequire(file), module, file, dirname(file));
    const ca = await module.exports.init({ build: 'single' });
    assert.equal(ca.build, 'single');
  });
});
