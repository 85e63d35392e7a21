// Headless Debian Chromium driven by playwright-core, the demo server, and
// helpers that read the demo page the way a test needs: numbers from its
// DOM tables, colours from its canvases, and "wait for the next redraw".
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before } from 'node:test';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { startServer } from '../../scripts/serve.mjs';

/** Where the tests leave their screenshots (git-ignored). */
export const SCREENSHOTS = join(dirname(fileURLToPath(import.meta.url)), 'screenshots');

/** Headless Chromium; `env` is added to its environment. */
export async function launch({ env } = {}) {
  mkdirSync(SCREENSHOTS, { recursive: true });
  return chromium.launch({
    env: env && { ...process.env, ...env },
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'],
  });
}

/**
 * For a test file of Chromium only: hooks that launch Chromium and start the
 * demo server (cross-origin isolated) before its tests and close both after
 * them. The returned object holds them as `browser` and `server`.
 */
export function useChromiumAndServer() {
  const env = { browser: null, server: null };
  before(async () => {
    env.browser = await launch();
    env.server = await startServer();
  });
  after(async () => {
    await env.browser?.close();
    await env.server?.close();
  });
  return env;
}

/**
 * For a describe() of one engine (./engines.mjs): hooks that start the engine
 * and the demo server (cross-origin isolated) before its tests and close both
 * after them. The returned object holds them as `browser` (newPage({ viewport })
 * gives Playwright's Page or ./driver-page.mjs's) and `server` once the tests
 * run, and the engine as `engine`.
 */
export function useEngineAndServer(engine) {
  const env = { browser: null, server: null, engine };
  before(async () => {
    env.browser = await engine.start();
    env.server = await startServer();
  });
  after(async () => {
    await env.browser?.close();
    await env.server?.close();
  });
  return env;
}

const unreported = new Set();

/**
 * Opens `path` and collects console errors, page errors and off-origin
 * requests (where the engine's driver reports them: see `lacks.console`).
 */
export async function openPage(browser, baseUrl, path = '', { viewport = { width: 1280, height: 900 } } = {}) {
  const page = await browser.newPage({ viewport });
  const problems = [];
  if (page.reportsEvents === false && !unreported.has(page.engine)) {
    unreported.add(page.engine);
    console.log(`  ${page.engine}: console errors, page errors and requests are not collected (its driver reports none)`);
  }
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

/** Opens the demo and waits for its first drawing. */
export async function openDemo(browser, baseUrl, options) {
  const opened = await openPage(browser, baseUrl, '', options);
  await opened.page.waitForSelector('body[data-ready="true"]', { timeout: 60000 }).catch(async (e) => {
    throw new Error(`${e.message}; #engine '${await opened.page.textContent('#engine').catch(() => '?')}', ` +
      `problems: ${opened.problems.join(' | ') || 'none seen'}`);
  });
  return opened;
}

/** Opens the demo and waits for its Learn section's first run to be set up. */
export async function openLearn(env, options) {
  const opened = await openDemo(env.browser, env.server.url, options);
  await opened.page.waitForSelector('#learn[data-ready="true"]', { timeout: 60000 });
  return opened;
}

/** Runs `action` and waits until the page has redrawn after it. */
export async function redraw(page, action) {
  const before = Number(await page.getAttribute('body', 'data-render-count'));
  await action();
  await page.waitForFunction((n) => Number(document.body.dataset.renderCount) > n, before, { timeout: 30000 });
}

/** Sets a form control's value as a user would (input + change events), then waits for the redraw. */
export function setControl(page, id, value) {
  return redraw(page, () => page.evaluate(([elementId, v]) => {
    const el = document.getElementById(elementId);
    if (el.type === 'checkbox') el.checked = v;
    else el.value = String(v);
    el.dispatchEvent(new Event('input', { bubbles: true }));
    el.dispatchEvent(new Event('change', { bubbles: true }));
  }, [id, value]));
}

/**
 * The numbers table of a heatmap (`root`: a CSS selector of the panel):
 * { cells: [[{ text, value, masked }]], sums: [number] | [] }.
 */
export function readTable(page, root) {
  return page.$eval(`${root} table.matrix`, (table) => {
    const cells = [];
    const sums = [];
    for (const tr of table.tBodies[0].rows) {
      const row = [];
      for (const td of tr.querySelectorAll('td[data-j]')) {
        row.push({
          text: td.textContent,
          value: td.dataset.value === undefined ? null : Number(td.dataset.value),
          masked: td.dataset.masked === 'true',
        });
      }
      cells.push(row);
      const sum = tr.querySelector('td.row-sum');
      if (sum) sums.push(Number(sum.dataset.rowSum));
    }
    return { cells, sums };
  });
}

/**
 * Colours of a heatmap canvas (`canvas`: a CSS selector of its base
 * canvas), sampled near the top-left corner of each cell (away from the
 * printed number): [[ [r, g, b] ]].
 */
export function cellColours(page, canvas) {
  return page.$eval(canvas, (c) => {
    const d = c.dataset;
    const rows = Number(d.rows);
    const cols = Number(d.cols);
    const cw = Number(d.plotW) / cols;
    const ch = Number(d.plotH) / rows;
    const ctx = c.getContext('2d');
    const out = [];
    for (let i = 0; i < rows; i++) {
      const row = [];
      for (let j = 0; j < cols; j++) {
        const x = Math.floor(Number(d.plotX) + (j + 0.2) * cw);
        const y = Math.floor(Number(d.plotY) + (i + 0.2) * ch);
        row.push(Array.from(ctx.getImageData(x, y, 1, 1).data.slice(0, 3)));
      }
      out.push(row);
    }
    return out;
  });
}

/**
 * A page opened 360 px wide fits it: nothing scrolls sideways and each of
 * `selectors` (its first match) lies within the width inside the scroll bar
 * (Firefox's takes 12 px; Chromium's headless ones none).
 */
export async function assertFitsScreen(page, selectors) {
  const width = await page.evaluate(() => document.documentElement.clientWidth);
  assert.ok(width > 340 && width <= 360, `viewport ${width} px`);
  // Nothing wider than the screen once the layout has settled (a first
  // draw may be wide for a frame); else the elements that stick out.
  const fits = () => document.documentElement.scrollWidth <= document.documentElement.clientWidth;
  if (!(await page.waitForFunction(fits, undefined, { timeout: 5000 }).then(() => true, () => false))) {
    const wide = await page.evaluate(() => [...document.querySelectorAll('body *')]
      .filter((e) => e.getBoundingClientRect().right > document.documentElement.clientWidth + 0.5)
      .slice(0, 8).map((e) => `${e.tagName.toLowerCase()}${e.id ? `#${e.id}` : ''}.${e.className}: ` +
        `${Math.round(e.getBoundingClientRect().left)}..${Math.round(e.getBoundingClientRect().right)}`));
    assert.fail(`page ${await page.evaluate(() => document.documentElement.scrollWidth)} px wide on a ${width} px ` +
      `screen; sticking out: ${wide.join('; ')}`);
  }
  for (const selector of selectors) {
    const box = await page.locator(selector).first().boundingBox();
    assert.ok(box.x >= 0 && box.x + box.width <= width, `${selector} within the screen: ${JSON.stringify(box)}`);
  }
}

/** The "masked" look: a light neutral grey (no colour scale of the page has one). */
export function isMaskedColour([r, g, b]) {
  return Math.max(r, g, b) - Math.min(r, g, b) <= 12 && Math.min(r, g, b) >= 180;
}

/**
 * The demo's server, changed: paths ending in one of `missing` answer 404,
 * and `csp` rewrites the Content-Security-Policy header.
 * @param {{ missing?: string[], csp?: (value: string) => string }} change
 */
export async function serverWith({ missing = [], csp }) {
  const server = await startServer();
  const [demo] = server.server.listeners('request');
  server.server.removeAllListeners('request');
  server.server.on('request', (req, res) => {
    if (missing.some((m) => new URL(req.url, 'http://x').pathname.endsWith(m))) {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found');
      return;
    }
    if (csp) {
      const setHeader = res.setHeader.bind(res);
      res.setHeader = (name, value) => setHeader(name, name === 'Content-Security-Policy' ? csp(String(value)) : value);
    }
    demo(req, res);
  });
  return server;
}

export { startServer };
