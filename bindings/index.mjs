// causal-attention: the package entry. init() loads the wasm engine once
// per resolved options and resolves to a Runtime (engine/runtime.mjs); the
// API is described in index.d.ts.

import { Engine } from './engine/engine.mjs';
import {
  DEFAULT_TIMEOUT_MS, MAX_THREADS, hardwareThreads, loadModule, threadsAvailability,
} from './engine/loader.mjs';
import { Runtime } from './engine/runtime.mjs';
import { checkBoolean, checkInteger, checkOneOf, checkOptionNames, describe } from './engine/validate.mjs';
import { initRemote } from './remote/remote.mjs';

/** @type {Map<string, Promise<Runtime>>} loads by resolved options, shared */
const runtimes = new Map();

/**
 * @param {import('./index.js').InitOptions} [options]
 * @returns {Promise<Runtime | import('./index.js').RemoteRuntime>}
 */
export function init(options = {}) {
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
    if (worker) return initRemote({ build, threads, timeout, gemmKernel });
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
  let promise = runtimes.get(key);
  if (!promise) {
    const forget = () => runtimes.delete(key);
    promise = loadModule(kind, n, { timeout }).then((mod) =>
      new Runtime(new Engine(mod, { relaxedGemm: gemmKernel !== 'simd128' }), kind, forget));
    runtimes.set(key, promise);
    promise.catch(forget);
  }
  return promise;
}
