// The Learn rows in headless Chromium: the default model trained in a
// module worker (bench/browser/learn-worker.mjs) of a cross-origin-isolated
// page, one fresh context per build; with `against`, that checkout's dist/
// (A, served at /against/) and this one's (B) interleaved in the same worker.
import { launchChromium } from './run.mjs';
import { startBenchServer } from './server.mjs';

/**
 * Resolves to one row per build: { engine: 'Chromium <version>', build,
 * ...learnSteps' result } or { engine, build, error }.
 */
export async function runLearnBrowser({ steps, rounds, builds, against = null }) {
  const server = await startBenchServer(against ? [['/against/', `${against}/dist`]] : []);
  const browser = await launchChromium();
  const rows = [];
  const engine = `Chromium ${browser.version().split('.')[0]}`;
  try {
    for (const build of builds) {
      const context = await browser.newContext();
      const page = await context.newPage();
      await page.goto(`${server.url}bench/browser/index.html`);
      const dists = [...(against ? ['/against/'] : []), '/dist/'];
      const reply = await page.evaluate((message) => new Promise((resolve) => {
        const worker = new Worker('/bench/browser/learn-worker.mjs', { type: 'module' });
        worker.onmessage = ({ data }) => resolve(data);
        worker.onerror = (e) => resolve({ error: e.message ?? 'worker error' });
        worker.postMessage(message);
      }), { dists, build, steps, rounds });
      await context.close();
      rows.push(reply.error ? { engine, build, error: reply.error } : { engine, build, ...reply.result });
    }
  } finally {
    await browser.close();
    await server.close();
  }
  return rows;
}
