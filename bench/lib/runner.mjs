// Main-thread side of bench/lib/host.mjs: one worker per case.
import { Worker } from 'node:worker_threads';

const HOST = new URL('./host.mjs', import.meta.url);

/**
 * Runs one case in a fresh worker and resolves to the host's result.
 * `reference` (an ArrayBuffer of ours' output) is copied to the worker.
 */
export function runCase({ peer, config, shape, variant, seed, policy, reference, returnOutput, timeoutMs = 300_000 }) {
  return new Promise((resolve) => {
    const worker = new Worker(HOST, {
      workerData: { peer: peer.href ?? peer, config, shape, variant, seed, policy, reference, returnOutput },
    });
    let settled = false;
    const finish = (r) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      // A finished case's threads (pthread workers of the library) go with it.
      worker.terminate().finally(() => resolve(r));
    };
    const timer = setTimeout(() => finish({ status: 'error', reason: `no result within ${timeoutMs / 1000} s` }), timeoutMs);
    worker.once('message', finish);
    worker.once('error', (e) => finish({ status: 'error', reason: String(e?.message ?? e).split('\n')[0] }));
    worker.once('exit', (code) => finish({ status: 'error', reason: `worker exited with code ${code}` }));
  });
}
