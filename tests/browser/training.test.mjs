// Training in the browser: the tiny model of tests/node/tiny-model.mjs
// trained for 200 AdamW steps in headless Chromium (single-threaded and
// threaded builds, the page cross-origin isolated). Both builds give the same
// losses, bit for bit. Against Node: the same bits where Chromium runs the
// SIMD128 GEMM kernel, as Node 20 does; where it runs the relaxed-SIMD one
// (f32x4.relaxed_madd, fused on x64: issue 14's kernel, picked by feature
// detection) the projections round differently, so the 200 losses are
// compared as a curve instead (it must fall as Node's does), and the first
// step that differs is printed.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { init } from 'causal-attention';
import { trainTinyModel } from '../node/tiny-model.mjs';
import { launch, openPage, startServer } from './browser.mjs';

let browser;
let server;
before(async () => {
  browser = await launch();
  server = await startServer();
});
after(async () => {
  await browser?.close();
  await server?.close();
});

const windows = (losses) => [0, 50, 100, 150].map((a) => losses.slice(a, a + 50).reduce((s, x) => s + x, 0) / 50);

describe('training in the browser', () => {
  it('the tiny model in Chromium: single and threads the same bits; Node\'s bits with the same GEMM kernel', async () => {
    const node = await trainTinyModel(await init({ build: 'single' }));
    const { page, problems } = await openPage(browser, server.url);
    // The function's own source, evaluated in the page (it imports nothing).
    const inBrowser = await page.evaluate(`(async () => {
      const { init } = await import('/dist/index.mjs');
      const { loadModule } = await import('/dist/loader.mjs');
      const train = ${trainTinyModel.toString()};
      const out = { gemmKernel: (await loadModule('single', 1)).gemmKernel ?? 'simd128' };
      for (const build of ['single', 'threads']) {
        const ca = await init({ build, threads: build === 'single' ? 1 : 2 });
        out[build] = { losses: await train(ca), threads: ca.threads };
      }
      return out;
    })()`);
    assert.equal(inBrowser.threads.threads, 2);
    const chromium = inBrowser.single.losses;
    assert.equal(chromium.length, 200);
    assert.deepEqual(inBrowser.threads.losses, chromium, 'threads build');
    const w = windows(chromium);
    for (let i = 1; i < 4; i++) assert.ok(w[i] < w[i - 1], `window ${i}: ${w}`);
    assert.ok(w[3] < w[0] / 10);
    const firstDifference = chromium.findIndex((x, i) => x !== node[i]);
    console.log(`  Chromium (GEMM kernel ${inBrowser.gemmKernel}): loss ${chromium[0].toFixed(4)} → ` +
      `${chromium[199].toFixed(4)}; Node ${node[0].toFixed(4)} → ${node[199].toFixed(4)}; ` +
      `first step that differs from Node: ${firstDifference < 0 ? 'none' : firstDifference}`);
    if (inBrowser.gemmKernel === 'simd128') assert.deepEqual(chromium, node, 'the same kernels as Node');
    assert.deepEqual(problems, []);
    await page.close();
  });
});
