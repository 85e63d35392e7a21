// Training in the browser: the tiny model of tests/node/tiny-model.mjs
// trained for 200 AdamW steps in each browser engine (single-threaded and
// threaded builds, the page cross-origin isolated). Both builds give the same
// losses, bit for bit, and the same bits as Node running the same GEMM
// kernel: plain Node 20 runs the SIMD128 one; Chromium picks the relaxed-SIMD
// one (f32x4.relaxed_madd, fused on x64; chosen by feature
// detection), which rounds the projections differently, so Node's losses
// then come from a child process started with --experimental-wasm-relaxed-simd
// (which makes Node pick it too). init({ gemmKernel: 'simd128' }) in Chromium
// gives plain Node's bits. The losses of the two kernels are printed with the
// first step where they part.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { init } from 'causal-attention';
import { nodeResult } from '../node/node-child.mjs';
import { trainTinyModel } from '../node/tiny-model.mjs';
import { openPage, useEngineAndServer } from './browser.mjs';
import { describeEngines } from './engines.mjs';

// The tiny model's losses in a Node child process with the given flags, and
// the GEMM kernel it ran.
function nodeLosses(flags) {
  const url = new URL('../node/tiny-model.mjs', import.meta.url).href;
  const child = `
    import { init } from 'causal-attention';
    import { trainTinyModel } from ${JSON.stringify(url)};
    const ca = await init({ build: 'single' });
    const losses = await trainTinyModel(ca);
    console.log(JSON.stringify({ gemmKernel: ca.gemmKernel, losses }));`;
  return nodeResult([...flags, '--input-type=module', '-e', child]);
}

const windows = (losses) => [0, 50, 100, 150].map((a) => losses.slice(a, a + 50).reduce((s, x) => s + x, 0) / 50);

describeEngines('training in the browser', (engine) => {
  const env = useEngineAndServer(engine);
  it('the tiny model: single and threads the same bits; Node\'s bits with the same GEMM kernel', async () => {
    const plainNode = await trainTinyModel(await init({ build: 'single' }));
    const { page, problems } = await openPage(env.browser, env.server.url);
    // The function's own source, evaluated in the page (it imports nothing).
    const inBrowser = await page.evaluate(`(async () => {
      const { init } = await import('/dist/index.mjs');
      const train = ${trainTinyModel.toString()};
      const out = {};
      for (const build of ['single', 'threads']) {
        const ca = await init({ build, threads: build === 'single' ? 1 : 2 });
        out[build] = { losses: await train(ca), threads: ca.threads, gemmKernel: ca.gemmKernel };
      }
      const forced = await init({ build: 'single', gemmKernel: 'simd128' });
      out.simd128 = { losses: await train(forced), gemmKernel: forced.gemmKernel };
      return out;
    })()`);
    assert.equal(inBrowser.threads.threads, 2);
    const browser = inBrowser.single.losses;
    assert.equal(browser.length, 200);
    assert.deepEqual(inBrowser.threads.losses, browser, 'threads build');
    inBrowser.gemmKernel = inBrowser.single.gemmKernel;
    assert.equal(inBrowser.threads.gemmKernel, inBrowser.gemmKernel);
    assert.equal(inBrowser.simd128.gemmKernel, 'simd128');
    assert.deepEqual(inBrowser.simd128.losses, plainNode, `init({ gemmKernel: 'simd128' }) in ${engine.name}: plain Node's bits`);
    const w = windows(browser);
    for (let i = 1; i < 4; i++) assert.ok(w[i] < w[i - 1], `window ${i}: ${w}`);
    assert.ok(w[3] < w[0] / 10);
    let node = { gemmKernel: 'simd128', losses: plainNode };
    if (inBrowser.gemmKernel !== 'simd128') node = await nodeLosses(['--experimental-wasm-relaxed-simd']);
    assert.equal(node.gemmKernel, inBrowser.gemmKernel, `Node runs the GEMM kernel ${engine.name} runs`);
    assert.deepEqual(browser, node.losses, `Node with the ${node.gemmKernel} GEMM kernel`);
    const part = plainNode.findIndex((x, i) => x !== browser[i]);
    console.log(`  ${engine.name} and Node (GEMM kernel ${inBrowser.gemmKernel}): loss ${browser[0].toFixed(4)} → ` +
      `${browser[199].toFixed(4)}; plain Node (simd128) ${plainNode[0].toFixed(4)} → ` +
      `${plainNode[199].toFixed(4)}, first step that differs: ${part < 0 ? 'none' : part}`);
    assert.deepEqual(problems, []);
    await page.close();
  });
});
