// One driver layer over the browser engines the suite runs, each from its
// Debian package: Chromium through playwright-core, Firefox ESR through
// puppeteer-core over WebDriver BiDi, WebKitGTK's MiniBrowser through
// WebKitWebDriver (W3C WebDriver over HTTP, ./webkit.mjs) under Xvfb (no
// download of a browser of their own). A test written against `open(url)` →
// { evaluate(fn, arg), close() } runs in each; an engine that cannot run
// says why (`unavailable`). `start({ env })` adds to the browser's
// environment (LANG=C.UTF-8 for page-engines.test.mjs).
import { existsSync } from 'node:fs';
import puppeteer from 'puppeteer-core';
import { launch as launchChromium } from './browser.mjs';
import { startWebKit, webKitUnavailable } from './webkit.mjs';

/**
 * @typedef {{ evaluate: (fn: Function, arg?: unknown) => Promise<any>, close: () => Promise<void> }} EnginePage
 * @typedef {{ name: string, unavailable?: string,
 *   start?: (options?: { env?: Record<string, string> }) => Promise<{ version: string, open: (url: string) => Promise<EnginePage>, close: () => Promise<void> }> }} Engine
 */

/** @type {Engine[]} */
const ALL = [
  {
    name: 'Chromium',
    unavailable: existsSync('/usr/bin/chromium') ? undefined : 'Debian\'s chromium is not installed (scripts/setup.mjs installs it)',
    async start({ env } = {}) {
      const browser = await launchChromium({ env });
      return {
        version: `Chromium ${browser.version()}`,
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
    unavailable: existsSync('/usr/bin/firefox-esr') ? undefined : 'Debian\'s firefox-esr is not installed (scripts/setup.mjs installs it)',
    async start({ env } = {}) {
      const browser = await puppeteer.launch({ browser: 'firefox', executablePath: '/usr/bin/firefox-esr', headless: true,
        env: env && { ...process.env, ...env } });
      return {
        version: await browser.version(),
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
    unavailable: webKitUnavailable(),
    start: startWebKit,
  },
];

// BROWSER_ENGINES=webkitgtk (or chromium, firefox; comma-separated) runs
// only those; the others are skipped, saying so.
const chosen = process.env.BROWSER_ENGINES?.split(',').map((n) => n.trim().toLowerCase()).filter(Boolean);

/** @type {Engine[]} */
export const ENGINES = ALL.map((e) => (chosen && !chosen.some((c) => e.name.toLowerCase().startsWith(c))
  ? { name: e.name, unavailable: `not in BROWSER_ENGINES=${process.env.BROWSER_ENGINES}` } : e));
