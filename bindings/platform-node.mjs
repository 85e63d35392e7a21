// Node: the .wasm is read from the package with fs, workers are
// worker_threads Workers behind the small part of the web Worker interface
// that emcc's glue uses. Only node.mjs and worker-node.mjs import this file
// (the package's `node` export condition), so browser bundles never see a
// `node:` import. Nothing here touches the host process: no handlers, no
// globals; workers are unreferenced once idle, so a script exits normally.

import { readFile } from 'node:fs/promises';
import { availableParallelism, cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';

/** @import { GlueWorker, Platform, PthreadWorkerHooks } from './engine/platform.d.ts' */

/**
 * The package's files, as paths. Not `new URL('./…', import.meta.url)`:
 * bundlers rewrite that form into assets of their own (Vite under Vitest's
 * `server.deps.inline` made it a server path, Turbopack fails on
 * `new Worker(url)`), and these files are only ever read from the installed
 * package (dist/, where this module is; dist/index.cjs is bundled there too).
 */
const DIST = dirname(fileURLToPath(import.meta.url));
const FILES = {
  single: join(DIST, 'wasm', 'causal_attention.wasm'),
  threads: join(DIST, 'wasm', 'causal_attention_threads.wasm'),
  pthreadWorker: join(DIST, 'pthread-node.mjs'),
  apiWorker: join(DIST, 'worker-node.mjs'),
};

/**
 * `new Worker(path, options)` where bundlers do not look for a worker entry
 * to bundle (Turbopack stops on a `new Worker` it cannot evaluate).
 * @param {string} path
 * @param {import('node:worker_threads').WorkerOptions} options
 * @returns {Worker}
 */
const startWorker = (path, options) => Reflect.construct(Worker, [path, options]);

/**
 * Our workers take none of the host's Node options: some break a worker
 * (`--input-type`), and none is needed to run wasm.
 */
const WORKER_OPTIONS = { execArgv: [] };

const REINSTALL = 'It ships in the package\'s dist/; reinstall the package (npm install causal-attention)';

/** @param {string} path */
async function compileWasm(path) {
  let bytes;
  try {
    bytes = await readFile(path);
  } catch (error) {
    throw new Error(`causal-attention could not read ${path}: ${error.message}. ${REINSTALL}`, { cause: error });
  }
  try {
    return await WebAssembly.compile(bytes);
  } catch (error) {
    throw new Error(`causal-attention: ${path} is not a valid WebAssembly module (${error.message}). ${REINSTALL}`,
      { cause: error });
  }
}

/**
 * A worker_threads Worker as emcc's glue sees a web Worker.
 * @implements {GlueWorker}
 */
class PthreadWorker {
  #worker;

  /**
   * @param {string} path
   * @param {PthreadWorkerHooks} hooks
   */
  constructor(path, { onError, onLoaded }) {
    // Set by emcc; its onerror (log and rethrow) is never called: onError reports.
    /** @type {((event: { data: unknown }) => void) | null} */
    this.onmessage = null;
    /** @type {unknown} */
    this.onerror = null;
    this.#worker = startWorker(path, { ...WORKER_OPTIONS, name: 'causal-attention pthread' });
    this.#worker.on('message', (data) => {
      // The web prelude's "listening" (scripts/patch-glue.mjs) also runs where
      // the worker's global has addEventListener (Deno): no port comes here.
      if (data?.causalAttentionListening) return;
      if (data?.cmd === 'loaded') onLoaded?.();
      this.onmessage?.({ data });
    });
    this.#worker.on('error', (/** @type {Error} */ error) => onError(error.message));
  }

  /**
   * @param {unknown} message
   * @param {Transferable[]} transfer
   */
  postMessage(message, transfer) {
    this.#worker.postMessage(message, /** @type {import('node:worker_threads').Transferable[]} */ (transfer));
  }

  terminate() {
    this.#worker.terminate();
  }

  unref() {
    this.#worker.unref();
  }
}

/** @type {Platform} */
export const nodePlatform = {
  isNode: true,

  hardwareThreads: () => availableParallelism?.() ?? cpus().length,

  wasm(build) {
    const path = FILES[build];
    return { where: path, compile: () => compileWasm(path) };
  },

  pthreadWorker(hooks) {
    return [new PthreadWorker(FILES.pthreadWorker, hooks), FILES.pthreadWorker];
  },

  /**
   * Node keeps a process alive while any Worker is referenced; idle pthread
   * workers must not, so a script that used the threaded build exits normally.
   */
  afterLoad(mod) {
    const pthread = mod.PThread;
    if (!pthread) return;
    for (const w of [...pthread.unusedWorkers, ...pthread.runningWorkers]) w.unref?.();
  },

  /**
   * emcc's messages. The glue is built for the web, where blocking the main
   * thread is a busy wait; Node's main thread waits with Atomics.wait, so
   * that warning does not apply here.
   */
  printErr(text) {
    if (!String(text).startsWith('Blocking on the main thread')) console.warn(text);
  },

  /** The worker of init({ worker: true }) as a port for remote.mjs. */
  apiWorker() {
    const worker = startWorker(FILES.apiWorker, { ...WORKER_OPTIONS, name: 'causal-attention' });
    const where = FILES.apiWorker;
    return {
      where,
      post: (message, transfer) =>
        worker.postMessage(message, /** @type {import('node:worker_threads').Transferable[]} */ (transfer)),
      onMessage: (handler) => worker.on('message', handler),
      onError: (handler) => {
        worker.on('error', (/** @type {Error} */ error) => handler(error.message));
        worker.on('exit', (code) => handler(`it exited (code ${code})`));
      },
      terminate: () => worker.terminate(),
      ref: () => worker.ref(),
      unref: () => worker.unref(),
    };
  },
};
