// The package's entry in browsers and web workers (the `browser` and
// `default` export conditions): index.mjs's API, with worker mode's worker
// named by the literal `new Worker(new URL('./worker.mjs', import.meta.url))`
// bundlers follow. That literal is here, in a module the worker never
// imports (see platform-web.mjs's webApiWorker). No top-level side effect
// (`sideEffects: false`): init() selects the platform.
//
// In Node this entry is only reached by a test runner's DOM environment
// (Jest or Vitest with jsdom or happy-dom, which pick the `browser`
// condition): there is no fetch of the package's files nor a web Worker to
// start, so init() hands over to node.mjs next to this file.
import { init as initWithPlatform } from './index.mjs';
import { usePlatform } from './engine/loader.mjs';
import { webApiWorker, webPlatform } from './platform-web.mjs';

/** @import { InitOptions } from './index.d.ts' */
/** @import { Platform } from './engine/platform.d.ts' */

export * from './index.mjs';

/** @type {Platform} */
const pagePlatform = {
  ...webPlatform,
  apiWorker: () => webApiWorker(() =>
    new Worker(new URL('./worker.mjs', import.meta.url), { type: 'module', name: 'causal-attention' })),
};

/** Node (a DOM environment of a test runner), not a browser. */
const inNode = () => typeof globalThis.process?.versions?.node === 'string' &&
  !/\b(?:Chrome|Firefox|Safari)\//.test(globalThis.navigator?.userAgent ?? '');

/**
 * node.mjs, out of bundlers' sight (its `node:` imports must not reach a
 * browser bundle); only ever loaded unbundled, in Node.
 * @returns {Promise<typeof import('./node.mjs')>}
 */
function nodeEntry() {
  const url = import.meta.url.replace(/\/[^/]*$/, '/node.mjs');
  return import(/* webpackIgnore: true */ /* turbopackIgnore: true */ /* @vite-ignore */ url);
}

/**
 * index.mjs's init (see index.d.ts), through platform-web.mjs (in Node,
 * through node.mjs).
 * @param {InitOptions} [options]
 * @returns {ReturnType<typeof initWithPlatform>}
 */
export function init(options) {
  if (inNode()) {
    return nodeEntry().then((node) => node.init(options), (error) => {
      throw new Error('causal-attention: this is the browser entry (dist/browser.mjs), running in Node; ' +
        `its Node entry (dist/node.mjs) did not load (${error.message}). Import 'causal-attention' by ` +
        'name in Node (its "node" export condition loads dist/node.mjs)', { cause: error });
    });
  }
  usePlatform(pagePlatform);
  return initWithPlatform(options);
}
