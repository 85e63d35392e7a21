// init(): each call resolves to a runtime of its own — its own generator
// (manualSeed) and its own lifetime (dispose) — over the engine that
// runtimes of the same options share. Two parts of an app that
// seed and build with an await in between (React StrictMode runs effects
// twice) each get the book's numbers; one part's dispose() ends only its
// own runtime; the last one's dispose() ends the engine.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { init } from 'causal-attention';

const INPUTS = new Float32Array([
  0.43, 0.15, 0.89, 0.55, 0.87, 0.66, 0.57, 0.85, 0.64,
  0.22, 0.58, 0.33, 0.77, 0.25, 0.10, 0.05, 0.80, 0.55,
]);
const DISPOSED = /^this causal-attention runtime has been disposed; call init\(\) for a new one$/;

/** One part of an app: init, seed, an await, build the book's layer, its first two outputs. */
async function part(options) {
  const ca = await init(options);
  await ca.manualSeed(123);
  await new Promise((resolve) => setTimeout(resolve, 1));
  const layer = await new ca.CausalAttention(3, 2, 6, 0.0);
  const output = await layer.forward(INPUTS, [6, 3]);
  return { ca, layer, first: [output[0].toFixed(4), output[1].toFixed(4)] };
}

for (const [name, options] of [['local', { build: 'single' }], ['worker mode', { worker: true, build: 'single' }]]) {
  describe(`init() gives each caller its own runtime (${name})`, () => {
    it("two parts seeding and building at once both get the book's numbers", async () => {
      const [a, b] = await Promise.all([part(options), part(options)]);
      assert.notEqual(a.ca, b.ca);
      assert.deepEqual(a.first, ['-0.4519', '0.2216']);
      assert.deepEqual(b.first, ['-0.4519', '0.2216']);
      await a.ca.dispose();
      await b.ca.dispose();
    });

    it("one runtime's dispose() ends it, its modules and its caches, and leaves the other's", async () => {
      const a = await part(options);
      const b = await part(options);
      const cacheA = await a.ca.createKVCache({ batch: 1, kvHeads: 1, headDim: 2, capacity: 4 });
      const cacheB = await b.ca.createKVCache({ batch: 1, kvHeads: 1, headDim: 2, capacity: 4 });
      await cacheB.append(new Float32Array([1, 2]), new Float32Array([3, 4]));
      await a.ca.dispose();
      await a.ca.dispose(); // harmless twice
      for (const call of [() => a.ca.rand([2]), () => a.layer.forward(INPUTS, [6, 3]),
        () => cacheA.append(new Float32Array(2), new Float32Array(2))]) {
        await assert.rejects(async () => call(), (e) => e instanceof TypeError && DISPOSED.test(e.message));
      }
      assert.equal(await cacheA.disposed, true, 'its caches were freed with it');
      // The other runtime, its module and its cache carry on.
      assert.deepEqual(Array.from((await b.layer.forward(INPUTS, [6, 3])).slice(0, 2), (y) => y.toFixed(4)),
        ['-0.4519', '0.2216']);
      const { output } = await cacheB.attention(new Float32Array([0.5, 0.5]), { heads: 1, queryLength: 1 });
      assert.deepEqual(Array.from(output), [3, 4]);
      await b.ca.dispose();
      await assert.rejects(async () => b.ca.rand([2]), (e) => e instanceof TypeError && DISPOSED.test(e.message));
      // After the last one, init() loads a fresh engine.
      const c = await part(options);
      assert.deepEqual(c.first, ['-0.4519', '0.2216']);
      await c.ca.dispose();
    });
  });
}
