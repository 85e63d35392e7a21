// The worker_threads worker of init({ worker: true }) in Node: the engine
// runs here with the Node platform, the caller talks to it through remote.mjs.
import { parentPort } from 'node:worker_threads';
import { usePlatform } from './engine/loader.mjs';
import { nodePlatform } from './platform-node.mjs';
import { serve } from './remote/remote-host.mjs';

usePlatform(nodePlatform);
serve({
  post: (message, transfer) => parentPort.postMessage(message, transfer),
  onMessage: (handler) => parentPort.on('message', handler),
});
