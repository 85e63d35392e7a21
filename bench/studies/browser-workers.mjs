#!/usr/bin/env node
// Why a browser's threads build scales as it does, without the package: in
// each engine of tests/browser/engines.mjs, (a) the SIMD128 mul+add kernel of
// bench/lib/simd-limit.mjs in 1 and then 2 module workers at once (the
// throughput two threads of plain wasm get: the engine's and the machine's
// ceiling for 2 threads), and (b) the round trip of an Atomics.wait /
// Atomics.notify ping-pong between two workers (what waking a pthread costs;
// the package's pool wakes its threads once per parallel loop).
//   node bench/studies/browser-workers.mjs        (BROWSER_ENGINES narrows)
import { startBenchServer } from '../browser/server.mjs';
import { withEachEngine } from '../../tests/browser/engines.mjs';

/** In the page: { single, pair (GFLOP/s each), roundTripUs }. */
async function measure() {
  const kernelUrl = new URL('/bench/lib/simd-limit.mjs', location.href).href;
  const source = `import { measureSimdKernel } from ${JSON.stringify(kernelUrl)};
    onmessage = ({ data }) => {
      const flag = new Int32Array(data.sab);
      if (data.op === 'kernel') {
        measureSimdKernel(12, { callMs: 10, repeats: 3 }); // compile, tier up
        Atomics.add(flag, 0, 1);
        while (Atomics.load(flag, 0) < data.workers) { /* all ready */ }
        postMessage(measureSimdKernel(12, { callMs: 40, repeats: 9 }));
      } else { // ping-pong: side 0 waits for 0 and writes 1; side 1 the other way
        const n = data.n;
        const t0 = performance.now();
        for (let i = 0; i < n; i++) {
          while (Atomics.load(flag, 0) !== data.side) Atomics.wait(flag, 0, 1 - data.side);
          Atomics.store(flag, 0, 1 - data.side);
          Atomics.notify(flag, 0);
        }
        postMessage(((performance.now() - t0) * 1000) / n);
      }
    };`;
  const url = URL.createObjectURL(new Blob([source], { type: 'text/javascript' }));
  const run = (messages) => Promise.all(messages.map((m) => new Promise((resolve, reject) => {
    const w = new Worker(url, { type: 'module' });
    w.onmessage = ({ data }) => { w.terminate(); resolve(data); };
    w.onerror = (e) => reject(new Error(e.message ?? 'worker error'));
    w.postMessage(m);
  })));
  const kernel = (workers) => {
    const sab = new SharedArrayBuffer(4);
    return run(Array.from({ length: workers }, () => ({ op: 'kernel', sab, workers })));
  };
  const single = [];
  const pair = [];
  for (let r = 0; r < 3; r++) { // interleaved
    single.push(...await kernel(1));
    pair.push((await kernel(2)).reduce((a, b) => a + b, 0));
  }
  const sab = new SharedArrayBuffer(4);
  const [a] = await run([0, 1].map((side) => ({ op: 'pingpong', sab, side, n: 20000 })));
  const median = (x) => x.sort((p, q) => p - q)[x.length >> 1];
  return { single: median(single), pair: median(pair), roundTripUs: a };
}

const server = await startBenchServer();
try {
  await withEachEngine(async (running) => {
    const page = await running.newPage();
    await page.goto(`${server.url}bench/browser/index.html`);
    const r = await page.evaluate(measure);
    await page.close();
    console.log(`${running.version}: SIMD128 kernel 1 worker ${r.single.toFixed(1)} GFLOP/s, 2 workers ` +
      `${r.pair.toFixed(1)} (${(r.pair / r.single).toFixed(2)}×); Atomics.wait/notify round trip ${r.roundTripUs.toFixed(1)} µs`);
  });
} finally {
  await server.close();
}
