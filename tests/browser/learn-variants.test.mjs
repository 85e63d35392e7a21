// Learn II in headless Chromium: the checkpoint slider (at step 0
// it shows the untrained heads, pixel for pixel), the attention variants (a
// window of 8 on the default task keeps the best induction score low while
// a window of 64 reaches it; steps printed), a reload restoring the run (it
// then trains on exactly as a run never interrupted), and the state dict's
// JSON download (loaded in Node by the package's loadStateDict) and upload.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { init } from 'causal-attention';
import { SCREENSHOTS, openLearn as openLearnIn, useEngineAndServer, assertFitsScreen } from './browser.mjs';
import { headScores } from '../../web/learn/model/metrics.mjs';
import { AttentionOnlyTransformer } from '../../web/learn/model/model.mjs';
import { inductionProbe, period } from '../../web/learn/model/tasks.mjs';
import { DEFAULTS } from '../../web/learn/model/trainer.mjs';
import { describeEngines, lacking } from './engines.mjs';

describeEngines('the Learn section: variants, checkpoints, keep and reload', (engine) => {
  const env = useEngineAndServer(engine);

  const openLearn = (options) => openLearnIn(env, options);

  const status = (page) => page.$eval('#train-status', (el) => ({
    step: Number(el.dataset.step), best: Number(el.dataset.bestInductionScore), running: el.dataset.running === 'true',
  }));

  const lossTable = async (page) => new Map(await page.$$eval('#loss-table td[data-step]',
    (cells) => cells.map((td) => [Number(td.dataset.step), Number(td.dataset.value)])));

  /** Every head's triangle as pixels (the base canvases: no hover, no sparklines). */
  const triangles = (page) => page.$$eval('#learn-head-grid canvas.base', (cs) => cs.map((c) => c.toDataURL()));

  /** Waits until the heads are drawn as `expected` (triangles' pixels). */
  const trianglesBecome = (page, expected) => page.waitForFunction((want) => {
    const now = [...document.querySelectorAll('#learn-head-grid canvas.base')].map((c) => c.toDataURL());
    return now.length === want.length && now.every((u, k) => u === want[k]);
  }, expected, { timeout: 15000 });

  /** Start, wait until data-step ≥ `steps` (or `until` holds), pause; returns the status. */
  async function trainTo(page, steps, until = '') {
    await page.click('#train-start');
    await page.waitForFunction(([n, extra]) => {
      const d = document.querySelector('#train-status').dataset;
      return Number(d.step) >= n || (extra !== '' && Number(d.bestInductionScore) > Number(extra));
    }, [steps, until], { timeout: 90000 });
    await page.click('#train-start');
    await page.waitForFunction(() => document.querySelector('#train-status').dataset.running === 'false');
    return status(page);
  }

  /** Moves the pointer over cell (i, j) of a heatmap's base canvas. */
  async function hoverCell(page, canvas, i, j) {
    await canvas.scrollIntoViewIfNeeded();
    const d = await canvas.evaluate((c) => ({ ...c.dataset, k: c.getBoundingClientRect().width / c.width }));
    const box = await canvas.boundingBox();
    await page.mouse.move(box.x + (Number(d.plotX) + ((j + 0.5) * Number(d.plotW)) / Number(d.cols)) * d.k,
      box.y + (Number(d.plotY) + ((i + 0.5) * Number(d.plotH)) / Number(d.rows)) * d.k);
  }

  const waitForStep = (page, step) => page.waitForFunction((n) => document.querySelector('#learn-checkpoint')
    .dataset.step === String(n), step, { timeout: 15000 });

  describe('Learn II: checkpoints, attention variants, keeping and sharing a run', () => {
    it('the checkpoint slider: at step 0 the untrained heads, pixel for pixel; its end follows training', async () => {
      const { page, problems } = await openLearn();
      await page.waitForFunction(() => document.querySelector('#learn-head-grid canvas.base').dataset.rows === '64');
      const untrained = await triangles(page);
      await trainTo(page, 160);
      const slider = page.locator('#learn-checkpoint');
      const kept = Number(await slider.getAttribute('max'));
      assert.ok(kept >= 16, `checkpoints kept after 160 steps: ${kept}`);
      const trained = await triangles(page);
      assert.notDeepEqual(trained, untrained);
      // By keyboard, as the range input is: Home goes to step 0.
      await slider.focus();
      await page.keyboard.press('Home');
      await waitForStep(page, 0);
      await trianglesBecome(page, untrained);
      const text = await page.textContent('#learn-checkpoint-text');
      assert.match(text, /^The heads at step 0: best induction score 0\.\d\d \(layer \d, head \d\), loss on the probe’s repeat \d\.\d{3}\./);
      const rows = await page.$$eval('#checkpoint-table tbody tr', (trs) => trs.map((tr) => tr.textContent));
      assert.equal(rows.length, kept);
      // One step right: step 10; End: the latest heads again.
      await page.keyboard.press('ArrowRight');
      await waitForStep(page, 10);
      await page.keyboard.press('End');
      // The worker probes when it pauses: the right end is the last step.
      await waitForStep(page, (await status(page)).step);
      await trianglesBecome(page, trained);
      // Scrubbed back into the phase change, for the README.
      await page.evaluate(() => {
        const s = document.getElementById('learn-checkpoint');
        s.value = '12';
        s.dispatchEvent(new Event('input', { bubbles: true }));
      });
      await waitForStep(page, 120);
      await page.setViewportSize({ width: 1280, height: 1400 });
      await page.evaluate(() => document.querySelector('.checkpoint-row').scrollIntoView());
      const top = await page.locator('.checkpoint-row').boundingBox();
      const grid = await page.locator('#learn-head-grid').boundingBox();
      await page.screenshot({ path: join(SCREENSHOTS, 'learn-checkpoint.png'),
        clip: { x: grid.x, y: top.y, width: grid.width, height: grid.y + grid.height - top.y } });
      console.log(`  checkpoints: ${kept} kept after ${(await status(page)).step} steps; step 120: ` +
        `${await page.textContent('#learn-checkpoint-text')}`);

      // Open the best induction head in the pipeline: the same weights as its Learn triangle.
      await slider.focus();
      await page.keyboard.press('End');
      await trianglesBecome(page, trained);
      const chosen = await page.inputValue('#learn-pipeline-head');
      const [layer, headNo] = chosen.split('.').map(Number);
      const best = await status(page);
      assert.equal(layer, 2, `the best induction head is in layer 2: ${chosen} (${best.best})`);
      await page.click('#learn-open-pipeline');
      await page.waitForSelector(`body[data-learn-head="${chosen}"]`);
      assert.match(await page.textContent('#route'), new RegExp(`^A trained head from Learn: layer 2, head ${headNo} of 4 ` +
        '\\(MultiHeadAttention, d_model 64, step \\d+\\) on the probe, 64 tokens\\.'));
      assert.equal(await page.textContent('#pipeline-title'), `The pipeline: Learn\u2019s layer 2, head ${headNo}`);
      // The stripe's cell (query T − 3, key T − 3 − P + 1) in both: the pipeline's softmax = the Learn weight.
      const [i, j] = [61, 30];
      const learnCanvas = page.locator('#learn-head-grid .learn-head canvas.base').nth(4 + headNo - 1);
      await hoverCell(page, learnCanvas, i, j);
      const learnSaid = await page.textContent('#learn-inspector');
      await hoverCell(page, page.locator('#panel-weights canvas.base'), i, j);
      const pipelineSaid = await page.textContent('#inspector');
      const learnWeight = learnSaid.match(/weight (\d\.\d{4})/)[1];
      assert.match(pipelineSaid, new RegExp(`softmax ${learnWeight.replace('.', '\\.')};`), `${learnSaid} | ${pipelineSaid}`);
      console.log(`  open in the pipeline: layer 2 head ${headNo}; ${pipelineSaid}`);
      await page.mouse.move(0, 0);
      await page.evaluate(() => document.getElementById('pipeline-title').scrollIntoView());
      const title = await page.locator('#pipeline-title').boundingBox();
      const last = await page.locator('#panel-context').boundingBox();
      await page.screenshot({ path: join(SCREENSHOTS, 'learn-pipeline.png'),
        clip: { x: 0, y: title.y, width: 1280, height: last.y + last.height - title.y + 8 } });
      assert.deepEqual(problems, []);
      await page.close();
    });

    it('its controls fit a 360 px screen', { skip: lacking(engine, 'narrow') }, async () => {
      const { page, problems } = await openLearn({ viewport: { width: 360, height: 740 } });
      await assertFitsScreen(page, ['#learn-attention', '#learn-window', '#learn-pipeline-head', '#learn-open-pipeline',
        '#learn-checkpoint', '#learn-download', '#learn-upload']);
      await page.locator('#learn-keep').screenshot({ path: join(SCREENSHOTS, 'learn-keep-360.png') });
      await page.locator('.open-row').screenshot({ path: join(SCREENSHOTS, 'learn-open-360.png') });
      assert.deepEqual(problems, []);
      await page.close();
    });

    it('a sliding window of 8 never forms an induction head on the default task; a window of 64 does (steps printed)', async () => {
      const { page, problems } = await openLearn();
      assert.equal(await page.isDisabled('#learn-window'), true, 'the window size only for the window variant');
      await page.selectOption('#learn-attention', 'window');
      assert.equal(await page.isEnabled('#learn-window'), true);
      await page.fill('#learn-window', '8');
      const short = await trainTo(page, 300);
      assert.match(await page.textContent('#attention-hint'), /cannot reach the earlier occurrence/);
      await page.fill('#learn-window', '64');
      const long = await trainTo(page, 600, '0.4');
      console.log(`  sliding window in ${engine.name}: window 8 best induction score ${short.best.toFixed(3)} at step ` +
        `${short.step}; window 64 passes 0.4 by step ${long.step} (${long.best.toFixed(3)})`);
      assert.ok(short.best < 0.1, `window 8: best induction score ${short.best}`);
      assert.ok(long.best > 0.4 && long.step <= 600, `window 64: ${JSON.stringify(long)}`);
      await page.locator('#learn-controls').screenshot({ path: join(SCREENSHOTS, 'learn-variants-form.png') });
      assert.deepEqual(problems, []);
      await page.close();
    });

    it('a reload restores the run (settings, weights, AdamW state, step, losses): it trains on as one never interrupted; ' +
      'the state dict downloads as JSON that the package loads in Node, and uploads back', async (t) => {
      // Pause near step 80 (a slice may overshoot), then 50 steps more; the straight run goes further.
      const [attention, pauseAt, more, straightTo] = ['sinks', 80, 50, 220];
      // The run never interrupted.
      const straight = await openLearn();
      await straight.page.selectOption('#learn-attention', attention);
      await trainTo(straight.page, straightTo);
      const expected = await lossTable(straight.page);
      await straight.page.close();

      const { page, problems } = await openLearn();
      await page.selectOption('#learn-attention', attention);
      const paused = await trainTo(page, pauseAt);
      await page.waitForFunction((n) => document.getElementById('learn-keep').dataset.savedStep === String(n), paused.step);
      const before = await lossTable(page);
      await page.reload();
      await page.waitForSelector('#learn[data-ready="true"]', { timeout: 30000 });
      await page.waitForFunction((n) => document.querySelector('#train-status').dataset.step === String(n), paused.step);
      assert.equal(await page.inputValue('#learn-attention'), attention);
      assert.deepEqual(await lossTable(page), before);
      assert.ok(paused.step + more <= straightTo, `paused at ${paused.step}`);
      const end = await trainTo(page, paused.step + more);
      const after = await lossTable(page);
      const common = [...after.keys()].filter((s) => s > paused.step && expected.has(s));
      assert.ok(common.length >= 3, `steps after the reload: ${common}`);
      for (const s of common) assert.equal(after.get(s), expected.get(s), `loss at step ${s}`);
      console.log(`  reload: paused at step ${paused.step}, restored; losses at steps ${common.join(', ')} equal the ` +
        `uninterrupted run's bit for bit (step ${common[common.length - 1]}: ${after.get(common[common.length - 1])})`);

      const noDownload = lacking(engine, 'download');
      if (noDownload) t.diagnostic(`the download, its load in Node and its upload not checked: ${noDownload}`);
      else {
        // Download: JSON under PyTorch's names that the package loads in Node.
        const [download] = await Promise.all([page.waitForEvent('download'), page.click('#learn-download')]);
        const file = await download.path();
        const dict = JSON.parse(readFileSync(file, 'utf8'));
        for (const name of ['tok_emb.weight', 'layers.0.W_query.weight', 'layers.1.sinks', 'layers.1.out_proj.weight', 'out_head.weight']) {
          assert.ok(name in dict, `${name} in ${Object.keys(dict)}`);
        }
        assert.ok(!('pos_emb.weight' in dict), 'RoPE: no position table');
        const ca = await init({ build: 'single' });
        const model = new AttentionOnlyTransformer(ca, { ...DEFAULTS, attention }).eval();
        model.net.loadStateDict(dict);
        const probe = inductionProbe({ seed: 0, tokens: 64, vocab: 32 });
        const scores = headScores(model.forward(probe, 1, 64, { returnWeights: true }).weights, 4, 64, period(64));
        const best = Math.max(...scores.map((s) => s.induction));
        // The page computes with relaxed SIMD, Node with SIMD128: the last bits differ.
        assert.ok(Math.abs(best - end.best) < 1e-3, `best induction score in Node ${best}, on the page ${end.best}`);
        console.log(`  download: ${download.suggestedFilename()}, ${Object.keys(dict).length} tensors; loaded in Node ` +
          `by loadStateDict: best induction score ${best.toFixed(4)} (page ${end.best.toFixed(4)})`);

        // Upload: a new run's untrained heads become the trained ones again.
        const trained = await triangles(page);
        await page.click('#train-reset');
        await page.waitForFunction(() => document.querySelector('#train-status').dataset.step === '0');
        await page.waitForFunction((t) => [...document.querySelectorAll('#learn-head-grid canvas.base')]
          .some((c, k) => c.toDataURL() !== t[k]), trained);
        await page.setInputFiles('#learn-upload', file);
        await page.waitForSelector('#learn-keep[data-loaded="1"]');
        await trianglesBecome(page, trained);
      }
      // A state dict of other settings is refused, and the page goes on.
      await page.setInputFiles('#learn-upload', { name: 'bad.json', mimeType: 'application/json',
        buffer: Buffer.from(JSON.stringify({ 'tok_emb.weight': [1, 2] })) });
      await page.waitForFunction(() => /was not loaded: loadStateDict: \d+ problems/.test(
        document.getElementById('learn-keep-status').textContent));
      await trainTo(page, 5);
      await page.locator('#learn-keep').screenshot({ path: join(SCREENSHOTS, 'learn-keep.png') });
      assert.deepEqual(problems, []);
      await page.close();
    });
  });
});
