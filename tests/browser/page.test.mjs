// The demo page and the package in a real browser (headless Chromium).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { init } from 'causal-attention';
import { launch, openPage, startServer } from './browser.mjs';

let browser;
let isolated;
let plain;
before(async () => {
  browser = await launch();
  isolated = await startServer();
  plain = await startServer({ isolate: false });
});
after(async () => {
  await browser?.close();
  await isolated?.close();
  await plain?.close();
});

/** Colour of the canvas pixel at the centre of weight cell (i, j). */
function cellColour(page, i, j) {
  return page.evaluate(([row, col]) => {
    const canvas = document.getElementById('weights');
    const n = 6;
    const margin = 80;
    const cell = (canvas.width - margin) / n;
    // Sample near the cell's corner, away from the printed number.
    const x = Math.round(margin + col * cell + 4);
    const y = Math.round(margin + row * cell + 4);
    return Array.from(canvas.getContext('2d').getImageData(x, y, 1, 1).data.slice(0, 3));
  }, [i, j]);
}

describe('demo page', () => {
  it('loads without errors, runs the threaded build when isolated, draws a triangle', async () => {
    const { page, problems } = await openPage(browser, isolated.url);
    await page.waitForSelector('body[data-ready="true"]', { timeout: 20000 });
    assert.deepEqual(problems, []);
    const status = await page.textContent('#status');
    assert.match(status, /Engine: WASM SIMD, threads build, \d+ thread/);
    for (let i = 0; i < 6; i++) {
      for (let j = 0; j < 6; j++) {
        const [r, g, b] = await cellColour(page, i, j);
        const masked = r === 238 && g === 238 && b === 238;
        assert.equal(masked, j > i, `cell (${i}, ${j}) is ${masked ? '' : 'not '}masked`);
      }
    }
    await page.close();
  });

  it('falls back to the single-threaded build without cross-origin isolation', async () => {
    const { page, problems } = await openPage(browser, plain.url);
    await page.waitForSelector('body[data-ready="true"]', { timeout: 20000 });
    assert.deepEqual(problems, []);
    assert.match(await page.textContent('#status'), /Engine: WASM SIMD, single build, 1 thread/);
    await page.close();
  });
});

describe('the package in the browser', () => {
  it('gives the same dropout result as Node for the same seed, single and threaded', async () => {
    const shape = {
      batch: 1, heads: 2, queryLength: 33, headDim: 5, training: true, dropout: 0.4, seed: 4242,
      returnWeights: true,
    };
    const n = 2 * 33 * 5;
    const q = Array.from({ length: n }, (_, i) => Math.sin(i * 0.37));
    const k = Array.from({ length: n }, (_, i) => Math.cos(i * 0.11));
    const v = Array.from({ length: n }, (_, i) => ((i * 7) % 13) / 13);
    const ca = await init({ build: 'single' });
    const node = ca.attention(new Float32Array(q), new Float32Array(k), new Float32Array(v), shape);

    const { page } = await openPage(browser, isolated.url);
    const inBrowser = await page.evaluate(async ([shapeArg, qa, ka, va]) => {
      const { init: load } = await import('/dist/index.mjs');
      const out = {};
      for (const build of ['single', 'threads']) {
        const rt = await load({ build, threads: build === 'single' ? 1 : 2 });
        const r = rt.attention(new Float32Array(qa), new Float32Array(ka), new Float32Array(va), shapeArg);
        out[build] = { output: Array.from(r.output), weights: Array.from(r.weights), threads: rt.threads };
      }
      return out;
    }, [shape, q, k, v]);
    for (const build of ['single', 'threads']) {
      assert.deepEqual(inBrowser[build].output, Array.from(node.output), `${build} output`);
      assert.deepEqual(inBrowser[build].weights, Array.from(node.weights), `${build} weights`);
    }
    assert.equal(inBrowser.threads.threads, 2);
    await page.close();
  });
});
