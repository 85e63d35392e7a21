// Browsers and web workers: where the package's files are and how to start
// its workers. Every file is named by a literal
// `new URL('./…', import.meta.url)`, the form Vite and webpack follow to
// emit the file and rewrite the URL; workers are module workers created
// with `new Worker(new URL('./…', import.meta.url), { type: 'module' })`, the
// form they bundle. Without a bundler the URLs resolve next to this module.
// No `node:` import is reachable from here (the `browser` export condition).

/** @import { GlueWorker, Platform, PthreadWorkerHooks } from './engine/platform.d.ts' */

/**
 * Vite 7's dev server copies dependencies into node_modules/.vite/deps/
 * without the files they reference (vitejs/vite#8427), so there a literal
 * URL points at nothing. Then, with Vite's default cacheDir, the package is
 * two folders up. Vite 8, builds and other bundlers rewrite the literal.
 */
const VITE_DEPS = /\/node_modules\/\.vite\/deps(?:_temp_[^/]*)?\/wasm\//;
const here = import.meta.url;
const copiedByViteDev = () => VITE_DEPS.test(new URL('./wasm/causal_attention.wasm', import.meta.url).pathname);

/**
 * `path` against `base`, out of bundlers' sight: Turbopack turns a
 * `new URL(computed, import.meta.url)` into a glob over dist/ (and fails on
 * the .d.cts it finds), webpack into a context module. Only the literal
 * URLs below are meant for bundlers.
 * @param {string} path
 * @param {string} base
 */
const resolve = (path, base) => new URL(path, base);
const inPackage = (/** @type {string} */ path) => resolve(`../../causal-attention/dist/${path}`, here);

/**
 * A worker's URL as this module would resolve it. Exact when the package is
 * served as is (this file is still platform-web.mjs); a bundler may have
 * emitted the worker under another name, which only the literal in
 * `new Worker(new URL(...))` knows.
 */
const unbundled = /^https?:.*\/platform-web\.mjs(?:[?#].*)?$/.test(here);
const nominal = (/** @type {string} */ path) => resolve(path, here);

const PTHREAD_WORKER = 'wasm/causal_attention_threads.worker.mjs';
const API_WORKER = 'worker.mjs';

/** @param {'single' | 'threads'} build */
function wasmUrl(build) {
  const threads = build === 'threads';
  if (copiedByViteDev()) return inPackage(threads ? 'wasm/causal_attention_threads.wasm' : 'wasm/causal_attention.wasm');
  return threads
    ? new URL('./wasm/causal_attention_threads.wasm', import.meta.url)
    : new URL('./wasm/causal_attention.wasm', import.meta.url);
}

/** @param {URL} url */
function serveHint(url) {
  const vite = VITE_DEPS.test(url.pathname) || /\/\.vite\//.test(new URL(here).pathname)
    ? ' Vite\'s dev server pre-bundled the package away from its files: add ' +
      'optimizeDeps: { exclude: [\'causal-attention\'] } to vite.config.'
    : '';
  return 'The file ships in the package\'s dist/wasm/: a bundler (Vite, webpack) emits it; without ' +
    'one serve node_modules/causal-attention/dist/ as static files (with esbuild, copy it next to ' +
    `the bundle) so that this URL answers with the file.${vite}`;
}

/**
 * @param {URL} url
 * @param {string} reason
 */
function loadError(url, reason) {
  return new Error(`causal-attention could not load ${url}: ${reason}. ${serveHint(url)}`);
}

/**
 * The first bytes of a response, for an error message.
 * @param {Uint8Array} bytes
 */
function describeBytes(bytes) {
  const head = bytes.subarray(0, 8);
  const hex = Array.from(head, (b) => b.toString(16).padStart(2, '0')).join(' ');
  const text = String.fromCharCode(...head).replace(/[^\x20-\x7e]/g, '.');
  return `first bytes ${hex} "${text}"`;
}

/** @param {URL} url */
async function compileWasm(url) {
  let response;
  try {
    response = await fetch(url, { credentials: 'same-origin' });
  } catch (error) {
    throw loadError(url, `the request failed (${error.message})`);
  }
  if (!response.ok) throw loadError(url, `HTTP ${response.status} ${response.statusText}`.trim());
  const type = response.headers.get('Content-Type') ?? '';
  if (type.split(';')[0].trim() === 'application/wasm' && WebAssembly.compileStreaming) {
    try {
      return await WebAssembly.compileStreaming(response);
    } catch (error) {
      throw loadError(url, `it is not a valid WebAssembly module (${error.message})`);
    }
  }
  // Another Content-Type: compile the bytes when they are WebAssembly (no
  // streaming), else say what came instead (often a dev server's index.html).
  const bytes = new Uint8Array(await response.arrayBuffer());
  if (bytes[0] !== 0 || bytes[1] !== 0x61 || bytes[2] !== 0x73 || bytes[3] !== 0x6d) {
    throw loadError(url, `the response is not WebAssembly (Content-Type ${type || 'none'}, ${describeBytes(bytes)})`);
  }
  try {
    return await WebAssembly.compile(bytes);
  } catch (error) {
    throw loadError(url, `it is not a valid WebAssembly module (${error.message})`);
  }
}

/**
 * Why a worker script failed: the response's status or type when that was it.
 * @param {ErrorEvent} event
 * @param {URL | null} url
 */
async function describeWorkerFailure(event, url) {
  if (event.message) return `${event.message}${event.filename ? ` (${event.filename}:${event.lineno})` : ''}`;
  if (!url) return 'it did not start (its script or a module it imports did not load)';
  try {
    const response = await fetch(url, { credentials: 'same-origin' });
    if (!response.ok) return `HTTP ${response.status} ${response.statusText}`.trim();
    const type = response.headers.get('Content-Type') ?? 'none';
    if (!/javascript|ecmascript/.test(type)) return `served with Content-Type ${type}`;
  } catch (error) {
    return `the request failed (${error.message})`;
  }
  return 'it did not start (a module import inside it failed, or the Content-Security-Policy blocks it)';
}

/**
 * Wires a worker's failures to `onError(reason)`, its "loaded" message to
 * `onLoaded` and its first one, that it listens (scripts/patch-glue.mjs's
 * prelude), to `onListening`, which emcc's `onmessage` never sees. emcc
 * assigns `worker.onerror` a handler that logs and rethrows (an uncaught
 * error in the page); an own accessor keeps it off the worker. Called
 * before emcc sets `onmessage`: these listeners come first.
 * @param {Worker} worker
 * @param {URL | null} url
 * @param {PthreadWorkerHooks & { onListening?: () => void }} hooks
 */
function watch(worker, url, { onError, onLoaded, onListening }) {
  Object.defineProperty(worker, 'onerror', { configurable: true, get: () => null, set: () => {} });
  worker.addEventListener('error', (event) => {
    event.preventDefault();
    describeWorkerFailure(event, url).then(onError);
  });
  worker.addEventListener('messageerror', () => onError('a message could not be deserialized'));
  worker.addEventListener('message', (event) => {
    if (event.data?.causalAttentionListening) {
      event.stopImmediatePropagation();
      onListening?.();
    } else if (event.data?.cmd === 'loaded') {
      onLoaded?.();
    }
  });
  return worker;
}


/**
 * A pthread worker started on this thread, by the literal URL bundlers
 * follow (the options must be literal too: Vite reads them at build time).
 */
function startPthreadWorker() {
  const vite = copiedByViteDev();
  const url = vite ? inPackage(PTHREAD_WORKER) : unbundled ? nominal(PTHREAD_WORKER) : null;
  const worker = url && vite ? new Worker(url, { type: 'module', name: 'causal-attention pthread' })
    : new Worker(new URL('./wasm/causal_attention_threads.worker.mjs', import.meta.url),
      { type: 'module', name: 'causal-attention pthread' });
  return { worker, url, where: url?.href ?? `${PTHREAD_WORKER} (as your bundler emitted it)` };
}

// Worker mode's pthread workers are started by the page, not by the API
// worker that runs the module: in Firefox ESR a `new Worker()` inside a
// worker (a synchronous call) now and then never returns, and the API
// worker hangs in it for good (Chromium and WebKitGTK never did). The page starts them on the API
// worker's request (LEND) and hands over a MessagePort to each (PORT_KEY,
// read by the pthread worker's prelude, scripts/patch-glue.mjs), through
// which the worker then talks to the module's thread as if that had started
// it. LENT_ERROR carries a lent worker's failure to the API worker, LENT_END
// the API worker's terminate() to the page. None of these messages has an
// `id`: remote.mjs would take it for the answer to its request of that id.
const LEND = 'causal-attention:lend-pthread-workers';
const LENT_ERROR = 'causal-attention:lent-worker-failed';
const LENT_END = 'causal-attention:lent-worker-ended';
const PORT_KEY = 'causalAttentionPort';

/**
 * The page's side of lending: answers the API worker's LEND requests.
 * @param {Worker} apiWorker
 * @returns {() => void} terminates every worker lent
 */
function lendPthreadWorkers(apiWorker) {
  /** @type {Map<number, Worker>} */
  const lent = new Map();
  let nextId = 0;
  apiWorker.addEventListener('message', (event) => {
    const message = event.data;
    if (message?.op === LENT_END) {
      lent.get(message.lent)?.terminate();
      lent.delete(message.lent);
    }
    if (message?.op !== LEND) return;
    /** @type {MessagePort[]} */
    const ports = [];
    /** @type {number[]} */
    const ids = [];
    let where = '';
    for (let i = 0; i < message.count; i++) {
      const id = nextId++;
      const started = startPthreadWorker();
      const channel = new MessageChannel();
      watch(started.worker, started.url, {
        onError: (reason) => apiWorker.postMessage({ op: LENT_ERROR, lent: id, reason }),
        // The port once the worker listens (scripts/patch-glue.mjs's prelude).
        onListening: () => started.worker.postMessage({ [PORT_KEY]: channel.port2 }, [channel.port2]),
      });
      lent.set(id, started.worker);
      ids.push(id);
      ports.push(channel.port1);
      where = started.where;
    }
    apiWorker.postMessage({ op: LEND, request: message.request, ids, ports, where }, ports);
  });
  return () => {
    for (const worker of lent.values()) worker.terminate();
    lent.clear();
  };
}

/**
 * The API worker's side of lending, once borrowFromPage has run there.
 * @type {{ post(message: unknown): void, answers: Map<number, (reply: any) => void>,
 *   hooks: Map<number, PthreadWorkerHooks>, nextRequest: number } | null}
 */
let page = null;
/** Lent workers not yet taken by the glue, each as the pthreadWorker() that takes it. */
/** @type {Array<(hooks: PthreadWorkerHooks) => [GlueWorker, string]>} */
const borrowed = [];

/**
 * In worker mode's API worker (worker.mjs): pthread workers come from the
 * page from now on (see LEND). Returns the filter of the worker's incoming
 * messages: true for the ones lending answers here.
 * @param {{ postMessage(message: unknown, transfer: Transferable[]): void }} scope
 * @returns {(data: any) => boolean}
 */
export function borrowFromPage(scope) {
  const state = {
    post: (/** @type {unknown} */ message) => scope.postMessage(message, []),
    answers: new Map(),
    hooks: new Map(),
    nextRequest: 0,
  };
  page = state;
  return (data) => {
    if (data?.op === LEND) {
      state.answers.get(data.request)?.(data);
      state.answers.delete(data.request);
      return true;
    }
    if (data?.op === LENT_ERROR) {
      state.hooks.get(data.lent)?.onError(data.reason);
      return true;
    }
    return false;
  };
}

/**
 * A lent worker as the glue uses one: its messages go through `port`.
 * @param {MessagePort} port
 * @param {number} id
 * @param {PthreadWorkerHooks} hooks
 * @returns {GlueWorker}
 */
function lentWorker(port, id, hooks) {
  const lender = /** @type {NonNullable<typeof page>} */ (page);
  lender.hooks.set(id, hooks);
  /** @type {GlueWorker & { onmessage: ((event: MessageEvent) => void) | null }} */
  const worker = {
    onmessage: null, // the glue's
    postMessage: (message, transfer) => port.postMessage(message, transfer ?? []),
    terminate() {
      port.close();
      lender.hooks.delete(id);
      lender.post({ op: LENT_END, lent: id });
    },
  };
  port.onmessage = (event) => {
    if (event.data?.cmd === 'loaded') hooks.onLoaded?.();
    worker.onmessage?.(event);
  };
  return worker;
}

/** The most threads init({ threads: 'auto' }) takes in a browser (see hardwareThreads). */
const WEB_AUTO_THREADS = 4;

/** @type {Platform} */
export const webPlatform = {
  isNode: false,

  check() {
    if (typeof globalThis.process?.versions?.node === 'string' && typeof window === 'undefined') {
      throw new Error('causal-attention: this is the browser build (dist/index.mjs); in Node import ' +
        '\'causal-attention\' by name (its "node" export condition loads dist/node.mjs)');
    }
  },

  // What browsers report is not the cores this page may use: WebKit reports
  // 4 below 8 cores and 8 from there (4 on a 2-core machine), Chromium under
  // its reduced-fingerprinting feature a fixed 8, and the page's own thread
  // and its other workers share the same cores. 'auto' takes at most
  // WEB_AUTO_THREADS = 4: at worst two threads per core on a 2-core machine
  // (where 4 threads were slower than 2 in WebKitGTK and Chromium:
  // bench/studies/browser-threads.mjs, figures in docs/performance.md), while
  // the 4- to 7-core machines WebKit also reports as 4 keep all their cores.
  // init({ threads }) asks for more (up to 16).
  hardwareThreads: () => Math.min(globalThis.navigator?.hardwareConcurrency || 1, WEB_AUTO_THREADS),

  wasm(build) {
    const url = wasmUrl(build);
    return { where: url.href, compile: () => compileWasm(url) };
  },

  // In worker mode's API worker, the page starts them (see LEND).
  async preparePthreadWorkers(count) {
    const lender = page;
    if (!lender) return;
    const request = lender.nextRequest++;
    /** @type {{ ids: number[], ports: MessagePort[], where: string }} */
    const reply = await new Promise((resolve) => {
      lender.answers.set(request, resolve);
      lender.post({ op: LEND, request, count });
    });
    reply.ids.forEach((id, i) => borrowed.push((hooks) => [lentWorker(reply.ports[i], id, hooks), reply.where]));
  },

  pthreadWorker(hooks) {
    const lent = borrowed.shift();
    if (lent) return lent(hooks);
    const { worker, url, where } = startPthreadWorker();
    return [watch(worker, url, hooks), where];
  },

  /**
   * The worker of init({ worker: true }) where this file is served as is
   * (or copied by Vite 7's dev server). Bundled, only the browser entry
   * (browser.mjs) can start it: see webApiWorker.
   */
  apiWorker: () => webApiWorker(null),
};

/**
 * The worker of init({ worker: true }) as a port for remote.mjs.
 * `bundled` is the browser entry's literal
 * `() => new Worker(new URL('./worker.mjs', import.meta.url), …)`: it lives
 * there and not here because the worker imports this file (worker.mjs →
 * index.mjs → here), and a worker whose own
 * module graph starts it is a cycle that deadlocks Turbopack and splits
 * webpack's chunks. Without a bundler the URL is computed, which no bundler
 * follows.
 * @param {(() => Worker) | null} bundled
 * @returns {import('./engine/platform.d.ts').ApiWorkerPort}
 */
export function webApiWorker(bundled) {
  const vite = copiedByViteDev();
  const url = vite ? inPackage(API_WORKER) : unbundled ? nominal(API_WORKER) : null;
  if (!url && !bundled) {
    throw new Error('causal-attention: worker mode needs the package\'s browser entry: import ' +
      '\'causal-attention\' by name (its "browser" export condition loads dist/browser.mjs), not a file in dist/');
  }
  const worker = url ? new Worker(url, { type: 'module', name: 'causal-attention' })
    : /** @type {() => Worker} */ (bundled)();
  const endLent = lendPthreadWorkers(worker);
  return {
    where: url?.href ?? `${API_WORKER} (as your bundler emitted it)`,
    post: (message, transfer) => worker.postMessage(message, transfer ?? []),
    onMessage: (handler) => worker.addEventListener('message', (event) => handler(event.data)),
    onError: (handler) => watch(worker, url, { onError: handler }),
    terminate: () => {
      worker.terminate();
      endLent();
    },
  };
}
