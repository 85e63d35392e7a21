// The demo page's frame budget in headless Chromium: how long the page's own
// thread goes without a frame while its engine works (a new 1024-token input
// computed in the worker) and while the Learn section trains (the default
// induction run), and how often the Learn triangles show a newer probe. The
// page moves the pointer over a heatmap every frame meanwhile, as a user
// hovering would. Measured here, not asserted in a test: the numbers depend
// on the machine and its load.
import { startServer } from '../../scripts/serve.mjs';
import { targetLine } from '../lib/format.mjs';
import { launchChromium } from './run.mjs';

/** Frame gaps over which the page counts as janky, and the triangles' refresh bound. */
export const FRAME_TARGETS = { worstGapMs: 200, refreshMs: 250 };

/**
 * Installs a frame watcher in the page: while `busy()` holds, each frame's
 * gap since the last one, and a pointer move over `overlaySelector`.
 * `probe()` (optional) names what the page shows, to count its refreshes.
 */
function watchFrames(page, { overlaySelector, busy, probe }) {
  return page.evaluate(([selector, busySource, probeSource]) => {
    const isBusy = new Function(`return (${busySource})`)();
    const probeOf = probeSource ? new Function(`return (${probeSource})`)() : () => '';
    const w = { gaps: [], last: performance.now(), stop: false, refreshes: [], shown: '' };
    globalThis.frameWatch = w;
    const tick = (now) => {
      if (isBusy()) {
        w.gaps.push(now - w.last);
        const shown = probeOf();
        if (shown !== w.shown) {
          w.shown = shown;
          w.refreshes.push(now);
        }
        const overlay = document.querySelector(selector);
        const r = overlay.getBoundingClientRect();
        overlay.dispatchEvent(new PointerEvent('pointermove', {
          clientX: r.left + r.width * (0.2 + (w.gaps.length % 40) * 0.015), clientY: r.top + r.height * 0.8, bubbles: true,
        }));
      }
      w.last = now;
      if (!w.stop) requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
  }, [overlaySelector, busy.toString(), probe?.toString() ?? '']);
}

/** Stops the watcher: { frames, worstMs, medianRefreshMs }. */
async function readWatch(page) {
  const w = await page.evaluate(() => { globalThis.frameWatch.stop = true; return globalThis.frameWatch; });
  const refresh = w.refreshes.slice(1).map((t, k) => t - w.refreshes[k]).sort((a, b) => a - b);
  return {
    frames: w.gaps.length,
    worstMs: w.gaps.length ? Math.max(...w.gaps) : null,
    medianRefreshMs: refresh.length ? refresh[refresh.length >> 1] : null,
  };
}

/** Sets a control of the page as a user would. */
function setControl(page, id, value) {
  return page.evaluate(([elementId, v]) => {
    const el = document.getElementById(elementId);
    if (el.type === 'checkbox') el.checked = v;
    else el.value = String(v);
    el.dispatchEvent(new Event('input', { bubbles: true }));
    el.dispatchEvent(new Event('change', { bubbles: true }));
  }, [id, value]);
}

/**
 * Resolves to { engine, pipeline: { frames, worstMs }, learn: { frames,
 * worstMs, medianRefreshMs, steps } } or { engine, error }.
 */
export async function runFrameBudget({ log = () => {} } = {}) {
  const server = await startServer();
  const browser = await launchChromium();
  const engine = `Chromium ${browser.version().split('.')[0]}`;
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(server.url);
    await page.waitForSelector('body[data-ready="true"]', { timeout: 60000 });
    log('  frames: T = 1024 computed in the worker...');
    await setControl(page, 'preset', 'long');
    await page.waitForFunction(() => document.body.dataset.computing !== 'true', null, { timeout: 120000 });
    await watchFrames(page, {
      overlaySelector: '#panel-weights canvas.overlay',
      busy: () => document.body.dataset.computing === 'true',
    });
    await setControl(page, 'causal', false);
    await page.waitForFunction(() => document.body.dataset.computing === 'true', null, { timeout: 30000 }).catch(() => {});
    await page.waitForFunction(() => document.body.dataset.computing !== 'true', null, { timeout: 120000 });
    const pipeline = await readWatch(page);

    log('  frames: the Learn section training...');
    await page.waitForSelector('#learn[data-ready="true"]', { timeout: 60000 });
    await watchFrames(page, {
      overlaySelector: '#learn-head-grid canvas.overlay',
      busy: () => document.getElementById('train-status').dataset.running === 'true',
      probe: () => document.getElementById('train-status').dataset.probeStep ?? '',
    });
    await page.click('#train-start');
    await page.waitForFunction(() => Number(document.querySelector('#train-status').dataset.step) >= 300,
      null, { timeout: 120000 });
    await page.click('#train-start');
    await page.waitForFunction(() => document.querySelector('#train-status').dataset.running === 'false');
    const learn = await readWatch(page);
    learn.steps = Number(await page.getAttribute('#train-status', 'data-step'));
    return { engine, pipeline, learn };
  } catch (e) {
    return { engine, error: String(e?.message ?? e).split('\n')[0] };
  } finally {
    await browser.close();
    await server.close();
  }
}

/** The frame budget's lines, each target met or missed. */
export function renderFrames(r) {
  const head = `Demo page frame budget (${r.engine}, bench/browser/frames.mjs)`;
  if (r.error) return `${head}: not measured (${r.error})`;
  const ms = (x) => (x === null ? 'n/a' : `${x.toFixed(0)} ms`);
  const { worstGapMs, refreshMs } = FRAME_TARGETS;
  return [
    head,
    targetLine(`no frame gap over ${worstGapMs} ms while T = 1024 computes in the worker`,
      r.pipeline.worstMs !== null && r.pipeline.worstMs < worstGapMs,
      `${r.pipeline.frames} frames, worst gap ${ms(r.pipeline.worstMs)}`),
    targetLine(`no frame gap over ${worstGapMs} ms while the Learn section trains`,
      r.learn.worstMs !== null && r.learn.worstMs < worstGapMs,
      `${r.learn.frames} frames over ${r.learn.steps} steps, worst gap ${ms(r.learn.worstMs)}`),
    targetLine(`the Learn triangles show a newer probe at least every ${refreshMs} ms (median)`,
      r.learn.medianRefreshMs !== null && r.learn.medianRefreshMs < refreshMs,
      `median ${ms(r.learn.medianRefreshMs)}`),
  ].join('\n');
}
