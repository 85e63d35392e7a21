// The package's entry in Node (the `node` export condition): the same API as
// index.mjs, loading the .wasm with fs and starting worker_threads workers.
// No top-level side effect (the package says `sideEffects: false`, so a
// bundler may skip evaluating this module): init() selects the platform.
import { init as initWithPlatform } from './index.mjs';
import { usePlatform } from './engine/loader.mjs';
import { nodePlatform } from './platform-node.mjs';

/** @import { InitOptions } from './index.d.ts' */

export * from './index.mjs';

/**
 * index.mjs's init (see index.d.ts), through platform-node.mjs.
 * @param {InitOptions} [options]
 * @returns {ReturnType<typeof initWithPlatform>}
 */
export function init(options) {
  usePlatform(nodePlatform);
  return initWithPlatform(options);
}
