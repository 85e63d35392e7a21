// The Learn section's ablation toggles and in-context-learning panel in
// headless Chromium: on the default induction run after 400 steps, knocking
// out the best induction head raises the probe's loss, restoring it gives
// the same loss bit for bit; knocking out layer 1's previous-token head
// breaks the circuit; the ICL score falls below zero as the heads form;
// the tables, the keyboard and a 360 px screen. Numbers printed; screenshots
// in tests/browser/screenshots/ (learn-icl.png; learn-ablated.png, layer 1's
// previous-token head knocked out).
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { SCREENSHOTS, openDemo, useEngineAndServer, assertFitsScreen } from './browser.mjs';
import { describeEngines, lacking } from './engines.mjs';

describeEngines('the Learn section: ablation and in-context learning', (engine) => {
  const env = useEngineAndServer(engine);

  async function openLearn(options) {
    const opened = await openDemo(env.browser, env.server.url, options);
    await opened.page.waitForSelector('#learn[data-ready="true"]', { timeout: 30000 });
    return opened;
  }

  /** #train-status's hooks, and the ICL panel's latest score. */
  const read = (page) => page.evaluate(() => {
    const d = document.getElementById('train-status').dataset;
    return {
      step: Number(d.step), probeStep: d.probeStep, probeLoss: d.probeLoss, accuracy: Number(d.probeAccuracy),
      ablated: d.ablated,
      layer: Number(d.bestInductionLayer), head: Number(d.bestInductionHead), best: Number(d.bestInductionScore),
      icl: Number(document.getElementById('icl-panel').dataset.icl), text: document.getElementById('train-status').textContent,
    };
  });

  /** Clicks a toggle and waits for the probe that reflects the ablations `after` ("L.H …"). */
  async function toggle(page, head, after) {
    await page.click(`button[data-ablate="${head}"]`);
    await page.waitForFunction((a) => document.getElementById('train-status').dataset.ablated === a, after)
      .catch(async (e) => {
        throw new Error(`${e.message}; ${head} aria-pressed ${await page.getAttribute(`button[data-ablate="${head}"]`, 'aria-pressed')}, ` +
          `status ${JSON.stringify(await read(page))}`);
      });
    return read(page);
  }

  describe('the Learn section: ablation and in-context learning', () => {
    it('knocking out the best induction head raises the probe loss; restoring it gives the same bits; ' +
      'the previous-token head feeds it (numbers printed)', async () => {
      const { page, problems } = await openLearn();
      // The first probe comes from the worker after the section is ready.
      await page.waitForFunction(() => document.getElementById('train-status').dataset.probeLoss);
      const untrained = await read(page);
      assert.equal(untrained.ablated, '');
      assert.ok(Math.abs(Number(untrained.probeLoss) - Math.log(32)) < 1, `untrained probe loss ${untrained.probeLoss}`);
      assert.equal(await page.locator('button[data-ablate]').count(), 8);
      await page.click('#train-start');
      // 400 steps: from about 380 on the best head's loss is not made up by the
      // other layer-2 heads (tests/web/learn-ablation.test.mjs).
      await page.waitForFunction(() => Number(document.getElementById('train-status').dataset.step) >= 400,
        null, { timeout: 60000 });
      await page.click('#train-start');
      await page.waitForFunction(() => {
        const d = document.getElementById('train-status').dataset;
        return d.running === 'false' && d.probeStep === d.step;
      });
      const full = await read(page);
      const best = `${full.layer}.${full.head}`;
      assert.equal(full.layer, 2, 'the best induction head is in layer 2');
      assert.ok(full.icl < -1, `the trained model learns in context: ICL ${full.icl}`);
      assert.match(full.text, /probe loss \d\.\d{3} on the repeat, \d+% of its tokens predicted \(every head\)/);

      const ablated = await toggle(page, best, best);
      assert.equal(await page.getAttribute(`button[data-ablate="${best}"]`, 'aria-pressed'), 'true');
      assert.match(ablated.text, /\(1 head knocked out\)/);
      assert.ok(Number(ablated.probeLoss) > Number(full.probeLoss),
        `probe loss ${full.probeLoss} → ${ablated.probeLoss} without head ${best}`);
      const restored = await toggle(page, best, '');
      assert.equal(await page.getAttribute(`button[data-ablate="${best}"]`, 'aria-pressed'), 'false');
      assert.equal(restored.probeLoss, full.probeLoss, 'un-ablating restores the probe loss bit for bit');

      // The circuit: layer 1's strongest previous-token head (its caption's score).
      const previous = await page.$$eval('#learn-head-grid .learn-layer:first-child .learn-head',
        (figs) => figs.map((f) => Number(f.querySelector('.score-value').textContent)));
      const prev = `1.${previous.indexOf(Math.max(...previous)) + 1}`;
      const noPrevious = await toggle(page, prev, prev);
      // The picture: every head with that one knocked out (dimmed): layer 2's stripes fade.
      await page.setViewportSize({ width: 1280, height: 1400 });
      await page.evaluate(() => document.getElementById('learn-heads-title').scrollIntoView());
      await page.waitForFunction(() => new Promise((done) => requestAnimationFrame(() => done(true))));
      const top = await page.locator('#learn-inspector').boundingBox();
      const grid = await page.locator('#learn-head-grid').boundingBox();
      await page.screenshot({
        path: join(SCREENSHOTS, 'learn-ablated.png'),
        clip: { x: grid.x, y: top.y, width: grid.width, height: grid.y + grid.height - top.y },
      });
      await page.setViewportSize({ width: 1280, height: 900 });
      await toggle(page, prev, '');
      const layer2 = ['2.1', '2.2', '2.3', '2.4'];
      for (const [k, h] of layer2.entries()) await toggle(page, h, layer2.slice(0, k + 1).join(' '));
      const noLayer2 = await read(page);
      for (const [k, h] of layer2.entries()) await toggle(page, h, layer2.slice(k + 1).join(' '));
      assert.equal((await read(page)).probeLoss, full.probeLoss);
      const said = (r) => `${Number(r.probeLoss).toFixed(3)}, ${(100 * r.accuracy).toFixed(0)}%`;
      console.log(`  after ${full.step} steps in ${engine.name}: probe loss, accuracy ${said(full)} ` +
        `(ICL score ${full.icl.toFixed(3)}); without the best induction head ${best} ` +
        `${said(ablated)} (ICL ${ablated.icl.toFixed(3)}); without layer 1's previous-token ` +
        `head ${prev} (score ${Math.max(...previous)}) ${said(noPrevious)} (best induction ` +
        `score ${full.best.toFixed(3)} → ${noPrevious.best.toFixed(3)}); without all of layer 2 ` +
        `${said(noLayer2)}; restored ${restored.probeLoss === full.probeLoss ? 'bit for bit' : 'NOT equal'}`);
      assert.ok(Number(noPrevious.probeLoss) > Number(ablated.probeLoss), 'the previous-token head matters more');
      assert.ok(noPrevious.best < full.best, 'without its previous-token head the induction stripe fades');
      assert.ok(noPrevious.accuracy < full.accuracy, `accuracy ${full.accuracy} → ${noPrevious.accuracy}`);
      assert.ok(Number(noLayer2.probeLoss) > Number(ablated.probeLoss));

      // The ICL panel (its picture with the tables closed): the tables hold
      // the latest probe's losses and the curve.
      // (Its charts are drawn while it is on screen.)
      await page.locator('#icl-panel').scrollIntoViewIfNeeded();
      await page.waitForFunction(() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(() => done(true)))));
      await page.locator('#icl-panel').screenshot({ path: join(SCREENSHOTS, 'learn-icl.png') });
      await page.click('#icl-numbers summary');
      await page.waitForFunction(() => document.querySelectorAll('#icl-token-table td').length > 0);
      const tokens = await page.$$eval('#icl-token-table td', (tds) => tds.map((td) => Number(td.dataset.value)));
      assert.equal(tokens.length, 63);
      const P = 32;
      const repeat = tokens.slice(P);
      const mean = repeat.reduce((s, x) => s + x, 0) / repeat.length;
      assert.ok(Math.abs(mean - Number(full.probeLoss)) < 1e-5 * (1 + mean), `${mean} vs ${full.probeLoss}`);
      const curve = await page.$$eval('#icl-score-table td', (tds) => tds.map((td) => Number(td.dataset.value)));
      assert.ok(curve.length >= 10, `ICL rows ${curve.length}`);
      assert.ok(curve[0] > -1 && curve[curve.length - 1] < -1, `ICL ${curve[0]} → ${curve[curve.length - 1]}`);
      assert.deepEqual(problems, []);
      await page.close();
    });

    it('the toggles work by keyboard and fit a 360 px screen with the ICL panel', { skip: lacking(engine, 'narrow') }, async () => {
      const { page, problems } = await openLearn({ viewport: { width: 360, height: 740 } });
      await assertFitsScreen(page, ['#icl-token-chart canvas', '#icl-score-chart canvas', 'button[data-ablate="2.4"]']);
      await page.focus('button[data-ablate="1.2"]');
      await page.keyboard.press('Space');
      await page.waitForFunction(() => document.getElementById('train-status').dataset.ablated === '1.2');
      assert.equal(await page.getAttribute('button[data-ablate="1.2"]', 'aria-pressed'), 'true');
      await page.keyboard.press('Enter');
      await page.waitForFunction(() => document.getElementById('train-status').dataset.ablated === '');
      // A new run starts with every head.
      await page.click('button[data-ablate="1.1"]');
      await page.waitForFunction(() => document.getElementById('train-status').dataset.ablated === '1.1');
      await page.click('#train-reset');
      await page.waitForFunction(() => document.getElementById('train-status').dataset.ablated === '' &&
        document.querySelector('button[data-ablate="1.1"]').getAttribute('aria-pressed') === 'false');
      assert.deepEqual(problems, []);
      await page.close();
    });
  });
});
