// Headless Debian Chromium driven by playwright-core, and the demo server.
import { chromium } from 'playwright-core';
import { startServer } from '../../scripts/serve.mjs';

export async function launch() {
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'],
  });
}

/** Opens `path` and collects console errors, page errors and off-origin requests. */
export async function openPage(browser, baseUrl, path = '') {
  const page = await browser.newPage();
  const problems = [];
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('request', (r) => {
    if (!r.url().startsWith(baseUrl) && !r.url().startsWith('data:') && !r.url().startsWith('blob:')) {
      problems.push(`request outside the origin: ${r.url()}`);
    }
  });
  await page.goto(baseUrl + path);
  return { page, problems };
}

export { startServer };
