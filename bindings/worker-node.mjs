// The worker_threads worker of init({ worker: true }) in Node: the engine
// runs here with the Node platform, the caller talks to it through remote.mjs.
import { parentPort } from 'node:worker_threads';
import { usePlatform } from './engine/loader.mjs';
import { init } from './index.mjs';
import { nodePlatform } from './platform-node.mjs';
import { serve } from './remote/remote-host.mjs';

if (!parentPort) throw new Error('causal-attention: worker-node.mjs runs as a worker_threads worker');
const port = parentPort;
usePlatform(nodePlatform);
serve({
  post: (message, transfer) =>
    port.postMessage(message, /** @type {import('node:worker_threads').Transferable[]} */ (transfer)),
  onMessage: (handler) => port.on('message', handler),
}, init);
