// One driver layer over the browser engines the suite runs, each from its
// Debian package: Chromium through playwright-core, Firefox ESR through
// puppeteer-core over WebDriver BiDi, WebKitGTK's MiniBrowser through
// WebKitWebDriver (W3C WebDriver over HTTP, ./webkit.mjs) under Xvfb (no
// download of a browser of their own). A test written against `open(url)` →
// { evaluate(fn, arg), close() } runs in each; an engine that cannot run
// says why (`unavailable`). `newPage({ viewport })` gives the subset of
// Playwright's Page the suites use (Chromium: Playwright's own; the others:
// ./driver-page.mjs); what an engine's driver cannot do is in `lacks`
// (workers, route, download, console, narrow, initScript: the reason), which a test names
// when it skips a check. `relaxedSimd`: the engine runs relaxed SIMD (the
// GEMM kernel init() should pick there). `start({ env })` adds to the browser's
// environment (LANG=C.UTF-8 for page-engines.test.mjs).
import { existsSync } from 'node:fs';
import { describe } from 'node:test';
import puppeteer from 'puppeteer-core';
import { launch as launchChromium } from './browser.mjs';
import { DriverPage } from './driver-page.mjs';
import { startWebKit, webKitUnavailable } from './webkit.mjs';

/**
 * @typedef {{ evaluate: (fn: Function, arg?: unknown) => Promise<any>, close: () => Promise<void> }} EnginePage
 * @typedef {{ name: string, unavailable?: string, lacks?: Record<string, string>, relaxedSimd?: boolean,
 *   start?: (options?: { env?: Record<string, string> }) => Promise<{ version: string, open: (url: string) => Promise<EnginePage>,
 *     newPage: (options?: { viewport?: { width: number, height: number } }) => Promise<any>, close: () => Promise<void> }> }} Engine
 */

const LISTS_NO_WORKERS = (driver) => `${driver} lists no page's workers (Playwright's page.workers() is Chromium's)`;
const NO_INIT_SCRIPTS = 'the suite runs no script before a page\'s own here (Playwright\'s addInitScript); ' +
  'page-engines.test.mjs starts the engine under LANG=C.UTF-8 instead';
const REWRITES_NO_REQUESTS = (driver) => `the suite rewrites no requests through ${driver} (page.route is Playwright's; ` +
  'page-engines.test.mjs changes the server instead)';

/** @type {Engine[]} */
const ALL = [
  {
    name: 'Chromium',
    relaxedSimd: true,
    unavailable: existsSync('/usr/bin/chromium') ? undefined : 'Debian\'s chromium is not installed (scripts/setup.mjs installs it)',
    async start({ env } = {}) {
      const browser = await launchChromium({ env });
      return {
        version: `Chromium ${browser.version()}`,
        newPage: (options) => browser.newPage(options),
        async open(url) {
          const page = await browser.newPage();
          await page.goto(url);
          return { evaluate: (fn, arg) => page.evaluate(fn, arg), close: () => page.close() };
        },
        close: () => browser.close(),
      };
    },
  },
  {
    name: 'Firefox ESR',
    relaxedSimd: true,
    lacks: {
      workers: LISTS_NO_WORKERS('puppeteer-core over WebDriver BiDi'),
      route: REWRITES_NO_REQUESTS('puppeteer-core over WebDriver BiDi'),
      download: 'puppeteer-core over WebDriver BiDi reports no downloads',
      initScript: NO_INIT_SCRIPTS,
    },
    unavailable: existsSync('/usr/bin/firefox-esr') ? undefined : 'Debian\'s firefox-esr is not installed (scripts/setup.mjs installs it)',
    async start({ env } = {}) {
      const browser = await puppeteer.launch({ browser: 'firefox', executablePath: '/usr/bin/firefox-esr', headless: true,
        env: env && { ...process.env, ...env } });
      return {
        version: (await browser.version()).replace(/^firefox\//i, 'Firefox ESR '),
        // A browser context of its own per page (its own storage, as
        // Playwright's newPage gives), closed with the page.
        async newPage({ viewport = { width: 1280, height: 900 } } = {}) {
          const context = await browser.createBrowserContext();
          const page = await context.newPage();
          await page.setViewport(viewport);
          return new DriverPage({
            evaluate: (fn, arg) => page.evaluate(fn, arg),
            goto: async (url) => { await page.goto(url); },
            reload: async () => { await page.reload(); },
            click: async (selector, index) => (await page.$$(selector))[index].click(),
            press: (key) => page.keyboard.press(key === 'Space' ? ' ' : key), // Playwright's Space is BiDi's ' '
            mouseMove: (x, y) => page.mouse.move(x, y),
            screenshot: async (path, clip, fullPage) => { await page.screenshot({ path, clip, fullPage }); },
            elementScreenshot: async (selector, index, path) => { await (await page.$$(selector))[index].screenshot({ path }); },
            setViewport: (size) => page.setViewport(size),
            close: () => context.close(),
            on: (event, listener) => page.on(event, listener),
          }, 'Firefox ESR');
        },
        async open(url) {
          const page = await browser.newPage();
          await page.goto(url);
          return { evaluate: (fn, arg) => page.evaluate(fn, arg), close: () => page.close() };
        },
        close: () => browser.close(),
      };
    },
  },
  {
    name: 'WebKitGTK',
    relaxedSimd: false,
    unavailable: webKitUnavailable(),
    lacks: {
      workers: LISTS_NO_WORKERS('WebKitWebDriver (W3C WebDriver)'),
      route: REWRITES_NO_REQUESTS('WebKitWebDriver (W3C WebDriver)'),
      download: 'WebKitWebDriver (W3C WebDriver) reports no downloads',
      initScript: NO_INIT_SCRIPTS,
      console: 'WebKitWebDriver (W3C WebDriver) reports no console messages or page errors',
      narrow: 'MiniBrowser\'s window does not narrow below its toolbar (a 634 px viewport when 360 is asked)',
    },
    async start(options) {
      const running = await startWebKit(options);
      return {
        ...running,
        // A session of its own per page (its own storage, as Playwright's
        // newPage gives a new context): the session ends with the page.
        async newPage({ viewport = { width: 1280, height: 900 } } = {}) {
          const session = await running.newSession();
          const core = await session.open('about:blank');
          await core.setViewport(viewport);
          return new DriverPage({ ...core, close: () => session.close() }, 'WebKitGTK');
        },
      };
    },
  },
];

// BROWSER_ENGINES=webkitgtk (or chromium, firefox; comma-separated) runs
// only those; the others are skipped, saying so.
const chosen = process.env.BROWSER_ENGINES?.split(',').map((n) => n.trim().toLowerCase()).filter(Boolean);

/** @type {Engine[]} */
export const ENGINES = ALL.map((e) => (chosen && !chosen.some((c) => e.name.toLowerCase().startsWith(c))
  ? { name: e.name, unavailable: `not in BROWSER_ENGINES=${process.env.BROWSER_ENGINES}` } : e));

/**
 * `body(engine)` as a describe() per engine of ENGINES: a suite written once.
 * An engine that cannot run is skipped, saying why.
 */
export function describeEngines(title, body) {
  for (const engine of ENGINES) {
    describe(`${title} in ${engine.name}`, { skip: engine.unavailable && `${engine.name}: ${engine.unavailable}` }, () => body(engine));
  }
}

/** A skip reason when the engine's driver lacks one of `what` (its `lacks` keys), else false. */
export function lacking(engine, ...what) {
  const reasons = what.map((w) => engine.lacks?.[w]).filter(Boolean);
  return reasons.length ? `${engine.name}: ${reasons.join('; ')}` : false;
}

/**
 * For scripts (bench/studies/): `run(running)` with each engine of ENGINES
 * started in turn (closed after), one at a time; an engine that cannot run
 * is printed as skipped, saying why.
 */
export async function withEachEngine(run) {
  for (const engine of ENGINES) {
    if (engine.unavailable) {
      console.log(`${engine.name}: skipped (${engine.unavailable})`);
      continue;
    }
    const running = await engine.start();
    try {
      await run(running, engine);
    } finally {
      await running.close();
    }
  }
}
