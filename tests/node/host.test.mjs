// The package in a host application, in child processes: it installs no
// process-wide handlers and no globals (the app's own handlers and exit codes
// behave exactly as without it), and init() never hangs: a missing .wasm or
// pthread worker rejects with the file's path, a worker that never answers
// rejects when the timeout runs out, and the process then exits by itself.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '../..');
const work = mkdtempSync(join(tmpdir(), 'causal-attention-host-'));
after(() => rmSync(work, { recursive: true, force: true }));

/** Runs an ES module script; `timeout` bounds it (a hang fails the test). */
function node(code, { cwd = root } = {}) {
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', code],
    { cwd, encoding: 'utf8', timeout: 30000 });
  assert.notEqual(r.signal, 'SIGTERM', `the script did not exit within 30 s:\n${r.stdout}\n${r.stderr}`);
  return r;
}

const LOAD_ALL = `
  import { init } from 'causal-attention';
  const x = new Float32Array(18).fill(0.5);
  for (const options of [{ build: 'single' }, { build: 'threads', threads: 2 }, { worker: true }]) {
    const ca = await init(options);
    await ca.manualSeed(123);
    const layer = await new ca.CausalAttention(3, 2, 6, 0.0);
    await layer.forward(x, [6, 3]);
  }
`;

const PROCESS_EVENTS = ['uncaughtException', 'uncaughtExceptionMonitor', 'unhandledRejection', 'exit',
  'beforeExit', 'warning', 'SIGINT', 'SIGTERM', 'message'];

describe('in a host application', () => {
  it('adds no process listeners and no globals, in every build and in worker mode', () => {
    const r = node(`
      const events = ${JSON.stringify(PROCESS_EVENTS)};
      const count = () => events.map((e) => process.listenerCount(e));
      const listeners = count();
      const globals = Object.getOwnPropertyNames(globalThis).sort();
      ${LOAD_ALL}
      console.log(JSON.stringify({
        listeners: [listeners, count()],
        globals: Object.getOwnPropertyNames(globalThis).sort().filter((g) => !globals.includes(g)),
        exitCode: process.exitCode ?? null,
      }));
    `);
    assert.equal(r.status, 0, r.stderr);
    const out = JSON.parse(r.stdout);
    assert.deepEqual(out.listeners[1], out.listeners[0], `listeners on ${PROCESS_EVENTS}`);
    assert.deepEqual(out.globals, []);
    assert.equal(out.exitCode, null);
    assert.equal(r.stderr, '');
  });

  it("leaves the app's uncaughtException / unhandledRejection handlers and exit code to the app", () => {
    const r = node(`
      process.on('uncaughtException', (e) => console.log('app handled', e.message));
      process.on('unhandledRejection', (e) => console.log('app handled rejection', e.message));
      ${LOAD_ALL}
      setTimeout(() => { throw new Error('boom'); });
      setTimeout(() => Promise.reject(new Error('nope')), 10);
      setTimeout(() => { process.exitCode = 3; }, 20);
    `);
    assert.equal(r.status, 3, r.stderr);
    assert.match(r.stdout, /^app handled boom$/m);
    assert.match(r.stdout, /^app handled rejection nope$/m);
    assert.equal(r.stderr, '');
  });

  it('lets an uncaught error end the process as Node does (exit code 1, the app\'s stack)', () => {
    const r = node(`${LOAD_ALL}\nsetTimeout(() => { throw new Error('boom'); });`);
    assert.equal(r.status, 1);
    assert.match(r.stderr, /Error: boom/);
    assert.ok(r.stderr.length < 2000, `stderr is Node's own report, not the glue: ${r.stderr.length} characters`);
    assert.doesNotMatch(r.stderr, /createCausalAttention|ExitStatus/);
  });
});

describe('init() never hangs', () => {
  /** A copy of the built package whose `dist/` files `mutate` breaks. */
  function brokenCopy(name, mutate) {
    const dir = join(work, name);
    cpSync(join(root, 'dist'), join(dir, 'dist'), { recursive: true });
    cpSync(join(root, 'package.json'), join(dir, 'package.json'));
    mutate(join(dir, 'dist'));
    return pathToFileURL(join(dir, 'dist/node.mjs')).href;
  }

  /** The message init(options) rejects with in a fresh process, which must then exit by itself. */
  function initError(entry, options) {
    const r = node(`
      const { init } = await import(${JSON.stringify(entry)});
      try {
        await init(${JSON.stringify(options)});
        console.log('resolved');
      } catch (error) {
        console.log(error.message);
      }
    `);
    assert.equal(r.status, 0, r.stderr);
    return r.stdout.trim();
  }

  it('names a missing .wasm and says how to get it back', () => {
    const entry = brokenCopy('no-wasm', (dist) => rmSync(join(dist, 'wasm/causal_attention.wasm')));
    const message = initError(entry, { build: 'single' });
    assert.match(message, /could not read \/.*\/no-wasm\/dist\/wasm\/causal_attention\.wasm: ENOENT/);
    assert.match(message, /reinstall the package/);
  });

  it('names a pthread worker that cannot load, and leaves no worker behind', () => {
    const entry = brokenCopy('no-worker',
      (dist) => rmSync(join(dist, 'wasm/causal_attention_threads.worker.mjs')));
    const message = initError(entry, { build: 'threads', threads: 2 });
    assert.match(message, /the pthread worker \/.*\/pthread-node\.mjs failed: .*causal_attention_threads\.worker\.mjs/);
  });

  it('rejects when a pthread worker never answers, within the timeout', () => {
    const entry = brokenCopy('silent-worker',
      (dist) => writeFileSync(join(dist, 'wasm/causal_attention_threads.worker.mjs'),
        'self.onmessage = () => {}; // loads, listens, never answers\n'));
    const message = initError(entry, { build: 'threads', threads: 3, timeout: 1000 });
    assert.match(message, /the threads build did not load within 1000 ms; still starting the pthread workers: 0 of 2 ready/);
  });

  it('rejects once when the load fails at once (node --jitless: no WebAssembly), saying so, and the process exits 0 (issues 23, 24)', () => {
    // The glue's factory throws synchronously there (as under a page CSP
    // without 'wasm-unsafe-eval'): the timeout's timer and the compile
    // failure must not outlive init()'s rejection.
    const r = spawnSync(process.execPath, ['--jitless', '--input-type=module', '-e', `
      import { init } from 'causal-attention';
      for (const [label, options] of [['single', { build: 'single' }], ['threads', { build: 'threads', threads: 2 }],
        ['worker', { worker: true }]]) {
        try {
          await init({ ...options, timeout: 1500 });
          console.log('resolved');
        } catch (error) {
          console.log(label, 'rejected:', error.message);
        }
      }
      await new Promise((resolve) => setTimeout(resolve, 2000)); // past the timeout
      console.log('done');
    `], { cwd: root, encoding: 'utf8', timeout: 30000 });
    assert.equal(r.status, 0, r.stderr);
    const lines = r.stdout.trim().split('\n');
    assert.deepEqual(lines.map((line) => line.split(':')[0]),
      ['single rejected', 'threads rejected', 'worker rejected', 'done']);
    for (const line of lines.slice(0, 3)) {
      assert.match(line, /rejected: causal-attention: WebAssembly is not available here \(Node started with --jitless/);
    }
    assert.doesNotMatch(r.stderr, /Unhandled|did not load within/);
  });

  it('names the worker of worker mode when it cannot load', () => {
    const entry = brokenCopy('no-api-worker', (dist) => rmSync(join(dist, 'worker-node.mjs')));
    const message = initError(entry, { worker: true });
    assert.match(message, /the worker \/.*\/no-api-worker\/dist\/worker-node\.mjs failed: Cannot find module/);
  });

  it('passes the engine\'s own load error through worker mode', () => {
    const entry = brokenCopy('no-wasm-in-worker', (dist) => rmSync(join(dist, 'wasm/causal_attention.wasm')));
    const message = initError(entry, { worker: true, build: 'single' });
    assert.match(message, /could not read \/.*\/no-wasm-in-worker\/dist\/wasm\/causal_attention\.wasm: ENOENT/);
  });
});
