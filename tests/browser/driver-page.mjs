// The subset of Playwright's Page the browser suites use, for the engines
// Playwright does not drive here (Firefox ESR through puppeteer-core over
// WebDriver BiDi, WebKitGTK through WebKitWebDriver): a test written once
// against it runs in each engine of ./engines.mjs (Chromium keeps
// Playwright's own Page). Each engine gives a small core (evaluate, goto,
// reload, native click, key press, mouse move, screenshots, window size,
// close, and the console where its protocol reports it); reading the DOM,
// filling forms, choosing files and waiting are written once here on
// evaluate, polled from Node.
import { readFileSync, writeFileSync } from 'node:fs';
import { basename } from 'node:path';

/**
 * @typedef {{
 *   evaluate: (fn: Function, arg?: unknown) => Promise<any>,
 *   goto: (url: string) => Promise<void>, reload: () => Promise<void>,
 *   click: (selector: string, index: number) => Promise<void>,
 *   press: (key: string) => Promise<void>, mouseMove: (x: number, y: number) => Promise<void>,
 *   screenshot: (path: string, clip?: { x: number, y: number, width: number, height: number }, fullPage?: boolean) => Promise<void>,
 *   elementScreenshot: (selector: string, index: number, path: string) => Promise<void>,
 *   setViewport: (size: { width: number, height: number }) => Promise<void>,
 *   close: () => Promise<void>,
 *   on?: (event: string, listener: (x: any) => void) => void,
 * }} PageCore
 */

const POLL_MS = 100;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * A function from its source text, made in Node: engines send a function to
 * the page as its source (toString()), which this keeps.
 */
const fromSource = (source) => new Function(`return (${source})`)();

// In the page: the index-th element matching selector, or null.
const ELEMENT = '(s, i) => document.querySelectorAll(s)[i] ?? null';
// In the page: what Playwright calls visible (a box, not visibility: hidden).
const VISIBLE = '(el) => !!el && el.getClientRects().length > 0 && getComputedStyle(el).visibility !== "hidden"';

/** `fn` (a function, or an expression's text as page.evaluate takes it) as a function of one argument. */
function asFunction(fn) {
  return typeof fn === 'string' ? fromSource(`() => (${fn})`) : fn;
}

export class DriverPage {
  /** @param {PageCore} core @param {string} engine */
  constructor(core, engine) {
    this.core = core;
    this.engine = engine;
    this.keyboard = { press: (key) => core.press(key) };
    this.mouse = { move: (x, y) => core.mouseMove(x, y) };
  }

  evaluate(fn, arg) { return this.core.evaluate(asFunction(fn), arg); }
  goto(url) { return this.core.goto(url); }
  reload() { return this.core.reload(); }
  close() { return this.core.close(); }
  setViewportSize(size) { return this.core.setViewport(size); }
  waitForTimeout(ms) { return sleep(ms); }
  title() { return this.evaluate(() => document.title); }

  /** Whether console / pageerror / request events come (the engine's protocol reports them). */
  get reportsEvents() { return !!this.core.on; }

  /** console / pageerror / request listeners where the engine's protocol reports them (else none come). */
  on(event, listener) { this.core.on?.(event, listener); return this; }

  /** Polls `fn(arg)` until truthy (Playwright: (fn, arg, { timeout })); resolves with its value. */
  async waitForFunction(fn, arg, { timeout = 30_000 } = {}) {
    const f = asFunction(fn);
    const end = Date.now() + timeout;
    for (;;) {
      const value = await this.core.evaluate(f, arg);
      if (value) return value;
      if (Date.now() > end) throw new Error(`${this.engine}: waitForFunction: ${timeout} ms exceeded waiting for ${String(fn).slice(0, 200)}`);
      await sleep(POLL_MS);
    }
  }

  /** Waits for the `index`-th match of `selector` (visible unless state is 'attached'). */
  waitForSelector(selector, { timeout = 30_000, state = 'visible', index = 0 } = {}) {
    const test = state === 'attached'
      ? `([s, i]) => !!(${ELEMENT})(s, i)`
      : `([s, i]) => (${VISIBLE})((${ELEMENT})(s, i))`;
    return this.waitForFunction(fromSource(test), [selector, index], { timeout })
      .catch((e) => { throw new Error(`${this.engine}: waitForSelector('${selector}'): ${e.message}`); });
  }

  /** `fn(element, arg)` on the index-th match of `selector`, once it exists (as Playwright's element actions wait). */
  async onElement(selector, fn, arg, index = 0) {
    await this.waitForSelector(selector, { state: 'attached', index });
    const f = fromSource(`([s, i, a]) => (${fn})((${ELEMENT})(s, i), a)`);
    return this.core.evaluate(f, [selector, index, arg ?? null]);
  }

  $eval(selector, fn, arg) { return this.onElement(selector, fn, arg); }
  $$eval(selector, fn, arg) {
    return this.core.evaluate(fromSource(`([s, a]) => (${fn})(Array.from(document.querySelectorAll(s)), a)`), [selector, arg ?? null]);
  }

  textContent(selector) { return this.onElement(selector, (el) => el.textContent); }
  getAttribute(selector, name) { return this.onElement(selector, (el, n) => el.getAttribute(n), name); }
  inputValue(selector) { return this.onElement(selector, (el) => el.value); }
  isChecked(selector) { return this.onElement(selector, (el) => el.checked); }
  isEnabled(selector) { return this.onElement(selector, (el) => !el.disabled); }
  isDisabled(selector) { return this.onElement(selector, (el) => !!el.disabled); }
  isVisible(selector) { return this.core.evaluate(fromSource(`(s) => (${VISIBLE})(document.querySelector(s))`), selector); }
  focus(selector) { return this.onElement(selector, (el) => el.focus()); }

  /**
   * As Playwright's click: the element scrolled to the middle of the view
   * and found under its own centre (nothing covering it; retried until the
   * timeout), then a native click there.
   */
  async click(selector, index = 0, { timeout = 30_000 } = {}) {
    await this.waitForSelector(selector, { index, timeout });
    const end = Date.now() + timeout;
    for (;;) {
      const covered = await this.onElement(selector, (el) => {
        el.scrollIntoView({ block: 'center', inline: 'center' });
        const r = el.getBoundingClientRect();
        const hit = document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2);
        return hit && (hit === el || el.contains(hit)) ? null : (hit?.outerHTML.slice(0, 160) ?? 'nothing');
      }, null, index);
      if (!covered) return this.core.click(selector, index);
      if (Date.now() > end) throw new Error(`${this.engine}: click('${selector}'): covered by ${covered}`);
      await sleep(POLL_MS);
    }
  }

  async check(selector) {
    if (!(await this.isChecked(selector))) await this.click(selector);
  }

  /** Playwright's fill: focus, the value replaced, then input and change events. */
  fill(selector, value) {
    return this.onElement(selector, (el, v) => {
      el.focus();
      el.value = v;
      el.dispatchEvent(new Event('input', { bubbles: true }));
      el.dispatchEvent(new Event('change', { bubbles: true }));
    }, String(value));
  }

  /** Chooses the option with this value (or { value }, { label }, { index }), then input and change events. */
  selectOption(selector, choice) {
    return this.onElement(selector, (el, c) => {
      // Playwright's forms: a value, or { value }, { label } or { index }.
      const options = Array.from(el.options);
      const option = typeof c === 'string' ? options.find((o) => o.value === c)
        : 'index' in c ? options[c.index]
          : options.find((o) => ('value' in c ? o.value === c.value : o.label === c.label));
      if (!option) throw new Error(`no option ${JSON.stringify(c)}`);
      el.value = option.value;
      el.dispatchEvent(new Event('input', { bubbles: true }));
      el.dispatchEvent(new Event('change', { bubbles: true }));
    }, choice);
  }

  /**
   * Sets a file input's files as a user choosing them would (paths, or
   * { name, mimeType, buffer } as Playwright takes them): the bytes cross
   * as base64 and become Files in the page (DataTransfer), then input and
   * change events.
   */
  setInputFiles(selector, files) {
    const list = (Array.isArray(files) ? files : [files]).map((f) => (typeof f === 'string'
      ? { name: basename(f), mimeType: f.endsWith('.json') ? 'application/json' : 'application/octet-stream', base64: readFileSync(f).toString('base64') }
      : { name: f.name, mimeType: f.mimeType, base64: Buffer.from(f.buffer).toString('base64') }));
    return this.onElement(selector, (el, fs) => {
      const dt = new DataTransfer();
      for (const f of fs) {
        const bytes = Uint8Array.from(atob(f.base64), (c) => c.charCodeAt(0));
        dt.items.add(new File([bytes], f.name, { type: f.mimeType }));
      }
      el.files = dt.files;
      el.dispatchEvent(new Event('input', { bubbles: true }));
      el.dispatchEvent(new Event('change', { bubbles: true }));
    }, list);
  }

  /** Screenshots land beside Chromium's with the engine in their name (learn-loss-firefox-esr.png). */
  shotPath(path) {
    return path.replace(/\.png$/, `-${this.engine.toLowerCase().replace(/\W+/g, '-')}.png`);
  }

  async screenshot({ path, clip, fullPage = false } = {}) {
    await this.core.screenshot(this.shotPath(path), clip, fullPage);
  }

  /**
   * An element handle (null when nothing matches) for the calls the suites
   * make: $ (a descendant), evaluate, boundingBox; it names the element by
   * selector.
   */
  async $(selector) {
    const found = await this.core.evaluate(fromSource('(s) => !!document.querySelector(s)'), selector);
    if (!found) return null;
    return {
      $: (inner) => this.$(`${selector} ${inner}`),
      evaluate: (fn, arg) => this.onElement(selector, fn, arg),
      boundingBox: () => this.locator(selector).boundingBox(),
    };
  }

  /** Playwright's locator, for the calls the suites make: the index-th match of a CSS selector. */
  locator(selector, index = 0) {
    const page = this;
    return {
      count: () => page.$$eval(selector, (els) => els.length),
      first: () => page.locator(selector, 0),
      nth: (i) => page.locator(selector, i),
      click: () => page.click(selector, index),
      focus: () => page.onElement(selector, (el) => el.focus(), null, index),
      getAttribute: (name) => page.onElement(selector, (el, n) => el.getAttribute(n), name, index),
      textContent: () => page.onElement(selector, (el) => el.textContent, null, index),
      evaluate: (fn, arg) => page.onElement(selector, fn, arg, index),
      boundingBox: () => page.onElement(selector, (el) => {
        const r = el.getBoundingClientRect();
        return { x: r.x, y: r.y, width: r.width, height: r.height };
      }, null, index),
      scrollIntoViewIfNeeded: () => page.onElement(selector, (el) => el.scrollIntoView({ block: 'nearest' }), null, index),
      screenshot: async ({ path }) => {
        await page.onElement(selector, (el) => el.scrollIntoView({ block: 'nearest' }), null, index);
        await page.core.elementScreenshot(selector, index, page.shotPath(path));
      },
    };
  }
}

/** Writes a base64 PNG. */
export function writePng(path, base64) {
  writeFileSync(path, Buffer.from(base64, 'base64'));
}
