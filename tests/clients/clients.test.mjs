// The clients beyond npm test's consumer suite (`npm run test:clients`, which
// installs them from this folder's package-lock.json first): Next.js 16
// (Turbopack, its default, and webpack; production build and dev server;
// the client page and the server route, whose bundle is the package's
// `node` entry), Parcel 2, Deno 2, Bun (scripts and `bun test`), Node 22 and 24. The packed package
// is installed as in tests/consumers/ (harness.mjs); no client gets any
// configuration (the Next.js app has none: no next.config).
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { launch } from '../browser/browser.mjs';
import { NODE_ESM, checkBuilt, checkPage, installPacked, npm, runJson } from '../consumers/harness.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const bin = (name) => join(here, 'node_modules/.bin', name);
// Apps live under this folder (git-ignored work/), so that they resolve the
// clients from its node_modules as an app resolves its own.
const apps = join(here, 'work');

let browser;
let work;
let app;
let tarball;

before(async () => {
  ({ work, app, tarball } = installPacked());
  rmSync(apps, { recursive: true, force: true });
  mkdirSync(apps, { recursive: true });
  browser = await launch();
});
after(async () => {
  await browser?.close();
  rmSync(work, { recursive: true, force: true });
  rmSync(apps, { recursive: true, force: true });
});

/** A copy of `source` under work/ as app `name`, with the packed package installed. */
function newApp(name, source, files = []) {
  const dir = join(apps, name);
  if (source) cpSync(source, dir, { recursive: true });
  for (const f of files) cpSync(join(app, f), join(dir, f));
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name, private: true }));
  npm(['install', '--offline', '--no-audit', '--no-fund', '--no-package-lock', tarball], dir);
  return dir;
}

/** A free TCP port on 127.0.0.1. */
function freePort() {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/**
 * Starts `args` (a server) in `cwd`, waits until `url` answers, runs
 * `check`, then stops the server and its children.
 */
async function withServer(command, args, cwd, url, check) {
  const child = spawn(command, args, { cwd, detached: true, stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NEXT_TELEMETRY_DISABLED: '1' } });
  let output = '';
  child.stdout.on('data', (d) => { output += d; });
  child.stderr.on('data', (d) => { output += d; });
  try {
    for (let i = 0; ; i++) {
      try {
        if ((await fetch(url)).status < 500) break;
      } catch {
        // not listening yet
      }
      assert.ok(i < 240 && child.exitCode === null, `the server did not start:\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    await check();
  } catch (error) {
    error.message += `\n${output.slice(-3000)}`;
    throw error;
  } finally {
    process.kill(-child.pid, 'SIGTERM');
  }
}

/**
 * The Next.js app's page (in Chromium, single build) and server route
 * (threads), at localhost: the dev server serves its own resources to that
 * origin only (allowedDevOrigins).
 */
async function checkNext(base, label) {
  const response = await fetch(`${base}api/book`);
  assert.equal(response.status, 200, `${label}: ${await response.clone().text()}`);
  assert.deepEqual(await response.json(),
    { local: '-0.4519, 0.2216 (threads build)', worker: '-0.4519, 0.2216 (threads build)' }, label);
  await checkPage(browser, base, label, false);
}

function run(command, args, cwd, timeout = 300000) {
  const r = spawnSync(command, args, { cwd, encoding: 'utf8', timeout,
    env: { ...process.env, NEXT_TELEMETRY_DISABLED: '1' } });
  assert.equal(r.status, 0, `${command} ${args.join(' ')}:\n${r.stdout}\n${r.stderr}`);
  return r.stdout + r.stderr;
}

describe('Next.js 16', () => {
  let dir;
  before(() => { dir = newApp('next-app', join(here, 'next-app')); });

  it('Turbopack: next build, next start', async () => {
    run(bin('next'), ['build'], dir);
    const port = await freePort();
    await withServer(bin('next'), ['start', '-p', String(port)], dir, `http://localhost:${port}/`,
      () => checkNext(`http://localhost:${port}/`, 'Next.js Turbopack build'));
  });

  it('Turbopack: next dev', async () => {
    const port = await freePort();
    await withServer(bin('next'), ['dev', '-p', String(port)], dir, `http://localhost:${port}/`,
      () => checkNext(`http://localhost:${port}/`, 'Next.js Turbopack dev'));
  });

  it('webpack: next build --webpack, next start', async () => {
    const out = run(bin('next'), ['build', '--webpack'], dir);
    assert.doesNotMatch(out, /Circular dependency between chunks/);
    const port = await freePort();
    await withServer(bin('next'), ['start', '-p', String(port)], dir, `http://localhost:${port}/`,
      () => checkNext(`http://localhost:${port}/`, 'Next.js webpack build'));
  });
});

describe('Parcel 2', () => {
  it('parcel build, no configuration', async () => {
    const dir = newApp('parcel-app', null, ['index.html', 'browser.js']);
    const before = readFileSync(join(dir, 'package.json'), 'utf8');
    run(bin('parcel'), ['build', 'index.html', '--dist-dir', 'out', '--no-cache', '--cache-dir', join(apps, '.parcel-cache')],
      dir);
    // Parcel installs what it thinks is missing into the app's package.json.
    assert.equal(readFileSync(join(dir, 'package.json'), 'utf8'), before, 'Parcel added dependencies');
    await checkBuilt(browser, join(dir, 'out'), 'Parcel');
  });
});

describe('runtimes', () => {
  const node = (name) => join(here, 'node_modules', name, 'bin/node');
  for (const [label, exe, pre] of [
    ['Deno 2', bin('deno'), ['run', '-A']],
    ['Bun', bin('bun'), []],
    ['Node 22', node('node22'), []],
    ['Node 24', node('node24'), []],
  ]) {
    it(`${label}: ES module (every build, worker mode) and CommonJS`, () => {
      assert.deepEqual(runJson([...pre, 'node-esm.mjs'], app, exe), NODE_ESM);
      assert.deepEqual(runJson([...pre, 'node-cjs.cjs'], app, exe), ['threads', '-0.4519', '0.2216']);
    });
  }

  it('Bun: bun test runs the Jest tests (tests/consumers/app/runners/jest/)', () => {
    const r = spawnSync(bin('bun'), ['test'], { cwd: join(app, 'runners/jest'), encoding: 'utf8', timeout: 60000 });
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.match(r.stdout + r.stderr, /\b12 pass\b/);
  });
});
