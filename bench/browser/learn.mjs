// The Learn rows in every browser engine of tests/browser/engines.mjs
// (Chromium, Firefox ESR, WebKitGTK): the default model trained in a module
// worker (bench/browser/learn-worker.mjs) of a cross-origin-isolated page,
// one fresh page (context, or WebKitGTK session) per build; with `against`,
// that checkout's dist/ (A, served at /against/) and this one's (B)
// interleaved in the same worker.
import { ENGINES } from '../../tests/browser/engines.mjs';
import { startBenchServer } from './server.mjs';

/**
 * Resolves to one row per engine and build: { engine: '<engine> <version>',
 * build, ...learnSteps' result } or { engine, build, error }.
 */
export async function runLearnBrowser({ steps, rounds, builds, against = null, log = () => {} }) {
  const server = await startBenchServer(against ? [['/against/', `${against}/dist`]] : []);
  const rows = [];
  try {
    for (const candidate of ENGINES) {
      if (candidate.unavailable) {
        rows.push(...builds.map((build) => ({ engine: candidate.name, build, error: candidate.unavailable })));
        continue;
      }
      const browser = await candidate.start();
      // Chromium 156, Firefox ESR 153, WebKitGTK 2.50
      const [major, minor] = browser.version.match(/\d+(?:\.\d+)?/g)[0].split('.');
      const engine = `${candidate.name} ${candidate.name === 'WebKitGTK' ? `${major}.${minor}` : major}`;
      log(`Learn, ${engine}...`);
      try {
        for (const build of builds) {
          const page = await browser.newPage();
          await page.goto(`${server.url}bench/browser/index.html`);
          const dists = [...(against ? ['/against/'] : []), '/dist/'];
          const reply = await page.evaluate((message) => new Promise((resolve) => {
            const worker = new Worker('/bench/browser/learn-worker.mjs', { type: 'module' });
            worker.onmessage = ({ data }) => resolve(data);
            worker.onerror = (e) => resolve({ error: e.message ?? 'worker error' });
            worker.postMessage(message);
          }), { dists, build, steps, rounds });
          await page.close();
          rows.push(reply.error ? { engine, build, error: reply.error } : { engine, build, ...reply.result });
        }
      } finally {
        await browser.close();
      }
    }
  } finally {
    await server.close();
  }
  return rows;
}
