// Node: a pthread of the threaded build. emcc's worker
// (wasm/causal_attention_threads.worker.mjs, a module written for web
// workers) runs in this worker_threads thread with the worker globals it
// uses. They are set on this thread's own global object, never the host's.
import { parentPort } from 'node:worker_threads';

if (!parentPort) throw new Error('causal-attention: pthread-node.mjs runs as a worker_threads worker');
const port = parentPort;

/**
 * Each global on its own, as an own property: Deno's global object has
 * `location` as a getter only (an assignment throws there), and a property
 * that cannot be defined is one the host already provides.
 * @type {Record<string, unknown>}
 */
const globals = {
  self: globalThis,
  location: { href: import.meta.url },
  postMessage: (/** @type {unknown} */ message, /** @type {import('node:worker_threads').Transferable[]} */ transfer) =>
    port.postMessage(message, transfer),
  // emcc tells a worker from a main thread by `typeof importScripts == 'function'`.
  importScripts() {
    throw new Error('importScripts is not available in causal-attention\'s pthread workers');
  },
};
for (const [key, value] of Object.entries(globals)) {
  try {
    Object.defineProperty(globalThis, key, { value, writable: true, configurable: true, enumerable: true });
  } catch {
    // Not configurable here (Deno's `location`): the host's own stays.
  }
}
await import('./wasm/causal_attention_threads.worker.mjs');
/** What emcc's worker set on this thread's global (the DOM lib types it as a page's). */
const worker = /** @type {{ onmessage(event: { data: unknown }): void }} */ (/** @type {unknown} */ (globalThis));
port.on('message', (data) => worker.onmessage({ data }));
