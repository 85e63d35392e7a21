// The demo page in every engine of tests/browser/engines.mjs, started under
// LANG=C.UTF-8 (WebKitGTK then reports navigator.language "C", which Intl
// rejects): it never stays on "Loading…". Served as the demo is, it starts,
// with its charts; served with a Content-Security-Policy without
// 'wasm-unsafe-eval', with the training worker missing, or with the
// package's pthread worker missing, it shows a message saying what failed.
// (Chromium-only cases, with requests rewritten by Playwright:
// page-resilience.test.mjs.)
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { serverWith } from './browser.mjs';
import { ENGINES } from './engines.mjs';

/**
 * In the page: waits until each element of `want` ({ id: regex source })
 * shows text that matches, is visible, and no longer starts with
 * "Loading", and each selector of `present` matches; resolves with the
 * texts either way (the test asserts), and with what never came.
 */
async function waitForTexts({ want, present, timeout }) {
  const read = () => Object.fromEntries(Object.keys(want).map((id) => {
    const el = document.getElementById(id);
    const visible = !!el && el.getClientRects().length > 0 && getComputedStyle(el).visibility !== 'hidden';
    return [id, { text: el?.textContent ?? null, visible }];
  }));
  const unmet = (now) => [...Object.entries(want).filter(([id, source]) =>
    !now[id].visible || !new RegExp(source).test(now[id].text ?? '') || /^Loading/.test(now[id].text)).map(([id]) => id),
  ...present.filter((selector) => !document.querySelector(selector))];
  const end = performance.now() + timeout;
  let now = read();
  while (unmet(now).length && performance.now() < end) {
    await new Promise((r) => setTimeout(r, 250));
    now = read();
  }
  return { texts: now, unmet: unmet(now), language: navigator.language };
}

const CSP_ERROR = "Content-Security-Policy does not allow WebAssembly\\. Add 'wasm-unsafe-eval'";
// [name, the server's change, the texts wanted, the selectors wanted]
const SCENARIOS = [
  ['served as the demo: it starts, its charts drawn', {}, {
    engine: '^Engine: ', 'train-status': '^Step 0 ',
  }, ['body[data-ready="true"]', '#learn[data-ready="true"]', '#loss-chart .uplot']],
  ['a CSP without \'wasm-unsafe-eval\': the engine line and the Learn section say so', {
    csp: (v) => v.replace(" 'wasm-unsafe-eval'", ''),
  }, {
    engine: `^Failed to start: causal-attention: the page's ${CSP_ERROR}`,
    'learn-error': `^Training stopped: The engine did not load: .*${CSP_ERROR}`,
  }],
  ['the training worker missing (404): the Learn section says so, the pipeline works', {
    missing: ['/learn/model/worker.mjs'],
  }, {
    engine: '^Engine: ', 'learn-error': '^The training worker failed: ',
  }],
  ['the package\'s pthread worker missing (404): the engine line names it', {
    missing: ['/dist/wasm/causal_attention_threads.worker.mjs'],
  }, {
    engine: '^Failed to start: causal-attention: the pthread worker \\S+/causal_attention_threads\\.worker\\.mjs failed: HTTP 404',
  }],
];

for (const engine of ENGINES) {
  describe(`the demo page in ${engine.name}, never stuck on "Loading…"`, { skip: engine.unavailable && `${engine.name}: ${engine.unavailable}` }, () => {
    let running;
    before(async () => {
      running = await engine.start({ env: { LANG: 'C.UTF-8', LC_ALL: '' } });
    });
    after(() => running?.close());
    for (const [name, change, want, present = []] of SCENARIOS) {
      it(name, async (t) => {
        const server = await serverWith(change);
        const page = await running.open(server.url);
        try {
          const got = await page.evaluate(waitForTexts, { want, present, timeout: 60000 });
          t.diagnostic(`${running.version}, navigator.language ${JSON.stringify(got.language)}: ` +
            Object.entries(got.texts).map(([id, { text }]) => `#${id} "${text?.slice(0, 120)}"`).join(', '));
          for (const what of got.unmet) {
            if (!(what in want)) assert.fail(`nothing matches ${what} within 60 s`);
            const { text, visible } = got.texts[what];
            assert.fail(`#${what} shows ${JSON.stringify(text)}${visible ? '' : ' (not visible)'}, not /${want[what]}/`);
          }
        } finally {
          await page.close();
          await server.close();
        }
      });
    }
  });
}
