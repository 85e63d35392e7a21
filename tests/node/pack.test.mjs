// `npm pack` → install the tarball into an empty folder → import by name and
// compute. Proves that package.json's `files` and `exports` ship a working
// package (wasm, worker and types included, sources excluded).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '../..');
const work = mkdtempSync(join(tmpdir(), 'causal-attention-pack-'));
after(() => rmSync(work, { recursive: true, force: true }));

const npm = (args, cwd) => execFileSync('npm', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

describe('the packed package', () => {
  it('installs into an empty folder and computes attention in a fresh process', () => {
    const packed = JSON.parse(npm(['pack', '--json', '--pack-destination', work], root));
    const files = packed[0].files.map((f) => f.path);
    for (const f of ['dist/index.mjs', 'dist/node.mjs', 'dist/index.cjs', 'dist/index.d.mts',
      'dist/index.d.cts', 'dist/worker.mjs', 'dist/wasm/causal_attention.wasm',
      'dist/wasm/causal_attention_threads.wasm', 'dist/wasm/causal_attention_threads.worker.mjs',
      'README.md', 'package.json']) {
      assert.ok(files.includes(f), `${f} is packed`);
    }
    assert.ok(!files.some((f) => f.startsWith('src/') || f.startsWith('tests/')), 'no sources or tests');

    const app = join(work, 'app');
    execFileSync('mkdir', ['-p', app]);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
    npm(['install', '--no-audit', '--no-fund', '--offline', join(work, packed[0].filename)], app);
    assert.ok(existsSync(join(app, 'node_modules/causal-attention/dist/index.d.mts')));
    assert.ok(!readdirSync(join(app, 'node_modules/causal-attention')).includes('src'));

    writeFileSync(join(app, 'main.mjs'), `
      import { init } from 'causal-attention';
      const result = {};
      for (const build of ['single', 'threads']) {
        const ca = await init({ build, threads: build === 'single' ? 1 : 2 });
        const q = new Float32Array([1, 0, 0, 1, 1, 1]);
        const v = new Float32Array([1, 2, 3, 4, 5, 6]);
        const { output, weights } = ca.attention(q, q, v, {
          batch: 1, heads: 1, queryLength: 3, headDim: 2, returnWeights: true });
        result[build] = { build: ca.build, threads: ca.threads, target: ca.target,
          output: Array.from(output), weights: Array.from(weights) };
      }
      console.log(JSON.stringify(result));
    `);
    // A fresh process that must also exit by itself (threads included).
    const out = JSON.parse(execFileSync('node', ['main.mjs'], { cwd: app, encoding: 'utf8', timeout: 30000 }));
    for (const build of ['single', 'threads']) {
      const r = out[build];
      assert.equal(r.build, build);
      assert.equal(r.target, 'WASM');
      // Row 0 sees only key 0; row 1: softmax([0, 1]/√2) over keys 0, 1.
      assert.deepEqual(r.output.slice(0, 2), [1, 2]);
      const w = 1 / (1 + Math.exp(1 / Math.SQRT2));
      assert.ok(Math.abs(r.weights[3] - w) < 1e-6);
      assert.equal(r.weights[2], 0);
    }
    assert.equal(out.threads.threads, 2);
  });
});
