// The demo page never hangs silently: where a part of it cannot load, it
// says what failed, and what does not depend on that part still works.
// - A locale Intl does not know (WebKitGTK reports navigator.language "C"
//   under LANG=C.UTF-8), which uPlot would throw on as its module loads: the
//   page starts, its charts drawn with the default locale, and trains.
// - uPlot missing: the page starts, the charts say why they are missing.
// - A module of the page missing: the page says it could not start.
// - The training worker missing: the Learn section says so.
// The same page in every engine (CSP, workers missing): page-engines.test.mjs.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { it } from 'node:test';
import { SCREENSHOTS, serverWith, useEngineAndServer } from './browser.mjs';
import { describeEngines, lacking } from './engines.mjs';

describeEngines('a page that never hangs silently', (engine) => {
  const env = useEngineAndServer(engine);

  /**
   * A new page on the demo: `setup(page)` before it loads (Chromium's init
   * scripts), or `missing`: a server whose paths ending in it answer 404.
   */
  async function openWith({ setup, missing }) {
    const server = missing ? await serverWith({ missing: [missing] }) : null;
    const page = await env.browser.newPage({ viewport: { width: 1280, height: 900 } });
    await setup?.(page);
    const problems = [];
    page.on('pageerror', (e) => problems.push(e.message));
    await page.goto((server ?? env.server).url);
    const close = page.close.bind(page);
    page.close = async () => { await close(); await server?.close(); };
    return { page, problems };
  }

  it('starts under a locale Intl rejects ("C"), its charts drawn with the default locale, and trains', {
    skip: lacking(engine, 'initScript'),
  }, async () => {
    const { page } = await openWith({ setup: (p) => p.addInitScript(() => {
      Object.defineProperty(Navigator.prototype, 'language', { get: () => 'C' });
      Object.defineProperty(Navigator.prototype, 'languages', { get: () => ['C'] });
    }) });
    try {
      // The tag itself, not navigator.language: while uPlot loads the page
      // lends navigator a valid tag (web/widgets/line-chart.mjs), and an
      // evaluate in that window read the lent one.
      assert.equal(await page.evaluate(() => {
        try { new Intl.NumberFormat('C'); return 'accepted'; } catch (e) { return e.name; }
      }), 'RangeError', 'the engine rejects the tag, as WebKitGTK does under LANG=C.UTF-8 (the check can fail)');
      await page.waitForSelector('body[data-ready="true"]', { timeout: 30000 });
      await page.waitForSelector('#learn[data-ready="true"]', { timeout: 30000 });
      await page.waitForSelector('#loss-chart .uplot', { timeout: 30000 });
      assert.equal(await page.evaluate(() => navigator.language), 'C', 'the page sees the browser\'s tag again after uPlot loaded');
      assert.match(await page.textContent('#engine'), /WebAssembly|SIMD|thread/i);
      await page.click('#train-start');
      await page.waitForFunction(() => Number(document.querySelector('#train-status').dataset.step) >= 20, null, { timeout: 60000 });
      await page.click('#train-pause').catch(() => {});
      assert.ok(await page.$$eval('#loss-table td[data-step]', (cells) => cells.length) >= 2, 'the loss table fills');
      await page.screenshot({ path: join(SCREENSHOTS, 'page-locale-c.png'), fullPage: false });
    } finally {
      await page.close();
    }
  });

  it('starts without its charts, saying why, when uPlot is missing', async () => {
    const { page } = await openWith({ missing: '/uplot/dist/uPlot.esm.js' });
    try {
      await page.waitForSelector('#learn[data-ready="true"]', { timeout: 30000 });
      await page.waitForSelector('#loss-chart[data-unavailable="true"]', { timeout: 30000 });
      assert.match(await page.textContent('#loss-chart'), /^This chart cannot be drawn here \(.+\); the numbers below it are the same data\.$/);
      assert.match(await page.textContent('#engine'), /WebAssembly|SIMD|thread/i);
    } finally {
      await page.close();
    }
  });

  it('says it could not start when one of its modules is missing', async () => {
    const { page } = await openWith({ missing: '/widgets/sparkline.mjs' });
    try {
      await page.waitForSelector('html[data-failed="true"]', { timeout: 30000 });
      assert.match(await page.textContent('#engine'), /^The page could not start: .+\. Reload it, or see the browser's console\.$/);
      assert.equal(await page.getAttribute('html', 'data-started'), null);
    } finally {
      await page.close();
    }
  });

  it('says the training worker failed when its file is missing, and the pipeline still works', async () => {
    const { page } = await openWith({ missing: '/learn/model/worker.mjs' });
    try {
      await page.waitForSelector('body[data-ready="true"]', { timeout: 30000 });
      await page.waitForFunction(() => document.querySelector('#learn-error').textContent.length > 0, null, { timeout: 30000 });
      assert.match(await page.textContent('#learn-error'), /^The training worker failed: /);
    } finally {
      await page.close();
    }
  });
});


