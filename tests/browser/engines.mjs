// One driver layer over the browser engines the suite runs, each from its
// Debian package: Chromium through playwright-core, Firefox ESR through
// puppeteer-core over WebDriver BiDi (no download of a browser of their own).
// A test written against `open(url)` → { evaluate(fn, arg), close() } runs
// in each; an engine that cannot run says why (`unavailable`).
import { existsSync } from 'node:fs';
import puppeteer from 'puppeteer-core';
import { launch as launchChromium } from './browser.mjs';

/**
 * @typedef {{ evaluate: (fn: Function, arg?: unknown) => Promise<any>, close: () => Promise<void> }} EnginePage
 * @typedef {{ name: string, unavailable?: string,
 *   start?: () => Promise<{ version: string, open: (url: string) => Promise<EnginePage>, close: () => Promise<void> }> }} Engine
 */

/** @type {Engine[]} */
export const ENGINES = [
  {
    name: 'Chromium',
    unavailable: existsSync('/usr/bin/chromium') ? undefined : 'Debian\'s chromium is not installed (scripts/setup.mjs installs it)',
    async start() {
      const browser = await launchChromium();
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
    async start() {
      const browser = await puppeteer.launch({ browser: 'firefox', executablePath: '/usr/bin/firefox-esr', headless: true });
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
    unavailable: 'not driven yet: WebKitWebDriver needs MiniBrowser under Xvfb, which this driver layer does not start',
  },
];
