// Node: a pthread of the threaded build. emcc's worker
// (wasm/causal_attention_threads.worker.mjs, a module written for web
// workers) runs in this worker_threads thread with the worker globals it
// uses. They are set on this thread's own global object, never the host's.
import { parentPort } from 'node:worker_threads';

Object.assign(globalThis, {
  self: globalThis,
  location: { href: import.meta.url },
  postMessage: (message, transfer) => parentPort.postMessage(message, transfer),
  // emcc tells a worker from a main thread by `typeof importScripts == 'function'`.
  importScripts() {
    throw new Error('importScripts is not available in causal-attention\'s pthread workers');
  },
});
await import('./wasm/causal_attention_threads.worker.mjs');
parentPort.on('message', (data) => globalThis.onmessage({ data }));
