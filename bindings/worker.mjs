// The dedicated worker of init({ worker: true }) in browsers (a module
// worker): the engine runs here, the page talks to it through remote.mjs.
import { serve } from './remote/remote-host.mjs';

serve({
  post: (message, transfer) => self.postMessage(message, transfer),
  onMessage: (handler) => self.addEventListener('message', (event) => handler(event.data)),
});
