#!/usr/bin/env node
// The threads build's thread count in each browser engine of
// tests/browser/engines.mjs (Chromium, Firefox ESR, WebKitGTK): one causal
// attention call on (1,8,1024,64) and one on (1,12,256,64), with 1, 2 and 4
// threads, timed interleaved in the page after warm-up, medians; with what
// the engine reports as navigator.hardwareConcurrency and what init()
// picks. Built dist/ needed (node scripts/build.mjs --wasm).
//   BROWSER_ENGINES=webkitgtk node bench/studies/browser-threads.mjs [runs=15]
import { startServer } from '../../scripts/serve.mjs';
import { withEachEngine } from '../../tests/browser/engines.mjs';

const runs = Number(process.argv[2] ?? 15);
const SHAPES = [[1, 8, 1024, 64], [1, 12, 256, 64]];
const COUNTS = [1, 2, 4];

/** In the page: medians (ms) per shape and thread count, interleaved. */
async function measure({ shapes, counts, runs }) {
  const { init } = await import('/dist/browser.mjs');
  const auto = await init();
  const picked = { build: auto.build, threads: auto.threads };
  await auto.dispose?.();
  const runtimes = [];
  for (const n of counts) runtimes.push(await init(n === 1 ? { build: 'single' } : { build: 'threads', threads: n }));
  const out = [];
  for (const [batch, heads, length, headDim] of shapes) {
    const size = batch * heads * length * headDim;
    const x = Float32Array.from({ length: size }, (_, i) => Math.sin(i * 0.01));
    const shape = { batch, heads, queryLength: length, keyLength: length, headDim, causal: true };
    const times = runtimes.map(() => []);
    for (let r = -3; r < runs; r++) { // three warm-up rounds
      for (const [k, ca] of runtimes.entries()) {
        const t0 = performance.now();
        ca.attention(x, x, x, shape);
        if (r >= 0) times[k].push(performance.now() - t0);
      }
    }
    const median = (a) => a.sort((p, q) => p - q)[a.length >> 1];
    out.push({ shape: `(${batch},${heads},${length},${headDim})`, ms: times.map(median) });
  }
  for (const ca of runtimes) await ca.dispose?.();
  return { hardwareConcurrency: navigator.hardwareConcurrency, picked, out };
}

const server = await startServer();
try {
  await withEachEngine(async (running) => {
    const page = await running.open(server.url);
    const got = await page.evaluate(measure, { shapes: SHAPES, counts: COUNTS, runs });
    await page.close();
    console.log(`${running.version}: navigator.hardwareConcurrency ${got.hardwareConcurrency}; ` +
      `init() picks the ${got.picked.build} build, ${got.picked.threads} thread(s)`);
    for (const { shape, ms } of got.out) {
      console.log(`  ${shape.padEnd(16)} ${COUNTS.map((n, k) => `${n}T ${ms[k].toFixed(1)} ms`).join('  ')}`);
    }
  });
} finally {
  await server.close();
}
