// The Learn section's lab in headless Chromium: train the default run to 400
// steps, run the lab, and read its hooks — every head's exact patching
// ([data-patch-head] data-restored) beside its attribution estimate
// ([data-attrib-head] data-estimate) and their Spearman agreement, the
// grid's time on #lab-patching, the composition cells ([data-compose]
// [data-from] [data-to] data-score), the logit lens, the circuits' heatmaps.
// Screenshot: tests/browser/screenshots/learn-lab.png.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { SCREENSHOTS, openLearn, useEngineAndServer } from './browser.mjs';
import { describeEngines, lacking } from './engines.mjs';

describeEngines('the Learn lab', (engine) => {
  const env = useEngineAndServer(engine);

  describe('the Learn section\'s lab', () => {
    it('after 400 steps: patching, attribution, composition, lens and circuits, computed in the worker', async () => {
      const { page, problems } = await openLearn(env);
      await page.click('#train-start');
      await page.waitForFunction(() => Number(document.querySelector('#train-status').dataset.step) >= 400, null, { timeout: 90000 });
      await page.click('#train-start');
      await page.waitForFunction(() => document.querySelector('#train-status').dataset.running === 'false');
      await page.click('#lab-run');
      await page.waitForSelector('#lab[data-ready]', { timeout: 30000 });
      const heads = await page.$$eval('#lab [data-patch-head]', (cells) => cells.map((c) => ({
        head: c.dataset.patchHead, restored: Number(c.dataset.restored),
        estimate: Number(document.querySelector(`[data-attrib-head="${c.dataset.patchHead}"]`).dataset.estimate),
      })));
      assert.deepEqual(heads.map((h) => h.head), ['1.1', '1.2', '1.3', '1.4', '2.1', '2.2', '2.3', '2.4']);
      const bestLayer2 = Math.max(...heads.filter((h) => h.head.startsWith('2.')).map((h) => h.restored));
      assert.ok(bestLayer2 > 0.2, `a layer-2 head restores ${bestLayer2}`);
      const spearman = Number(await page.getAttribute('#lab-agreement', 'data-spearman'));
      assert.ok(spearman >= 0.8, `Spearman ${spearman}`);
      const ms = Number(await page.getAttribute('#lab-patching', 'data-ms'));
      assert.ok(ms > 0);
      const k = await page.$$eval('#lab [data-compose="K"][data-from][data-to]', (s) => s.map((x) => Number(x.dataset.score)));
      assert.equal(k.length, 16);
      assert.ok(k.every((x) => x >= 0 && x <= 1));
      assert.equal(await page.$$eval('#lab [data-lens-layer]', (c) => c.length), 3 * 12);
      for (const id of ['#lab-qk-tokens', '#lab-ov-tokens', '#lab-qk-positions', '#lab-grid']) {
        assert.ok(await page.$eval(`${id} canvas.base`, (c) => c.width > 0), id);
      }
      console.log(`  in ${engine.name}: per head restored/estimate ${heads.map((h) => `${h.head} ${h.restored.toFixed(2)}/${h.estimate.toFixed(2)}`).join(', ')}; ` +
        `Spearman ${spearman.toFixed(3)}; the patching grid ${ms.toFixed(0)} ms`);
      await page.$eval('#lab', (el) => el.scrollIntoView());
      await page.screenshot({ path: join(SCREENSHOTS, 'learn-lab.png') });
      // The checkpoint slider drives the lab: step 0, then back to now.
      const slide = (to) => page.$eval('#learn-checkpoint', (el, v) => {
        el.value = v === 'max' ? el.max : String(v);
        el.dispatchEvent(new Event('input', { bubbles: true }));
      }, to);
      await slide(0);
      await page.waitForSelector('#lab[data-step="0"]', { timeout: 30000 });
      assert.match(await page.textContent('#lab-status'), /^Step 0: .*nothing to restore/);
      await slide('max');
      await page.waitForFunction(() => Number(document.getElementById('lab').dataset.step) >= 400, null, { timeout: 30000 });
      await page.$eval('#lab-circuits', (el) => el.scrollIntoView());
      await page.screenshot({ path: join(SCREENSHOTS, 'learn-lab-circuits.png') });
      assert.deepEqual(problems, []);
      await page.close();
    });
  });
});
