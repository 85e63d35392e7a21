// The API reference that `npm start` serves at /api/ (TypeDoc, built by
// `node scripts/build.mjs --docs` before this suite): it opens without
// console errors under the server's Content-Security-Policy and documents
// init() and its options with their defaults.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { it } from 'node:test';
import { SCREENSHOTS, openPage, useEngineAndServer } from './browser.mjs';
import { describeEngines } from './engines.mjs';

describeEngines('API reference', (engine) => {
  const env = useEngineAndServer(engine);
  it('lists init() and documents InitOptions with units and defaults', async () => {
    const { page, problems } = await openPage(env.browser, env.server.url, 'api/');
    assert.match(await page.title(), /causal-attention API/);
    await page.goto(`${env.server.url}api/interfaces/InitOptions.html`);
    const text = await page.textContent('body');
    for (const expected of ['worker', 'timeout', 'Default 30000', 'Milliseconds', 'build', 'threads']) {
      assert.ok(text.includes(expected), `InitOptions page mentions ${expected}`);
    }
    await page.goto(`${env.server.url}api/functions/init.html`);
    assert.match(await page.textContent('body'), /RemoteRuntime/);
    await page.screenshot({ path: join(SCREENSHOTS, 'api-init.png') });
    assert.deepEqual(problems, []);
    await page.close();
  });
});
