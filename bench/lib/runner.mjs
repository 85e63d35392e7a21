// Main-thread side of bench/lib/host.mjs: a worker per case, driven by
// messages, and the interleaved timing of several open cases.
import { Worker } from 'node:worker_threads';
import { startOtherLoad } from './load.mjs';
import { planRuns, summarize } from './timing.mjs';

const HOST = new URL('./host.mjs', import.meta.url);

/**
 * Opens a case in a fresh worker (create, prepare, check, warm-up). Resolves
 * to the host's reply; when it is 'ready' the reply has `run(count)` and
 * `close()`; otherwise the worker is already gone.
 */
export async function openCase(options, { timeoutMs = 600_000 } = {}) {
  const worker = new Worker(HOST);
  let pending = null;
  const fail = (reason) => {
    if (pending) pending.resolve({ status: 'error', reason });
    pending = null;
  };
  worker.on('message', (m) => {
    const p = pending;
    pending = null;
    p?.resolve(m);
  });
  worker.on('error', (e) => fail(String(e?.message ?? e).split('\n')[0]));
  worker.on('exit', (code) => fail(`worker exited with code ${code}`));
  const call = (msg, ms) => new Promise((resolve) => {
    const timer = setTimeout(() => fail(`no reply to ${msg.op} within ${Math.round(ms / 1000)} s`), ms);
    pending = { resolve: (m) => { clearTimeout(timer); resolve(m); } };
    worker.postMessage(msg);
  });
  const { peer, ...rest } = options;
  const reply = await call({ op: 'open', peer: peer.href ?? peer, ...rest }, timeoutMs);
  if (reply.status !== 'ready') {
    await worker.terminate();
    return reply;
  }
  const runTimeout = Math.max(60_000, reply.estimateMs * 20);
  return {
    ...reply,
    async run(count) {
      const r = await call({ op: 'run', count }, runTimeout * count);
      if (r.status === 'error') throw new Error(r.reason);
      return r.samples;
    },
    async close() {
      const r = await call({ op: 'close' }, 60_000);
      await worker.terminate();
      return r;
    },
    terminate: () => worker.terminate(),
  };
}

/**
 * Times open cases interleaved: round after round, one run of each (order
 * reversed every other round), so that all of them see the same machine
 * load. Resolves to one { medianMs, minMs, runs } per case, in order, and the
 * other processes' CPU use meanwhile.
 */
export async function interleave(cases, policy) {
  const roundMs = cases.reduce((s, c) => s + c.estimateMs, 0);
  const slowest = Math.max(...cases.map((c) => c.estimateMs));
  const runs = planRuns(roundMs, slowest, policy);
  const samples = cases.map(() => []);
  const load = startOtherLoad();
  for (let r = 0; r < runs; ++r) {
    const order = cases.map((_, i) => i);
    if (r % 2) order.reverse();
    for (const i of order) samples[i].push(...(await cases[i].run(1)));
  }
  const otherLoad = load();
  return { stats: samples.map(summarize), otherLoad };
}
