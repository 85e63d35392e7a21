// Training in the browser: the tiny model of tests/node/tiny-model.mjs
// trained for 200 AdamW steps in headless Chromium (single-threaded and
// threaded builds, the page cross-origin isolated) lands on the same losses,
// bit for bit, as in Node.
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

describe('training in the browser', () => {
  it('the tiny model gives the same 200 losses in Chromium (single and threads) as in Node', async () => {
    const node = await trainTinyModel(await init({ build: 'single' }));
    const { page, problems } = await openPage(browser, server.url);
    // The function's own source, evaluated in the page (it imports nothing).
    const inBrowser = await page.evaluate(`(async () => {
      const { init } = await import('/dist/index.mjs');
      const train = ${trainTinyModel.toString()};
      const out = {};
      for (const build of ['single', 'threads']) {
        const ca = await init({ build, threads: build === 'single' ? 1 : 2 });
        out[build] = { losses: await train(ca), threads: ca.threads };
      }
      return out;
    })()`);
    assert.equal(inBrowser.threads.threads, 2);
    for (const build of ['single', 'threads']) {
      assert.equal(inBrowser[build].losses.length, 200);
      assert.deepEqual(inBrowser[build].losses, node, `${build} build`);
    }
    console.log(`  Chromium: loss ${node[0].toFixed(4)} → ${node[199].toFixed(4)}, identical to Node's`);
    assert.deepEqual(problems, []);
    await page.close();
  });
});
