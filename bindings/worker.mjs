// The dedicated worker of init({ worker: true }) in browsers (a module
// worker): the engine runs here, the page talks to it through remote.mjs.
import { init } from './index.mjs';
import { borrowFromPage } from './platform-web.mjs';
import { serve } from './remote/remote-host.mjs';

/**
 * This module worker's global scope (the type check's DOM lib has no
 * DedicatedWorkerGlobalScope).
 * @type {{
 *   postMessage(message: unknown, transfer: Transferable[]): void,
 *   addEventListener(type: 'message', listener: (event: MessageEvent) => void): void,
 * }}
 */
const scope = /** @type {any} */ (self);
// Its pthread workers are the page's (platform-web.mjs says why).
const lending = borrowFromPage(scope);

serve({
  post: (message, transfer) => scope.postMessage(message, transfer ?? []),
  onMessage: (handler) => scope.addEventListener('message', (event) => {
    if (!lending(event.data)) handler(event.data);
  }),
}, init);
