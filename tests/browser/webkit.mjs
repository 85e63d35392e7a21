// WebKitGTK for tests/browser/engines.mjs: Debian's MiniBrowser
// (libwebkit2gtk-4.1-0) driven by WebKitWebDriver (webkit2gtk-driver) through
// W3C WebDriver's HTTP protocol with Node's fetch, on an Xvfb display of its
// own (xvfb): MiniBrowser has no headless mode. JavaScriptCore enables
// SharedArrayBuffer (the threads build) only with JSC_useSharedArrayBuffer=1
// in the browser's environment, which the driver passes on.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';

const DRIVER = '/usr/bin/WebKitWebDriver';
const XVFB = '/usr/bin/Xvfb';
const SCRIPT_TIMEOUT_MS = 120_000;
// Playwright's key names as WebDriver's key codes.
const KEYS = { Enter: '\uE007', Tab: '\uE004', Space: '\uE00D', Escape: '\uE00C', Backspace: '\uE003', Home: '\uE011', End: '\uE010',
  ArrowLeft: '\uE012', ArrowUp: '\uE013', ArrowRight: '\uE014', ArrowDown: '\uE015' };

/** MiniBrowser of Debian's libwebkit2gtk-4.1-0 (or 4.0), under /usr/lib/<multiarch triplet>/. */
function miniBrowser() {
  const triplets = readdirSync('/usr/lib').filter((d) => d.endsWith('-linux-gnu'));
  for (const t of triplets) {
    for (const api of ['4.1', '4.0']) {
      const path = join('/usr/lib', t, `webkit2gtk-${api}`, 'MiniBrowser');
      if (existsSync(path)) return path;
    }
  }
  return null;
}

/** JSON.stringify's replacer: a number JSON cannot write as { '#number': its name }. */
function tagNumbers(_key, value) {
  if (Object.is(value, -0)) return { '#number': '-0' };
  return typeof value === 'number' && !Number.isFinite(value) ? { '#number': String(value) } : value;
}

/** JSON.parse's reviver undoing tagNumbers. */
function untagNumbers(_key, value) {
  return value !== null && typeof value === 'object' && typeof value['#number'] === 'string' ? Number(value['#number']) : value;
}

/** Why WebKitGTK cannot run here, or undefined when it can. */
export function webKitUnavailable() {
  const missing = [];
  if (!existsSync(DRIVER)) missing.push('webkit2gtk-driver (WebKitWebDriver)');
  if (!existsSync(XVFB)) missing.push('xvfb (Xvfb)');
  if (!miniBrowser()) missing.push('libwebkit2gtk-4.1-0 (MiniBrowser under /usr/lib/*-linux-gnu/webkit2gtk-4.1/)');
  return missing.length ? `Debian's ${missing.join(', ')} not installed (scripts/setup.mjs installs them)` : undefined;
}

/** Resolves with `promise`, or rejects saying `what` did not happen within `ms`. */
function within(ms, what, promise) {
  let timer;
  return Promise.race([promise, new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`WebKitGTK: ${what} within ${ms / 1000} s`)), ms);
  })]).finally(() => clearTimeout(timer));
}

/** A child process whose last stderr lines are kept for error messages. */
function child(command, args, options) {
  const proc = spawn(command, args, options);
  let tail = '';
  proc.stderr?.on('data', (d) => { tail = (tail + d).slice(-2000); });
  const kill = () => { if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM'); };
  process.once('exit', kill); // a test process that ends early leaves no Xvfb or driver behind
  const ended = new Promise((resolve) => proc.once('exit', (code, signal) => {
    process.off('exit', kill);
    resolve(signal ?? code);
  }));
  return { proc, ended, kill, stderr: () => tail.trim() };
}

/** Xvfb on a free display (it picks the number: -displayfd). */
async function startXvfb() {
  const x = child(XVFB, ['-displayfd', '3', '-screen', '0', '1280x1024x24', '-nolisten', 'tcp'],
    { stdio: ['ignore', 'ignore', 'pipe', 'pipe'] });
  const display = await within(10_000, 'Xvfb did not start', new Promise((resolve, reject) => {
    let out = '';
    x.proc.stdio[3].on('data', (d) => {
      out += d;
      if (out.includes('\n')) resolve(`:${out.trim()}`);
    });
    x.ended.then((code) => reject(new Error(`WebKitGTK: Xvfb exited (${code}): ${x.stderr()}`)));
  })).catch((e) => { x.kill(); throw e; });
  return { display, x };
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = /** @type {import('node:net').AddressInfo} */ (s.address());
      s.close(() => resolve(port));
    });
  });
}

/**
 * Starts Xvfb, WebKitWebDriver and one MiniBrowser session. `env` is added
 * to the browser's environment (LANG=C.UTF-8: navigator.language is then "C";
 * under LANG=C WebKitGTK reports "en-US").
 * @param {{ env?: Record<string, string> }} [options]
 */
export async function startWebKit({ env = {} } = {}) {
  const binary = miniBrowser();
  const { display, x } = await startXvfb();

  /**
   * A WebKitWebDriver of its own and its one session (the driver allows one
   * at a time): a MiniBrowser whose website data is its own (ephemeral), so
   * that pages in sessions of their own share no storage.
   */
  async function startDriverSession() {
    const port = await freePort();
    const driver = child(DRIVER, [`--port=${port}`, '--host=local'], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, DISPLAY: display, JSC_useSharedArrayBuffer: '1', ...env },
    });
    const base = `http://127.0.0.1:${port}`;
    const stop = async () => {
      driver.kill();
      await driver.ended;
    };

    /** One WebDriver command: its value, or an error with the driver's message. */
    async function command(method, path, body) {
      const response = await fetch(base + path, {
        method,
        headers: { 'Content-Type': 'application/json; charset=utf-8' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const { value } = await response.json();
      if (!response.ok || value?.error) {
        throw new Error(`WebKitWebDriver ${method} ${path}: ${value?.error ?? response.status}: ${value?.message ?? ''}`);
      }
      return value;
    }

    try {
      await within(10_000, 'WebKitWebDriver did not answer', (async () => {
        for (;;) {
          if (driver.proc.exitCode !== null) throw new Error(`WebKitGTK: WebKitWebDriver exited: ${driver.stderr()}`);
          try {
            if ((await command('GET', '/status')).ready) return;
          } catch { /* not listening yet */ }
          await new Promise((r) => setTimeout(r, 100));
        }
      })());
    } catch (error) {
      await stop();
      throw error;
    }

    /**
     * One MiniBrowser session (a browser process of its own, its website data
     * its own: a page opened in a new session shares no storage).
     */
    async function startSession() {
      const session = await within(30_000, 'MiniBrowser did not start', command('POST', '/session', {
        capabilities: {
          alwaysMatch: {
            browserName: 'MiniBrowser',
            'webkitgtk:browserOptions': { binary, args: ['--automation'] },
          },
        },
      }));
      const sessionPath = `/session/${session.sessionId}`;
      const version = `WebKitGTK ${session.capabilities.browserVersion} (MiniBrowser)`;
      await command('POST', `${sessionPath}/timeouts`, { script: SCRIPT_TIMEOUT_MS, pageLoad: 60_000 });

      // One command at a time: a page's commands first make its window current.
      let queue = Promise.resolve();
      const first = await command('GET', `${sessionPath}/window`);
      let current = first;
      const serial = (task) => {
        const result = queue.then(task);
        queue = result.catch(() => {});
        return result;
      };
      const inWindow = (handle, task) => serial(async () => {
        if (current !== handle) {
          await command('POST', `${sessionPath}/window`, { handle });
          current = handle;
        }
        return task();
      });

      /** The WebDriver id of the index-th element matching `selector`. */
      async function element(selector, index) {
        const found = await command('POST', `${sessionPath}/elements`, { using: 'css selector', value: selector });
        if (!found[index]) throw new Error(`WebKitGTK: no element ${index} of ${selector} (${found.length} match)`);
        return Object.values(found[index])[0];
      }

      return {
        version,
        async open(url) {
          // A window of its own (a new tab is hidden: no requestAnimationFrame);
          // the session's first window stays open (a session ends with its last
          // window).
          const { handle } = await serial(() => command('POST', `${sessionPath}/window/new`, { type: 'window' }));
          await inWindow(handle, () => command('POST', `${sessionPath}/url`, { url }));
          return {
            /**
             * Runs `fn(arg)` (async or not) in the page and resolves with its
             * result. Both cross as JSON with the numbers JSON has no word for
             * (±Infinity, NaN, -0) spelled as { '#number': String(x) }, as
             * Playwright and Puppeteer carry them.
             */
            evaluate: (fn, arg) => inWindow(handle, async () => {
              const script = `const [text, done] = arguments;
                const tag = ${tagNumbers.toString()};
                const untag = ${untagNumbers.toString()};
                Promise.resolve().then(() => (${fn.toString()})(JSON.parse(text, untag))).then(
                  (value) => done(value === undefined ? { undefined: true } : { json: JSON.stringify(value, tag) ?? 'null' }),
                  (e) => done({ thrown: String(e?.stack ? e.message + '\\n' + e.stack : e) }));`;
              const out = await command('POST', `${sessionPath}/execute/async`,
                { script, args: [JSON.stringify(arg ?? null, tagNumbers)] });
              if (out?.thrown !== undefined) throw new Error(`in WebKitGTK's page: ${out.thrown}`);
              return out?.undefined ? undefined : JSON.parse(out.json, untagNumbers);
            }),
            goto: (to) => inWindow(handle, () => command('POST', `${sessionPath}/url`, { url: to })),
            reload: () => inWindow(handle, () => command('POST', `${sessionPath}/refresh`, {})),
            click: (selector, index) => inWindow(handle, async () =>
              command('POST', `${sessionPath}/element/${await element(selector, index)}/click`, {})),
            press: (key) => inWindow(handle, () => {
              const value = KEYS[key] ?? key;
              return command('POST', `${sessionPath}/actions`, {
                actions: [{ type: 'key', id: 'keyboard', actions: [{ type: 'keyDown', value }, { type: 'keyUp', value }] }],
              });
            }),
            mouseMove: (x, y) => inWindow(handle, () => command('POST', `${sessionPath}/actions`, {
              actions: [{ type: 'pointer', id: 'mouse', parameters: { pointerType: 'mouse' },
                actions: [{ type: 'pointerMove', x: Math.round(x), y: Math.round(y), origin: 'viewport' }] }],
            })),
            // The viewport as it is (a clip is not cropped: WebDriver takes the viewport or an element).
            screenshot: (path) => inWindow(handle, async () => writeFileSync(path,
              Buffer.from(await command('GET', `${sessionPath}/screenshot`), 'base64'))),
            elementScreenshot: (selector, index, path) => inWindow(handle, async () => writeFileSync(path,
              Buffer.from(await command('GET', `${sessionPath}/element/${await element(selector, index)}/screenshot`), 'base64'))),
            // The window sized so that its viewport (innerWidth × innerHeight) is `size`.
            setViewport: (size) => inWindow(handle, async () => {
              let rect = await command('POST', `${sessionPath}/window/rect`, size);
              const inner = await command('POST', `${sessionPath}/execute/sync`, { script: 'return [innerWidth, innerHeight]', args: [] });
              rect = { width: size.width + rect.width - inner[0], height: size.height + rect.height - inner[1] };
              await command('POST', `${sessionPath}/window/rect`, rect);
            }),
            close: () => inWindow(handle, async () => {
              await command('DELETE', `${sessionPath}/window`);
              // Commands need a current window (new windows too): the first one.
              await command('POST', `${sessionPath}/window`, { handle: first });
              current = first;
            }),
          };
        },
        async close() {
          await serial(() => command('DELETE', sessionPath)).catch(() => {});
        },
      };
    }
    const session = await startSession().catch(async (error) => { await stop(); throw error; });
    return { ...session, async close() { await session.close(); await stop(); } };
  }

  const main = await startDriverSession().catch(async (error) => { x.kill(); await x.ended; throw error; });
  // The sessions of newSession still open: closed with the browser (a test
  // that failed before closing its page leaves no driver behind).
  const open = new Set();
  return {
    version: main.version,
    open: main.open,
    async newSession() {
      const session = await startDriverSession();
      open.add(session);
      return { ...session, close: async () => { open.delete(session); await session.close(); } };
    },
    async close() {
      await Promise.all([main, ...open].map((s) => s.close().catch(() => {})));
      x.kill();
      await x.ended;
    },
  };
}
