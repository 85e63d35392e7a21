// The package's entry in Node (the `node` export condition): the same API as
// index.mjs, loading the .wasm with fs and starting worker_threads workers.
import { usePlatform } from './loader.mjs';
import { nodePlatform } from './platform-node.mjs';

usePlatform(nodePlatform);

export * from './index.mjs';
