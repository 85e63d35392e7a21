// The page the browser bench drives (page.evaluate): window.bench.call(op,
// message) runs a host step on this page's thread, or in a module worker
// when the page was opened with ?mode=worker.
import { handlers } from './host.mjs';

const mode = new URL(globalThis.location.href).searchParams.get('mode') ?? 'page';
let worker = null;
if (mode === 'worker') worker = new Worker(new URL('./worker.mjs', import.meta.url), { type: 'module' });

function inWorker(message) {
  return new Promise((resolve) => {
    worker.onmessage = ({ data }) => resolve(data);
    worker.onerror = (e) => resolve({ status: 'error', reason: e.message ?? 'worker error' });
    worker.postMessage(message);
  });
}

globalThis.bench = {
  mode,
  isolated: globalThis.crossOriginIsolated,
  async call(op, message = {}) {
    if (worker) return inWorker({ op, ...message });
    try {
      return await handlers[op](message);
    } catch (e) {
      return { status: 'error', reason: String(e?.message ?? e).split('\n')[0] };
    }
  },
};
document.body.dataset.ready = 'true';
