// The package where JavaScript developers put it. `npm pack` once, install
// the tarball once into a temporary app (tests/consumers/app/), then: Node
// ESM and CommonJS scripts, TypeScript with three tsconfigs,
// arethetypeswrong, and the same browser app built by Vite 8, Vite 7,
// webpack 5 and esbuild and served by the Vite 8 and 7 dev servers, each
// opened in headless Chromium plain (single-threaded build) and cross-origin
// isolated (threads), on the main thread and in worker mode: the book's
// CausalAttention row 1 (-0.4519, 0.2216) on the page, no console errors.
// No bundler gets configuration beyond what its own docs ask of any wasm
// package (esbuild: the copy step the README gives).
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { build as esbuild } from 'esbuild';
import sirv from 'sirv';
import webpack from 'webpack';
import { SCREENSHOTS, launch, openPage } from '../browser/browser.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '../..');
const work = mkdtempSync(join(tmpdir(), 'causal-attention-consumers-'));
const app = join(work, 'app');
const ISOLATION = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' };
const BOOK = '-0.4519, 0.2216';

let browser;
let tarball;
let packedFiles;

const npm = (args, cwd) => execFileSync('npm', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

before(async () => {
  const packed = JSON.parse(npm(['pack', '--json', '--pack-destination', work], root));
  tarball = join(work, packed[0].filename);
  packedFiles = packed[0].files.map((f) => f.path);
  cpSync(join(root, 'tests/consumers/app'), app, { recursive: true });
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'consumer-app', private: true, type: 'module' }));
  npm(['install', '--offline', '--no-audit', '--no-fund', tarball], app);
  browser = await launch();
});
after(async () => {
  await browser?.close();
  rmSync(work, { recursive: true, force: true });
});

/** Serves `dir` as static files on 127.0.0.1, with or without COOP/COEP. */
function serveStatic(dir, isolated) {
  const files = sirv(dir, { dev: true });
  const server = http.createServer((req, res) => {
    if (isolated) for (const [k, v] of Object.entries(ISOLATION)) res.setHeader(k, v);
    files(req, res, () => res.writeHead(404).end('not found'));
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({
    url: `http://127.0.0.1:${server.address().port}/`,
    close: () => new Promise((done) => server.close(done)),
  })));
}

/** Opens the app and checks both results, the builds they ran on, and the console. */
async function checkPage(url, label, isolated) {
  const { page, problems } = await openPage(browser, url);
  await page.waitForFunction(() => ['local', 'worker'].every((id) => document.getElementById(id)?.dataset.done),
    null, { timeout: 30000 });
  const build = isolated ? 'threads' : 'single';
  for (const id of ['local', 'worker']) {
    assert.equal(await page.textContent(`#${id}`), `${BOOK} (${build} build)`, `${label}, ${id}`);
  }
  assert.equal(await page.evaluate(() => globalThis.crossOriginIsolated), isolated, label);
  await page.screenshot({ path: join(SCREENSHOTS, `consumer-${label.replace(/\W+/g, '-')}.png`) });
  assert.deepEqual(problems, [], label);
  await page.close();
}

/** A built app in `dir`: checked plain and cross-origin isolated. */
async function checkBuilt(dir, label) {
  for (const isolated of [false, true]) {
    const server = await serveStatic(dir, isolated);
    try {
      await checkPage(server.url, `${label}${isolated ? ', isolated' : ''}`, isolated);
    } finally {
      await server.close();
    }
  }
}

const page = (script, type = 'module') => readFileSync(join(app, 'index.html'), 'utf8')
  .replace('<script type="module" src="./browser.js"></script>',
    `<script ${type === 'module' ? 'type="module"' : 'defer'} src="./${script}"></script>`);

function runNode(file) {
  const r = spawnSync(process.execPath, [file], { cwd: app, encoding: 'utf8', timeout: 60000 });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stderr, '');
  return JSON.parse(r.stdout);
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
    assert.deepEqual(out, {
      '{"build":"single"}': ['single', '-0.4519', '0.2216'],
      '{"build":"threads","threads":2}': ['threads', '-0.4519', '0.2216'],
      '{"worker":true}': ['threads', '-0.4519', '0.2216'],
    });
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
});
