// require('causal-attention'): the CommonJS entry (dist/index.cjs) loads the
// ES module engine on the first init() and offers everything the ES module
// entry exports.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
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
});
