// causal-attention: the package entry. init() loads the wasm engine once
// per resolved options and resolves to a new Runtime over it each time
// (runtime.mjs): its own generator and lifetime; the API is
// described in index.d.ts.

import { Engine } from './engine/engine.mjs';
import {
  DEFAULT_TIMEOUT_MS, MAX_THREADS, currentPlatform, defaultPlatform, hardwareThreads, loadModule, threadsAvailability,
} from './engine/loader.mjs';
import { webPlatform } from './platform-web.mjs';
import { Runtime } from './runtime.mjs';
import { checkBoolean, checkInteger, checkOneOf, checkOptionNames, describe } from './api/validate.mjs';
import { initRemote } from './remote/remote.mjs';

/** @import { InitOptions, RemoteRuntime } from './index.d.ts' */

/**
 * The loaded engines by resolved options, shared by the runtimes init()
 * makes over them (`holders` counts those not yet disposed; the last one's
 * dispose() disposes the engine and forgets it).
 * @type {Map<string, Promise<{ engine: Engine, holders: number }>>}
 */
const engines = new Map();

// index.d.ts's three overloads, resolving to the Runtime class here
// (tests/types/conformance/runtime.mts checks it against the declaration).
/**
 * Worker mode: the engine in a dedicated worker.
 * @overload
 * @param {InitOptions & { worker: true }} options
 * @returns {Promise<RemoteRuntime>}
 */
/**
 * The engine on the calling thread (default).
 * @overload
 * @param {InitOptions & { worker?: false }} [options]
 * @returns {Promise<Runtime>}
 */
/**
 * `worker` known only at run time.
 * @overload
 * @param {InitOptions} [options]
 * @returns {Promise<Runtime | RemoteRuntime>}
 */
/**
 * @param {InitOptions} [options]
 * @returns {Promise<Runtime | RemoteRuntime>}
 */
export function init(options = {}) {
  // Browsers and web workers unless an entry chose another (node.mjs,
  // worker-node.mjs) or the page's own (browser.mjs).
  defaultPlatform(webPlatform);
  try {
    checkOptionNames('init options', options, ['build', 'threads', 'worker', 'timeout', 'gemmKernel']);
    const build = options.build ?? 'auto';
    checkOneOf('init options.build', build, ['auto', 'single', 'threads']);
    const threads = options.threads ?? 'auto';
    if (threads !== 'auto') {
      checkInteger('init options.threads', threads, 1);
      if (threads > MAX_THREADS) {
        throw new RangeError(`init options.threads must be at most ${MAX_THREADS}, got ${threads}`);
      }
    }
    const worker = checkBoolean('init options.worker', options.worker ?? false);
    const timeout = options.timeout ?? DEFAULT_TIMEOUT_MS;
    if (typeof timeout !== 'number' || !(timeout > 0)) {
      const Err = typeof timeout === 'number' ? RangeError : TypeError;
      throw new Err(`init options.timeout must be a number of milliseconds > 0 (or Infinity), got ${describe(timeout)}`);
    }
    const gemmKernel = options.gemmKernel ?? 'auto';
    checkOneOf('init options.gemmKernel', gemmKernel, ['auto', 'simd128']);
    // remote/ knows the runtime as a proxy; index.d.ts gives it its type.
    if (worker) {
      return /** @type {Promise<RemoteRuntime>} */ (initRemote(currentPlatform(), { build, threads, timeout, gemmKernel }));
    }
    return initChecked(build, threads, timeout, gemmKernel);
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * @param {'auto' | 'single' | 'threads'} build
 * @param {number | 'auto'} threads
 * @param {number} timeout
 * @param {'auto' | 'simd128'} gemmKernel
 * @returns {Promise<Runtime>}
 */
async function initChecked(build, threads, timeout, gemmKernel) {
  const availability = threadsAvailability();
  let n = threads === 'auto' ? Math.min(await hardwareThreads(), MAX_THREADS) : threads;
  if (build === 'threads' && !availability.ok) {
    throw new Error(`the threaded build cannot run here: ${availability.why}`);
  }
  const kind = build === 'auto' ? (availability.ok && n > 1 ? 'threads' : 'single') : build;
  if (kind === 'single') n = 1;
  const key = `${kind}:${n}:${gemmKernel}`;
  for (;;) {
    let promise = engines.get(key);
    if (!promise) {
      const loading = loadModule(kind, n, { timeout }).then((mod) =>
        ({ engine: new Engine(mod, { relaxedGemm: gemmKernel !== 'simd128' }), holders: 0 }));
      promise = loading;
      engines.set(key, loading);
      loading.catch(() => { if (engines.get(key) === loading) engines.delete(key); });
    }
    const shared = await promise;
    // Disposed while this call awaited (its last holder ended it): load anew.
    if (shared.engine.disposed) continue;
    shared.holders++;
    // Each init() its own runtime: its own generator (manualSeed) and its
    // own lifetime; the engine (the module, its memory and threads) is
    // disposed with the last of them.
    return new Runtime(shared.engine, kind, () => {
      if (--shared.holders > 0) return;
      shared.engine.dispose();
      if (engines.get(key) === promise) engines.delete(key);
    });
  }
}
