// Loads one of the two wasm builds through the platform an entry chose:
// platform-web.mjs (browsers, workers; index.mjs's default) or
// platform-node.mjs (node.mjs, the package's `node` entry). The platform says
// where the .wasm and the pthread worker are and how to start workers; this
// module compiles, instantiates and bounds it all in time, so init() always
// settles: a file that cannot load rejects with its URL and how to serve it,
// a worker that never answers rejects when `timeout` runs out. Nothing here
// touches the host: no globals, no process handlers, no workers left behind
// after a failure.

import createSingle from '../wasm/causal_attention.mjs';
import createThreads from '../wasm/causal_attention_threads.mjs';

/** @import { Platform } from './platform.d.ts' */
/** @import { EmbindModule } from './embind.mjs' */
/** @import { ModuleArg } from '../wasm/engine.js' */

/** Upper bound on threads, whatever the machine reports. */
export const MAX_THREADS = 16;

/** How long init() may take by default, in milliseconds. */
export const DEFAULT_TIMEOUT_MS = 30000;

/** @type {Platform | null} */
let chosen = null;

/**
 * A page whose Content-Security-Policy lacks 'wasm-unsafe-eval': browsers
 * word it as a missing 'unsafe-eval' (which would allow all of eval), from
 * the compile or from the glue's own small module (the relaxed-SIMD kernel,
 * cmake/gemm_side_library.cmake). Other errors pass as they are.
 * @param {unknown} error
 */
function explainCsp(error) {
  const message = error instanceof Error ? error.message : String(error);
  if (!/unsafe-eval|blocked by CSP/i.test(message)) return error;
  return new Error('causal-attention: the page\'s Content-Security-Policy does not allow WebAssembly. Add ' +
    '\'wasm-unsafe-eval\' to its script-src (it allows WebAssembly and nothing else; \'unsafe-eval\' is not ' +
    `needed), e.g. script-src 'self' 'wasm-unsafe-eval'. The browser said: ${message}`, { cause: error });
}

/**
 * Switches the platform (the entries call it before init's first load).
 * @param {Platform} p
 */
export function usePlatform(p) {
  chosen = p;
}

/**
 * Uses `p` unless an entry chose a platform already (index.mjs's default).
 * @param {Platform} p
 */
export function defaultPlatform(p) {
  chosen ??= p;
}

/** The platform in use (remote.mjs starts its worker through it). */
export function currentPlatform() {
  if (!chosen) {
    throw new Error('causal-attention: no platform chosen; import \'causal-attention\' by name (its entries ' +
      'choose one) before loading a build');
  }
  return chosen;
}

/** Whether the pthreads build can run here (and why not). */
export function threadsAvailability() {
  const platform = currentPlatform();
  if (typeof SharedArrayBuffer === 'undefined' || typeof Atomics === 'undefined') {
    return { ok: false, why: 'SharedArrayBuffer is not available' };
  }
  if (!platform.isNode && globalThis.crossOriginIsolated !== true) {
    return {
      ok: false,
      why: 'the page is not cross-origin isolated (serve it with ' +
        'Cross-Origin-Opener-Policy: same-origin and ' +
        'Cross-Origin-Embedder-Policy: require-corp)',
    };
  }
  return { ok: true, why: '' };
}

/** Logical cores available to this process or page. */
export async function hardwareThreads() {
  return currentPlatform().hardwareThreads();
}

/**
 * Instantiates a build. `threads` is the total thread count (the calling
 * thread included); the pthreads build pre-starts threads - 1 workers so
 * that creating them never waits on the event loop. Rejects after
 * `timeout` ms (Infinity: never) with what it was still waiting for.
 * @param {'single' | 'threads'} build
 * @param {number} threads
 * @param {{ timeout?: number }} [options]
 * @returns {Promise<EmbindModule>}
 */
export async function loadModule(build, threads, { timeout = DEFAULT_TIMEOUT_MS } = {}) {
  const platform = currentPlatform();
  platform.check?.();
  if (typeof WebAssembly !== 'object') {
    throw new Error('causal-attention: WebAssembly is not available here (Node started with --jitless, or a ' +
      'host that disables it); the engine is WebAssembly only');
  }
  const threaded = build === 'threads';
  const wasm = platform.wasm(build);
  /** @type {Array<{ terminate(): void }>} */
  const workers = [];
  let loaded = 0;
  let workerWhere = '';
  let stage = `compiling ${wasm.where}`;
  let loading = true;
  /** @type {(error: unknown) => void} */
  let fail = () => {};
  /** @type {Promise<never>} */
  const failed = new Promise((_, reject) => { fail = reject; });

  const compiled = wasm.compile();
  compiled.catch(fail);
  /** @type {ModuleArg} */
  const moduleArg = {
    // At least one pre-started worker: with a pool of 0, emcc 3.1.6 never
    // releases its "wasm-instantiate" run dependency and the module never
    // resolves (a forced threaded build with threads: 1 would hang).
    threadPoolSize: threaded ? Math.max(1, threads - 1) : 0,
    // The glue would fetch the .wasm itself; the platform has compiled it
    // (from the URL bundlers rewrite, or from the file in Node).
    instantiateWasm(imports, receiveInstance) {
      compiled.then(async (module) => {
        try {
          stage = `instantiating ${wasm.where}`;
          const instance = await WebAssembly.instantiate(module, imports);
          stage = threaded ? 'starting the pthread workers' : 'starting';
          receiveInstance(instance, module);
        } catch (error) {
          fail(new Error(`causal-attention: ${wasm.where} could not be instantiated: ${/** @type {Error} */ (error).message}`,
            { cause: error }));
        }
      }, () => {}); // compile errors reach `failed` directly
      return {};
    },
  };
  if (threaded) {
    moduleArg.pthreadWorker = () => {
      const [worker, where] = platform.pthreadWorker({
        onLoaded: () => { loaded++; },
        onError: (reason) => {
          const message = `causal-attention: the pthread worker ${workerWhere} failed: ${reason}. ` +
            'It ships in the package\'s dist/wasm/ next to the .wasm; serve it from there as ' +
            'JavaScript (Content-Type text/javascript), allowed by the page\'s ' +
            'Content-Security-Policy (worker-src), or use init({ build: \'single\' })';
          if (loading) fail(new Error(message));
          else console.error(message);
        },
      });
      workers.push(worker);
      workerWhere = where;
      return worker;
    };
  }
  if (platform.printErr) moduleArg.printErr = platform.printErr;

  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer;
  /** @type {Promise<never>} */
  const timedOut = new Promise((_, reject) => {
    if (!Number.isFinite(timeout)) return;
    timer = setTimeout(() => {
      const waiting = stage === 'starting the pthread workers'
        ? `${stage}: ${loaded} of ${workers.length} ready (${workerWhere})`
        : stage;
      reject(new Error(`causal-attention: the ${build} build did not load within ${timeout} ms; ` +
        `still ${waiting}. Check that the file is served (the browser's network panel shows it) ` +
        'or raise init({ timeout })'));
    }, timeout);
  });
  // Whichever of these settles after the race is decided (or after the
  // factory threw) must not surface as an unhandled rejection.
  failed.catch(() => {});
  timedOut.catch(() => {});
  try {
    if (threaded && platform.preparePthreadWorkers) {
      const preparing = stage;
      stage = 'waiting for the page to start the pthread workers';
      await Promise.race([platform.preparePthreadWorkers(moduleArg.threadPoolSize), failed, timedOut]);
      stage = preparing;
    }
    // Inside the try: a factory that throws at once (no WebAssembly under
    // `node --jitless` or a page CSP without 'wasm-unsafe-eval') still
    // clears the timer below.
    const ready = (threaded ? createThreads : createSingle)(moduleArg);
    ready.catch(() => {}); // a failure is reported through `failed` or the timeout
    // The glue's types (wasm/*.d.mts) leave the module untyped: embind.mjs
    // describes what embind.cc registers.
    const mod = /** @type {EmbindModule} */ (await Promise.race([ready, failed, timedOut]));
    loading = false;
    if (threaded) {
      mod.setNumThreads(threads);
      platform.afterLoad?.(mod);
    }
    return mod;
  } catch (error) {
    for (const worker of workers) worker.terminate();
    throw explainCsp(error);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Stops every worker of a pthreads build (after this, the module is dead).
 * @param {EmbindModule} mod
 */
export function terminateWorkers(mod) {
  mod.PThread?.terminateAllThreads();
}
