// What the two consumer suites share: tests/consumers/ (in `npm test`) and
// tests/clients/ (`npm run test:clients`). The packed package installed,
// as a user installs it, into a temporary copy of tests/consumers/app/;
// static serving plain or cross-origin isolated; and the check of a page in
// Chromium: the book's CausalAttention row 1 on the main thread and in
// worker mode, on the build the page allows, with no console error.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import sirv from 'sirv';
import { SCREENSHOTS, openPage } from '../browser/browser.mjs';

export const root = join(dirname(fileURLToPath(import.meta.url)), '../..');
export const ISOLATION = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' };
export const BOOK = '-0.4519, 0.2216';
/** What tests/consumers/app/node-esm.mjs prints. */
export const NODE_ESM = {
  '{"build":"single"}': ['single', '-0.4519', '0.2216'],
  '{"build":"threads","threads":2}': ['threads', '-0.4519', '0.2216'],
  '{"worker":true}': ['threads', '-0.4519', '0.2216'],
};

export const npm = (args, cwd) => execFileSync('npm', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

/**
 * `npm pack` of the repository, installed (offline, from npm's cache) into
 * a fresh copy of tests/consumers/app/ under a temporary folder.
 * @returns {{ work: string, app: string, tarball: string, packedFiles: string[] }}
 */
export function installPacked() {
  const work = mkdtempSync(join(tmpdir(), 'causal-attention-consumers-'));
  const app = join(work, 'app');
  const packed = JSON.parse(npm(['pack', '--json', '--pack-destination', work], root));
  cpSync(join(root, 'tests/consumers/app'), app, { recursive: true });
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'consumer-app', private: true, type: 'module' }));
  const tarball = join(work, packed[0].filename);
  npm(['install', '--offline', '--no-audit', '--no-fund', tarball], app);
  return { work, app, tarball, packedFiles: packed[0].files.map((f) => f.path) };
}

/** Serves `dir` as static files on 127.0.0.1, with or without COOP/COEP. */
export function serveStatic(dir, isolated) {
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
export async function checkPage(browser, url, label, isolated) {
  const { page, problems } = await openPage(browser, url);
  await page.waitForFunction(() => ['local', 'worker'].every((id) => document.getElementById(id)?.dataset.done),
    null, { timeout: 60000 });
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
export async function checkBuilt(browser, dir, label) {
  for (const isolated of [false, true]) {
    const server = await serveStatic(dir, isolated);
    try {
      await checkPage(browser, server.url, `${label}${isolated ? ', isolated' : ''}`, isolated);
    } finally {
      await server.close();
    }
  }
}

/** The app's index.html loading `script` instead of ./browser.js. */
export const page = (app, script, type = 'module') => readFileSync(join(app, 'index.html'), 'utf8')
  .replace('<script type="module" src="./browser.js"></script>',
    `<script ${type === 'module' ? 'type="module"' : 'defer'} src="./${script}"></script>`);

/**
 * Runs `args` with `exe` (Node by default) in `cwd`; it must exit 0 with
 * nothing on stderr; returns stdout parsed as JSON.
 */
export function runJson(args, cwd, exe = process.execPath, env = process.env) {
  const r = spawnSync(exe, args, { cwd, encoding: 'utf8', timeout: 60000, env });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.equal(r.stderr, '');
  return JSON.parse(r.stdout);
}
