// The worker of worker-soak.test.mjs: bindings/worker-node.mjs (the engine
// behind remote-host.mjs's serve()) plus one message of its own, 'heap',
// answered with this isolate's heap after garbage collection, so that the
// soak can see both sides' memory.
import { parentPort } from 'node:worker_threads';
import { getHeapStatistics } from 'node:v8';
import { usePlatform } from '../../dist/engine/loader.mjs';
import { init } from '../../dist/index.mjs';
import { nodePlatform } from '../../dist/platform-node.mjs';
import { serve } from '../../dist/remote/remote-host.mjs';

usePlatform(nodePlatform);
const handlers = [];
parentPort.on('message', (message) => {
  if (message?.op === 'heap') {
    globalThis.gc?.();
    globalThis.gc?.();
    const { used_heap_size: used, external_memory: external } = getHeapStatistics();
    parentPort.postMessage({ op: 'heap', bytes: used + external, gc: typeof globalThis.gc === 'function' });
    return;
  }
  for (const handler of handlers) handler(message);
});
serve({
  post: (message, transfer) => parentPort.postMessage(message, transfer),
  onMessage: (handler) => handlers.push(handler),
}, init);
