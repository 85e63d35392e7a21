// The package where JavaScript developers put it, the clients users hit
// first (the others: tests/clients/, `npm run test:clients`). `npm pack`
// once, install the tarball once into a temporary app (tests/consumers/app/),
// then: Node ESM and CommonJS scripts, TypeScript with three tsconfigs,
// arethetypeswrong, Jest and Vitest with no configuration (Node and jsdom),
// and the same browser app built by Vite 8, Vite 7, webpack 5, esbuild and
// Rollup and served by the Vite 8 and 7 dev servers, each opened in headless
// Chromium plain (single-threaded build) and cross-origin isolated
// (threads), on the main thread and in worker mode: the book's
// CausalAttention row 1 (-0.4519, 0.2216) on the page, no console errors.
// No bundler gets configuration beyond what its own docs ask of any wasm
// package (esbuild and Rollup: the copy step the README gives).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import nodeResolve from '@rollup/plugin-node-resolve';
import { build as esbuild } from 'esbuild';
import { rollup } from 'rollup';
import webpack from 'webpack';
import { launch } from '../browser/browser.mjs';
import {
  ISOLATION, NODE_ESM, checkBuilt as checkBuiltIn, checkPage as checkPageIn, installPacked, page as pageOf, root,
  runJson,
} from './harness.mjs';

let browser;
let work;
let app;
let tarball;
let packedFiles;

before(async () => {
  ({ work, app, tarball, packedFiles } = installPacked());
  browser = await launch();
});
after(async () => {
  await browser?.close();
  rmSync(work, { recursive: true, force: true });
});

const checkPage = (url, label, isolated) => checkPageIn(browser, url, label, isolated);
const checkBuilt = (dir, label) => checkBuiltIn(browser, dir, label);
const page = (script, type) => pageOf(app, script, type);
const runNode = (file) => runJson([file], app);

/**
 * The app sees the repository's copy of these test-runner packages as its
 * own (a symlink in its node_modules, as an install would put them).
 */
function linkIntoApp(...names) {
  for (const name of names) {
    const to = join(app, 'node_modules', name);
    mkdirSync(join(to, '..'), { recursive: true });
    try {
      symlinkSync(join(root, 'node_modules', name), to, 'dir');
    } catch (error) {
      if (error.code !== 'EEXIST') throw error;
    }
  }
}

describe('the packed package', () => {
  it('ships the entries, types, wasm, workers and notices, and no sources', () => {
    for (const f of ['dist/browser.mjs', 'dist/index.mjs', 'dist/node.mjs', 'dist/index.cjs', 'dist/index.d.mts', 'dist/index.d.cts',
      'dist/worker.mjs', 'dist/worker-node.mjs', 'dist/wasm/causal_attention.wasm',
      'dist/wasm/causal_attention_threads.wasm', 'dist/wasm/causal_attention_threads.worker.mjs',
      'README.md', 'LICENSE', 'THIRD_PARTY_NOTICES.md', 'package.json']) {
      assert.ok(packedFiles.includes(f), `${f} is packed`);
    }
    assert.ok(!packedFiles.some((f) => /^(src|tests|bindings|web|bench|scripts|tools)\//.test(f)), 'no sources');
  });

  it('has types arethetypeswrong finds no problem with (node10, node16 CJS and ESM, bundler)', () => {
    const r = spawnSync(process.execPath, [join(root, 'node_modules/@arethetypeswrong/cli/dist/index.js'),
      tarball, '--format', 'ascii'], { encoding: 'utf8', timeout: 60000 });
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /No problems found/);
  });
});

describe('Node', () => {
  it('ES module: every build and worker mode compute the book\'s numbers', () => {
    const out = runNode('node-esm.mjs');
    assert.deepEqual(out, NODE_ESM);
  });

  it('CommonJS: require() computes the book\'s numbers', () => {
    assert.deepEqual(runNode('node-cjs.cjs'), ['threads', '-0.4519', '0.2216']);
  });
});

describe('TypeScript (strict, no @types/node)', () => {
  for (const config of ['node16', 'bundler', 'browser']) {
    it(`compiles with tsconfig.${config}.json`, () => {
      const r = spawnSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p',
        `tsconfig.${config}.json`], { cwd: app, encoding: 'utf8', timeout: 60000 });
      assert.equal(r.status, 0, r.stdout + r.stderr);
    });
  }
});

describe('test runners, no configuration', () => {
  it('Jest: CommonJS and ES module tests, in Node and in jsdom', () => {
    linkIntoApp('jest-environment-jsdom');
    const r = spawnSync(process.execPath, [join(root, 'node_modules/jest/bin/jest.js'), '--ci', '--json'], {
      cwd: join(app, 'runners/jest'), encoding: 'utf8', timeout: 120000,
      // Jest's own requirement for ES module tests (its docs), nothing of the package's.
      env: { ...process.env, NODE_OPTIONS: '--experimental-vm-modules --no-warnings' },
    });
    const report = JSON.parse(r.stdout || '{}');
    assert.equal(r.status, 0, r.stderr);
    assert.equal(report.numPassedTests, 12, r.stderr);
    assert.deepEqual(report.testResults.map((t) => t.name.replace(/.*\//, '')).sort(),
      ['jsdom.spec.cjs', 'jsdom.spec.mjs', 'node.spec.cjs', 'node.spec.mjs']);
  });

  for (const [label, config] of [['jsdom', []], ['jsdom, server.deps.inline', ['--config', 'inline.config.js']]]) {
    it(`Vitest (${label})`, () => {
      linkIntoApp('vitest');
      const r = spawnSync(process.execPath, [join(root, 'node_modules/vitest/vitest.mjs'), 'run', '--environment',
        'jsdom', '--reporter', 'json', ...config], { cwd: join(app, 'runners/vitest'), encoding: 'utf8', timeout: 120000 });
      const report = JSON.parse(r.stdout.slice(r.stdout.indexOf('{')) || '{}');
      assert.equal(r.status, 0, r.stdout + r.stderr);
      assert.equal(report.numPassedTests, 3, r.stdout + r.stderr);
    });
  }
});

describe('bundlers, in Chromium', () => {
  for (const [name, pkg] of [['Vite 8', 'vite'], ['Vite 7', 'vite7']]) {
    it(`${name} build`, async () => {
      const vite = await import(pkg);
      const out = join(app, `out-${pkg}`);
      await vite.build({ root: app, configFile: false, logLevel: 'warn', build: { outDir: out, emptyOutDir: true } });
      await checkBuilt(out, `${name} build`);
    });

    it(`${name} dev server`, async () => {
      const vite = await import(pkg);
      for (const isolated of [false, true]) {
        const server = await vite.createServer({
          root: app, configFile: false, logLevel: 'warn',
          // Vite 7 keeps the default cacheDir (node_modules/.vite), where the
          // package finds its files again; Vite 8 gets its own.
          cacheDir: pkg === 'vite' ? join(app, 'node_modules/.vite8') : undefined,
          server: { host: '127.0.0.1', port: 0, headers: isolated ? ISOLATION : {} },
        });
        try {
          await server.listen();
          await checkPage(server.resolvedUrls.local[0], `${name} dev${isolated ? ', isolated' : ''}`, isolated);
        } finally {
          await server.close();
        }
      }
    });
  }

  it('webpack 5 (mode production, no other configuration)', async () => {
    const out = join(app, 'out-webpack');
    const compiler = webpack({
      mode: 'production', context: app, entry: './browser.js', output: { path: out, filename: 'main.js', clean: true },
    });
    const stats = await new Promise((resolve, reject) => compiler.run((error, s) => (error ? reject(error) : resolve(s))));
    await new Promise((resolve) => compiler.close(resolve));
    assert.ok(!stats.hasErrors(), stats.toString('errors-only'));
    writeFileSync(join(out, 'index.html'), page('main.js', 'classic'));
    await checkBuilt(out, 'webpack');
  });

  it('esbuild --bundle --format=esm, then the README\'s copy step', async () => {
    const out = join(app, 'out-esbuild');
    await esbuild({
      entryPoints: [join(app, 'browser.js')], bundle: true, format: 'esm', outfile: join(out, 'main.js'),
      logLevel: 'silent',
    });
    // esbuild does not emit files named by new URL(..., import.meta.url):
    // cp -r node_modules/causal-attention/dist/. out/
    cpSync(join(app, 'node_modules/causal-attention/dist'), out, { recursive: true });
    writeFileSync(join(out, 'index.html'), page('main.js'));
    await checkBuilt(out, 'esbuild');
  });

  it('Rollup with @rollup/plugin-node-resolve, then the README\'s copy step', async () => {
    const out = join(app, 'out-rollup');
    const bundle = await rollup({ input: join(app, 'browser.js'), plugins: [nodeResolve({ browser: true })],
      onwarn: (warning) => assert.fail(`Rollup: ${warning.message}`) });
    await bundle.write({ dir: out, format: 'es' });
    await bundle.close();
    // Rollup emits no file named by new URL(..., import.meta.url), as esbuild:
    // cp -r node_modules/causal-attention/dist/. out/
    cpSync(join(app, 'node_modules/causal-attention/dist'), out, { recursive: true });
    writeFileSync(join(out, 'index.html'), page('browser.js'));
    await checkBuilt(out, 'Rollup');
  });
});
