// The package in each browser engine (./engines.mjs), served without a bundler: worker mode (the same
// results and errors as the main thread, dispose ends the worker, no
// "Blocking on the main thread" warning), and init() that never hangs when a
// file is missing or wrong: it rejects naming the URL and leaves no worker.
import assert from 'node:assert/strict';
import http from 'node:http';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import sirv from 'sirv';
import { describeEngines, lacking } from './engines.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '../..');

// dist/ under several prefixes, each with one file broken.
const BROKEN = {
  '/ok/': {},
  '/no-wasm/': { 'wasm/causal_attention.wasm': [404, 'text/plain', 'not found'] },
  '/html-wasm/': { 'wasm/causal_attention.wasm': [200, 'text/html', '<!doctype html><title>app</title>'] },
  '/no-worker/': { 'wasm/causal_attention_threads.worker.mjs': [404, 'text/plain', 'not found'] },
  '/silent-worker/': {
    'wasm/causal_attention_threads.worker.mjs': [200, 'text/javascript', 'self.onmessage = () => {};'],
  },
  '/no-api-worker/': { 'worker.mjs': [404, 'text/plain', 'not found'] },
};

// Firefox's own reports of a load it blocked (the CSP, a 404's text/plain worker).
const BLOCKED = /^(Content-Security-Policy: The page’s settings blocked|Loading Worker from “[^”]+” was blocked because of a disallowed MIME type)/;

let server;
let base;
before(async () => {
  const files = sirv(join(root, 'dist'), { dev: true });
  server = http.createServer((req, res) => {
    res.setHeader('Cross-Origin-Opener-Policy', 'same-origin');
    res.setHeader('Cross-Origin-Embedder-Policy', 'require-corp');
    const path = new URL(req.url, 'http://x').pathname;
    if (path === '/' || path === '/csp') {
      // /csp: a Content-Security-Policy that allows the package's scripts but not WebAssembly.
      const csp = path === '/csp' ? { 'Content-Security-Policy': "script-src 'self'; worker-src 'self'" } : {};
      res.writeHead(200, { 'Content-Type': 'text/html', ...csp })
        .end('<!doctype html><link rel="icon" href="data:,"><p>test</p>');
      return;
    }
    const prefix = Object.keys(BROKEN).find((p) => path.startsWith(p));
    if (!prefix) return res.writeHead(404).end();
    const rest = path.slice(prefix.length);
    const broken = BROKEN[prefix][rest];
    if (broken) return res.writeHead(broken[0], { 'Content-Type': broken[1] }).end(broken[2]);
    req.url = `/${rest}`;
    return files(req, res, () => res.writeHead(404).end());
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${server.address().port}/`;
});
after(async () => {
  await new Promise((resolve) => server?.close(resolve));
});

describeEngines('the package', (engine) => {
  let browser;
  before(async () => {
    browser = await engine.start();
  });
  after(() => browser?.close());

  async function newPage(path = '') {
    const page = await browser.newPage();
    const messages = [];
    page.on('console', (m) => messages.push({ type: m.type(), text: m.text() }));
    page.on('pageerror', (e) => messages.push({ type: 'pageerror', text: e.message }));
    await page.goto(`${base}${path}`);
    return { page, messages };
  }

  describe('worker mode', () => {
    it('gives the main thread\'s results and errors, and dispose ends the worker', async (t) => {
      const { page, messages } = await newPage();
      const result = await page.evaluate(async () => {
        const { init } = await import('/ok/index.mjs');
        const local = await init();
        const remote = await init({ worker: true });
        globalThis.firstRemote = remote; // the worker ends with the last runtime's dispose()
        const x = new Float32Array([0.43, 0.15, 0.89, 0.55, 0.87, 0.66, 0.57, 0.85, 0.64,
          0.22, 0.58, 0.33, 0.77, 0.25, 0.10, 0.05, 0.80, 0.55]);
        await remote.manualSeed(123);
        const layer = await new remote.CausalAttention(3, 2, 6, 0.0);
        const book = Array.from((await layer.forward(x, [6, 3])).subarray(0, 2), (v) => v.toFixed(4));
        const q = new Float32Array(24).map((_, i) => Math.sin(i));
        const shape = { batch: 1, heads: 2, queryLength: 4, headDim: 3, returnWeights: true };
        const out = new Float32Array(24);
        const remoteResult = await remote.attention(q, q, q, { ...shape, out });
        const localResult = local.attention(q, q, q, shape);
        const errors = [];
        for (const bad of [
          (ca) => ca.attention(q.subarray(1), q, q, shape),
          (ca) => ca.attention(q, q, q, { ...shape, heads: 2.5 }),
          (ca) => new ca.MultiHeadAttention(3, 3, 6, 0.0, 2),
        ]) {
          let expected;
          try { bad(local); } catch (e) { expected = [e.constructor.name, e.message]; }
          try { await bad(remote); } catch (e) { errors.push({ expected, actual: [e.constructor.name, e.message] }); }
        }
        return {
          isolated: crossOriginIsolated, localBuild: local.build, remoteBuild: remote.build, book,
          same: remoteResult.output === out && JSON.stringify(Array.from(out)) === JSON.stringify(Array.from(localResult.output))
            && JSON.stringify(Array.from(remoteResult.weights)) === JSON.stringify(Array.from(localResult.weights)),
          errors,
        };
      });
      assert.equal(result.isolated, true);
      assert.equal(result.remoteBuild, 'threads');
      assert.deepEqual(result.book, ['-0.4519', '0.2216']);
      assert.ok(result.same, 'attention through the worker equals the main thread\'s, written into out');
      assert.equal(result.errors.length, 3);
      for (const { expected, actual } of result.errors) assert.deepEqual(actual, expected);
      assert.ok(['TypeError', 'RangeError'].includes(result.errors[0].actual[0]));

      const noWorkers = lacking(engine, 'workers');
      if (noWorkers) t.diagnostic(`the workers are not counted: ${noWorkers}`);
      const workers = noWorkers ? 1 : page.workers().length;
      assert.ok(workers >= 1, 'worker mode runs in a worker');
      const closed = noWorkers ? null : new Promise((resolve) => page.workers().forEach((w) => w.once('close', resolve)));
      const after = await page.evaluate(async () => {
        const { init } = await import('/ok/index.mjs');
        // Each init() its own runtime in the shared worker: the first one's
        // dispose() leaves the worker to the second, whose dispose() ends it.
        const remote = await init({ worker: true });
        await globalThis.firstRemote.dispose();
        await remote.rand(2);
        await remote.dispose();
        try {
          await remote.rand(2);
          return 'resolved';
        } catch (e) {
          return `${e.constructor.name}: ${e.message}`;
        }
      });
      assert.equal(after, 'TypeError: this causal-attention runtime has been disposed; call init() for a new one');
      if (!noWorkers) {
        await closed;
        assert.equal(page.workers().length, workers - 1, 'dispose terminated the worker (its pthreads live inside it)');
      }
      assert.deepEqual(messages.filter((m) => m.type === 'error' || m.type === 'pageerror'), []);
      await page.close();
    });

    it('runs a 1024-token forward off the main thread: no blocking warning (stalls printed)', async (t) => {
      const { page, messages } = await newPage();
      // The same forward through worker mode, then on the main thread (threads
      // build), after a warm-up: timed alone, then once more with a timer
      // ticking every millisecond, whose longest gap is how long the page froze.
      const forward = (options) => page.evaluate(async (o) => {
        const { init } = await import('/ok/index.mjs');
        const ca = await init(o);
        const T = 1024;
        const x = new Float32Array(T * 3).map((_, i) => (i % 17) / 17);
        await ca.manualSeed(789);
        const layer = await new ca.MultiHeadAttention(3, 64, T, 0.0, 4);
        const run = () => layer.forward(x, [T, 3], { returnWeights: true, returnScores: true });
        await run(); // warm-up (V8 tiers up)
        const t0 = performance.now();
        const { weights } = await run();
        const ms = performance.now() - t0;
        let last = performance.now();
        let stall = 0;
        const timer = setInterval(() => {
          const now = performance.now();
          stall = Math.max(stall, now - last);
          last = now;
        }, 1);
        await new Promise((resolve) => setTimeout(resolve, 20));
        await run();
        await new Promise((resolve) => setTimeout(resolve, 20));
        clearInterval(timer);
        return { ms, stall, weights: weights.length, build: ca.build };
      }, options);
      const blocking = () => messages.filter((m) => /Blocking on the main thread/.test(m.text)).length;

      const viaWorker = await forward({ worker: true });
      assert.equal(viaWorker.build, 'threads');
      assert.equal(viaWorker.weights, 4 * 1024 * 1024);
      assert.equal(blocking(), 0, 'no "Blocking on the main thread" warning in worker mode');
      const local = await forward({});
      const noConsole = lacking(engine, 'console');
      if (noConsole) t.diagnostic(`"Blocking on the main thread" warnings not seen: ${noConsole}`);
      console.log(`${engine.name}: T = 1024 MultiHeadAttention forward (weights + scores, after one warm-up), threads build: ` +
        `on the main thread ${local.ms.toFixed(1)} ms, page frozen up to ${local.stall.toFixed(1)} ms, ` +
        `"Blocking on the main thread" warnings ${blocking()}; worker mode ${viaWorker.ms.toFixed(1)} ms, ` +
        `page frozen up to ${viaWorker.stall.toFixed(1)} ms, warnings 0`);
      assert.deepEqual(messages.filter((m) => m.type === 'error' || m.type === 'pageerror'), []);
      await page.close();
    });
  });

  describe('init() never hangs', () => {
    /** The message init(options) from `prefix` rejects with, and the workers left. */
    async function initError(prefix, options, path = '') {
      const { page, messages } = await newPage(path);
      const message = await page.evaluate(async ([p, o]) => {
        const { init } = await import(`/${p}/index.mjs`);
        try {
          await init(o);
          return 'resolved';
        } catch (error) {
          return error.message;
        }
      }, [prefix, options]);
      // Give a terminated worker time to report its close.
      await page.waitForTimeout(200);
      const workers = lacking(engine, 'workers') ? null : page.workers().length;
      // Uncaught rejections and errors after init() settled (a timer's included).
      await page.waitForTimeout(options.timeout ? options.timeout + 300 : 0);
      // Firefox reports the blocked load itself as a page error (Chromium as a
    // console error): the browser's report of what the test did, not an
    // error of the package's that went uncaught.
    const uncaught = messages.filter((m) => (m.type === 'pageerror' || /Uncaught/.test(m.text)) && !BLOCKED.test(m.text));
      await page.close();
      return { message, workers, uncaught };
    }

    /** No worker left (where the driver lists them; else the output says why not checked). */
    function noWorkerLeft(t, r, what) {
      if (r.workers === null) t.diagnostic(`${what ?? ''} workers left not counted: ${lacking(engine, 'workers')}`);
      else assert.equal(r.workers, 0, what);
    }

    it('names a .wasm that answers 404 and says how to serve it', async (t) => {
      const r = await initError('no-wasm', { build: 'single' });
      assert.match(r.message, new RegExp(`could not load ${base}no-wasm/wasm/causal_attention\\.wasm: HTTP 404`));
      assert.match(r.message, /serve node_modules\/causal-attention\/dist\/ as static files/);
      assert.deepEqual(r.uncaught, []);
    });

    it('says what came instead of the .wasm (a dev server\'s index.html)', async (t) => {
      const r = await initError('html-wasm', { build: 'single' });
      assert.match(r.message, /the response is not WebAssembly \(Content-Type text\/html, first bytes 3c 21 64 6f .* "<!doctyp"\)/);
    });

    it('names a pthread worker that answers 404, and leaves no worker', async (t) => {
      const r = await initError('no-worker', { build: 'threads', threads: 2 });
      assert.match(r.message, new RegExp(`the pthread worker ${base}no-worker/wasm/causal_attention_threads\\.worker\\.mjs ` +
        'failed: HTTP 404'));
      // Its hint names the CSP's worker-src; that is no CSP error about WebAssembly.
      assert.doesNotMatch(r.message, /does not allow WebAssembly/);
      noWorkerLeft(t, r);
      assert.deepEqual(r.uncaught, []);
    });

    it('rejects when a pthread worker never answers, within the timeout, and leaves no worker', async (t) => {
      const r = await initError('silent-worker', { build: 'threads', threads: 3, timeout: 1500 });
      assert.match(r.message, /the threads build did not load within 1500 ms; still starting the pthread workers: 0 of 2 ready/);
      noWorkerLeft(t, r);
    });

    it('names the worker of worker mode when it answers 404', async (t) => {
      const r = await initError('no-api-worker', { worker: true });
      assert.match(r.message, new RegExp(`the worker ${base}no-api-worker/worker\\.mjs failed: HTTP 404`));
      noWorkerLeft(t, r);
    });

    it('names \'wasm-unsafe-eval\' when the page\'s CSP blocks WebAssembly, and nothing goes uncaught', async (t) => {
      for (const build of ['single', 'threads']) {
        const r = await initError('ok', { build, threads: 2, timeout: 1500 }, 'csp');
        assert.match(r.message,
          /^causal-attention: the page's Content-Security-Policy does not allow WebAssembly\. Add 'wasm-unsafe-eval' to its script-src/,
          build);
        assert.deepEqual(r.uncaught, [], build);
        noWorkerLeft(t, r, build);
      }
    });
  });
});
