// init({ worker: true }): the engine in a worker_threads worker behind a
// generic proxy (bindings/remote/remote.mjs). Everything is compared with the same
// calls on a local runtime: results bit-identical, errors of the same class
// with the same message.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { init } from 'causal-attention';

const root = join(dirname(fileURLToPath(import.meta.url)), '../..');

const INPUTS = new Float32Array([
  0.43, 0.15, 0.89, 0.55, 0.87, 0.66, 0.57, 0.85, 0.64,
  0.22, 0.58, 0.33, 0.77, 0.25, 0.10, 0.05, 0.80, 0.55,
]);
const SHAPE = { batch: 1, heads: 2, queryLength: 5, headDim: 3 };
const n = 2 * 5 * 3;
const q = Float32Array.from({ length: n }, (_, i) => Math.sin(i));
const k = Float32Array.from({ length: n }, (_, i) => Math.cos(i * 0.7));
const v = Float32Array.from({ length: n }, (_, i) => (i % 7) / 7);

let local;
let remote;
before(async () => {
  local = await init({ build: 'threads', threads: 2 });
  remote = await init({ worker: true, build: 'threads', threads: 2 });
});
after(() => remote?.dispose());

/** The rejection of `promise` (fails when it resolves). */
async function rejection(promise) {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  assert.fail('expected a rejection');
}

/** The exception of `fn` (fails when it returns). */
function thrown(fn) {
  try {
    fn();
  } catch (error) {
    return error;
  }
  assert.fail('expected an exception');
}

describe('worker mode', () => {
  it('reports the build the worker runs, synchronously', () => {
    assert.equal(remote.build, 'threads');
    assert.equal(remote.threads, 2);
    assert.equal(remote.target, 'WASM');
    assert.ok(['simd128', 'relaxed-simd'].includes(remote.gemmKernel), remote.gemmKernel);
    assert.equal(typeof remote.memoryBytes, 'number');
  });

  it("computes the book's CausalAttention numbers, like the local runtime", async () => {
    await remote.manualSeed(123);
    local.manualSeed(123);
    const layer = await new remote.CausalAttention(3, 2, 6, 0.0);
    const expected = new local.CausalAttention(3, 2, 6, 0.0).forward(INPUTS, [6, 3]);
    const output = await layer.forward(INPUTS, [6, 3]);
    assert.ok(output instanceof Float32Array);
    assert.deepEqual(output, expected);
    assert.equal(output[0].toFixed(4), '-0.4519');
    assert.equal(output[1].toFixed(4), '0.2216');
  });

  it('returns attention results bit-identical to the local runtime, weights included', async () => {
    const options = { ...SHAPE, returnWeights: true, dropout: 0.3, training: true, seed: 99 };
    const a = await remote.attention(q, k, v, options);
    const b = local.attention(q, k, v, options);
    assert.deepEqual(a, b);
  });

  it('copies arguments (the caller keeps them) and writes an out array back into the caller\'s', async () => {
    const out = new Float32Array(n).fill(7);
    const result = await remote.attention(q, k, v, { ...SHAPE, out });
    assert.equal(q.length, n, 'q is not detached');
    assert.equal(result.output, out, 'the result holds the caller\'s array');
    assert.deepEqual(out, local.attention(q, k, v, SHAPE).output);
  });

  it('keeps module objects in the worker behind handles', async () => {
    await remote.manualSeed(7);
    const layer = await new remote.MultiHeadAttentionWrapper(3, 2, 6, 0.0, 2);
    assert.equal(layer.dIn, 3);
    assert.equal(layer.outputDim, 4);
    assert.equal(layer.training, true);
    assert.equal(await layer.eval(), layer, 'a method returning this gives the same handle');
    assert.equal(layer.training, false, 'the snapshot follows the call');

    const heads = await layer.heads;
    assert.equal(heads.length, 2);
    assert.equal(heads[1].dOut, 2);
    const weight = await heads[1].W_query.weight;
    local.manualSeed(7);
    const mirror = new local.MultiHeadAttentionWrapper(3, 2, 6, 0.0, 2);
    assert.deepEqual(weight, mirror.heads[1].W_query.weight);
    // A read is a copy: changing it changes nothing in the worker.
    weight.fill(0);
    assert.deepEqual(await heads[1].W_query.weight, mirror.heads[1].W_query.weight);
    assert.deepEqual(await heads[1].W_query.forward(INPUTS, [6, 3]),
      mirror.heads[1].W_query.forward(INPUTS, [6, 3]));
    assert.deepEqual(await layer.stateDict(), mirror.stateDict());

    // A handle is an argument like any other: the wrapper's head goes back in.
    await remote.manualSeed(8);
    const other = await new remote.CausalAttention(3, 2, 6, 0.0);
    await other.loadStateDict(await heads[0].stateDict());
    assert.deepEqual(await other.forward(INPUTS, [6, 3]), await heads[0].forward(INPUTS, [6, 3]));
  });

  it('rejects with the local error class and message', async () => {
    const cases = [
      (ca) => ca.attention(new Float32Array(3), k, v, SHAPE),
      (ca) => ca.attention(q, k, v, { ...SHAPE, head: 2 }),
      (ca) => ca.attention(q, k, v, { ...SHAPE, causal: 'top-right' }),
      (ca) => ca.manualSeed(-1),
      (ca) => new ca.CausalAttention(0, 2, 6, 0.0),
      (ca) => new ca.MultiHeadAttention(3, 3, 6, 0.0, 2),
      (ca) => ca.rand([2, 0]),
    ];
    for (const make of cases) {
      const expected = thrown(() => make(local));
      const actual = await rejection(make(remote));
      assert.equal(actual.constructor, expected.constructor, String(make));
      assert.equal(actual.message, expected.message, String(make));
    }
    const layer = await new remote.CausalAttention(3, 2, 6, 0.0);
    const error = await rejection(layer.forward(INPUTS, [7, 3]));
    assert.ok(error instanceof RangeError);
    assert.match(error.message, /at most contextLength 6, got 7/);
    // The runtime still computes after errors.
    assert.deepEqual(await remote.attention(q, k, v, SHAPE), local.attention(q, k, v, SHAPE));
  });

  it('rejects awkward arguments as the local runtime does: circular, 20 000 deep, detached, symbols', async () => {
    const circular = { ...SHAPE };
    circular.self = circular;
    const loop = [];
    loop.push(loop);
    let deep = [];
    for (let i = 0; i < 20000; i++) deep = [deep];
    let deepObject = {};
    for (let i = 0; i < 20000; i++) deepObject = { next: deepObject };
    const detached = new Float32Array(n);
    structuredClone(detached.buffer, { transfer: [detached.buffer] });
    const cases = [
      (ca) => ca.attention(q, k, v, circular),
      (ca) => ca.attention(q, k, v, { ...SHAPE, seed: loop }),
      (ca) => ca.attention(q, k, v, deep),
      (ca) => ca.attention(q, k, v, { ...SHAPE, causal: deepObject }),
      (ca) => ca.attention(detached, k, v, SHAPE),
      (ca) => ca.attention(q, k, v, { ...SHAPE, out: detached }),
      (ca) => ca.attention(q, k, v, { ...SHAPE, out: detached.buffer }),
      (ca) => ca.manualSeed(Symbol('seed')),
      (ca) => ca.rand([2, Symbol.for('dim')]),
    ];
    for (const make of cases) {
      const expected = thrown(() => make(local));
      const actual = await rejection(make(remote));
      assert.equal(actual.constructor, expected.constructor, `${make}: ${actual.message}`);
      assert.equal(actual.message, expected.message, String(make));
    }
    // Shared and circular containers arrive shared and circular: a state
    // dict whose entries are one array loads as locally.
    const layer = await new remote.CausalAttention(3, 2, 6, 0.0);
    const one = Array(6).fill(0.5);
    const dict = { 'W_query.weight': one, 'W_key.weight': one, 'W_value.weight': one };
    await layer.loadStateDict(dict);
    local.manualSeed(1);
    const mirror = new local.CausalAttention(3, 2, 6, 0.0);
    mirror.loadStateDict(dict);
    assert.deepEqual(await layer.forward(INPUTS, [6, 3]), mirror.forward(INPUTS, [6, 3]));
    assert.deepEqual(await remote.attention(q, k, v, SHAPE), local.attention(q, k, v, SHAPE));
  });

  it('refuses, by name, a handle of another worker-mode runtime and a property not awaited', async () => {
    const other = await init({ worker: true, build: 'single' });
    try {
      const foreign = await new other.CausalAttention(3, 2, 6, 0.0);
      const mine = await new remote.CausalAttention(3, 2, 6, 0.0);
      const error = await rejection(mine.loadStateDict(foreign));
      assert.ok(error instanceof TypeError);
      assert.equal(error.message, 'worker mode: loadStateDict: argument 1 cannot be sent to the worker (a handle ' +
        'of another worker-mode runtime (objects stay in the worker that made them)): pass numbers, strings, ' +
        'typed arrays, plain objects and arrays of them, or objects this runtime returned');
      const optimizer = await rejection(new remote.optim.SGD([mine, foreign]));
      assert.match(optimizer.message, /^worker mode: optim\.SGD: argument 1\[1\] cannot be sent .*a handle of another worker-mode runtime/);
      const unawaited = await rejection(new remote.optim.SGD([mine.W_query]));
      assert.match(unawaited.message, /^worker mode: optim\.SGD: argument 1\[0\] cannot be sent to the worker \(a property of a worker object that was not awaited \(await it first\)\)/);
      // Both runtimes still compute.
      assert.deepEqual(await other.attention(q, k, v, SHAPE), local.attention(q, k, v, SHAPE));
      assert.deepEqual(await remote.attention(q, k, v, SHAPE), local.attention(q, k, v, SHAPE));
    } finally {
      await other.dispose();
    }
  });

  it('answers the names JS and libraries probe (toJSON, toString, constructor...) as a plain object, with no remote call', () => {
    // A child process: a stray remote call that rejects would be an
    // unhandled rejection, which ends it with code 1.
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', `
      import { init } from 'causal-attention';
      const ca = await init({ worker: true, build: 'single' });
      const layer = await new ca.CausalAttention(3, 2, 6, 0.0);
      const seen = {
        json: JSON.stringify({ layer }),
        jsonOfProperty: JSON.stringify({ w: layer.W_query }),
        string: String(layer),
        template: \`\${layer}\`,
        plus: '' + layer.W_query.weight,
        toJSON: typeof layer.toJSON,
        inspect: typeof layer.inspect,
        asymmetricMatch: typeof layer.asymmetricMatch,
        constructor: layer.constructor === Object,
        iterator: typeof layer[Symbol.iterator],
        toPrimitive: typeof layer[Symbol.toPrimitive],
        hasOwn: layer.hasOwnProperty('dIn'),
        runtime: String(ca),
      };
      await new Promise((resolve) => setTimeout(resolve, 200)); // any stray rejection surfaces
      seen.stillComputes = (await layer.forward(new Float32Array(18).fill(0.5), [6, 3])).length;
      await ca.dispose();
      console.log(JSON.stringify(seen));
    `], { cwd: root, encoding: 'utf8', timeout: 60000 });
    assert.equal(r.status, 0, r.stderr);
    const seen = JSON.parse(r.stdout);
    // JSON holds what a plain object's own properties would: the snapshot.
    const { layer } = JSON.parse(seen.json);
    assert.deepEqual([layer.training, layer.dIn, layer.dOut, layer.contextLength], [true, 3, 2, 6]);
    assert.equal(seen.jsonOfProperty, '{}');
    assert.equal(seen.string, '[object causal-attention worker handle]');
    assert.equal(seen.template, seen.string);
    assert.match(seen.plus, /^function/);
    assert.deepEqual([seen.toJSON, seen.inspect, seen.asymmetricMatch, seen.iterator, seen.toPrimitive],
      ['undefined', 'undefined', 'undefined', 'undefined', 'undefined']);
    assert.equal(seen.constructor, true);
    assert.equal(seen.hasOwn, true);
    assert.equal(seen.runtime, '[object causal-attention worker handle]');
    assert.equal(seen.stillComputes, 12);
  });

  it('a rejected backward keeps its forward, as locally', async () => {
    await remote.manualSeed(12);
    local.manualSeed(12);
    const layer = await new remote.CausalAttention(3, 2, 6, 0.0);
    const mirror = new local.CausalAttention(3, 2, 6, 0.0);
    const g = Float32Array.from({ length: 12 }, (_, i) => Math.cos(i));
    await layer.forward(INPUTS, [6, 3]);
    mirror.forward(INPUTS, [6, 3]);
    const error = await rejection(layer.backward(new Float32Array(13)));
    assert.ok(error instanceof RangeError);
    assert.equal(error.message, thrown(() => mirror.backward(new Float32Array(13))).message);
    assert.deepEqual(await layer.backward(g), mirror.backward(g));
    assert.deepEqual(await layer.gradients(), mirror.gradients());
  });

  it('a KV cache of sequences of their own lengths and a window cache work as locally', async () => {
    for (const layout of [{ batch: 3, kvHeads: 1, headDim: 4, capacity: 12 }, { batch: 3, kvHeads: 1, headDim: 4, capacity: 6, window: 4 }]) {
      const cache = await remote.createKVCache(layout);
      const mirror = local.createKVCache(layout);
      assert.equal(cache.window, mirror.window);
      const rows = (n, seed) => Float32Array.from({ length: n * 4 }, (_, i) => Math.sin(seed + i));
      for (const c of [cache, mirror]) {
        await c.append(rows(3, 1), rows(3, 2));
        await c.append(rows(2, 3), rows(2, 4), { sequences: [2, 0] });
        await c.copySequence(0, 1, { length: 2 });
        for (let t = 0; t < 5; t++) await c.append(rows(3, 5 + t), rows(3, 6 + t));
        await c.truncate(6, { sequences: Int32Array.of(1) });
        await c.append(rows(3, 11), rows(3, 12));
      }
      assert.deepEqual(await cache.lengths, mirror.lengths);
      assert.deepEqual(await cache.lengths, Int32Array.of(8, 7, 8));
      const query = rows(3 * 2, 9);
      assert.deepEqual(await cache.attention(query, { heads: 2, queryLength: 1 }),
        mirror.attention(query, { heads: 2, queryLength: 1 }));
      const error = await rejection(cache.copySequence(1, 1));
      assert.ok(error instanceof RangeError);
      assert.equal(error.message, thrown(() => mirror.copySequence(1, 1)).message);
      await cache.dispose();
      mirror.dispose();
    }
  });

  it('a disposed KV cache: its layout still reads synchronously, length and methods reject as locally', async () => {
    const layout = { batch: 1, kvHeads: 1, headDim: 4, capacity: 8 };
    const cache = await remote.createKVCache(layout);
    const mirror = local.createKVCache(layout);
    await cache.dispose();
    mirror.dispose();
    assert.equal(cache.disposed, true);
    assert.deepEqual([cache.capacity, cache.batch, cache.kvHeads, cache.headDim, cache.valueDim], [8, 1, 1, 4, 4]);
    const expected = thrown(() => mirror.length);
    for (const call of [async () => cache.length, () => cache.append(new Float32Array(4), new Float32Array(4))]) {
      const error = await rejection(call());
      assert.ok(error instanceof TypeError);
      assert.equal(error.message, expected.message);
    }
  });

  it('says what it cannot do: assignments, functions as arguments, unknown methods', async () => {
    const layer = await new remote.CausalAttention(3, 2, 6, 0.0);
    const assignment = thrown(() => { layer.dropout = 0.5; });
    assert.ok(assignment instanceof TypeError);
    assert.match(assignment.message, /dropout cannot be assigned/);
    const fn = await rejection(remote.attention(q, k, v, { ...SHAPE, out: () => {} }));
    assert.ok(fn instanceof TypeError);
    assert.match(fn.message, /attention: argument 4\.out cannot be sent to the worker \(a function\)/);
    const unknown = await rejection(remote.attentionn(q, k, v, SHAPE));
    assert.ok(unknown instanceof TypeError);
    assert.equal(unknown.message, 'attentionn is not a function');
    assert.equal(await layer.contextLength, 6);
    assert.equal(await remote.noSuchProperty, undefined);
  });

  it('checks the worker and timeout options like the others', async () => {
    for (const [options, Err, message] of [
      [{ worker: 'yes' }, TypeError, 'init options.worker must be true or false, got the string "yes"'],
      [{ timeout: 0 }, RangeError, 'init options.timeout must be a number of milliseconds > 0 (or Infinity), got 0'],
      [{ timeout: '5' }, TypeError, /init options\.timeout must be a number of milliseconds > 0 \(or Infinity\), got the string "5"/],
      [{ worker: true, threads: 17 }, RangeError, 'init options.threads must be at most 16, got 17'],
    ]) {
      const error = await rejection(init(options));
      assert.ok(error instanceof Err, JSON.stringify(options));
      if (typeof message === 'string') assert.equal(error.message, message);
      else assert.match(error.message, message);
    }
  });

  it('gives each init() a runtime of its own in the worker those options share', async () => {
    const other = await init({ worker: true, build: 'threads', threads: 2 });
    assert.notEqual(other, remote);
    await other.manualSeed(123);
    await remote.manualSeed(5);
    await other.rand([3]); // draws from its own generator only
    local.manualSeed(5);
    assert.deepEqual(await remote.rand([2]), local.rand([2]));
    // [Symbol.dispose] of one of two disposes that one, not the shared worker.
    other[Symbol.dispose]();
    await assert.rejects(async () => other.rand([2]), { name: 'TypeError', message: /has been disposed/ });
    assert.deepEqual(await remote.attention(q, k, v, SHAPE), local.attention(q, k, v, SHAPE));
  });

  it('releases dropped handles in the worker without breaking live ones (garbage collection forced)', () => {
    // A child process with --expose-gc: handles are dropped and collected
    // while the same objects keep coming back (their ids in flight).
    const r = spawnSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', `
      import { init } from 'causal-attention';
      const ca = await init({ worker: true, build: 'single' });
      const x = new Float32Array(18).fill(0.25);
      const keep = await new ca.CausalAttention(3, 2, 6, 0.0);
      const expected = await keep.forward(x, [6, 3]);
      let finalized = 0;
      const registry = new FinalizationRegistry(() => { finalized++; });
      for (let i = 0; i < 300; i++) {
        registry.register(await new ca.MultiHeadAttention(3, 2, 6, 0.0, 2), i);
        registry.register(await keep.W_query, i); // the same Linear each time: one id, sent again and again
        if ((await keep.eval()) !== keep) throw new Error('a live handle changed');
        if (i % 25 === 0) {
          globalThis.gc();
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      }
      const output = await keep.forward(x, [6, 3]);
      const weight = await (await keep.W_query).weight;
      console.log(JSON.stringify({ finalized, same: output.join() === expected.join(), weight: weight.length }));
    `], { cwd: root, encoding: 'utf8', timeout: 60000 });
    assert.equal(r.status, 0, r.stderr);
    const out = JSON.parse(r.stdout);
    assert.ok(out.finalized > 100, `handles were collected (${out.finalized}), so releases were sent`);
    assert.equal(out.same, true);
    assert.equal(out.weight, 6);
  });

  it('init() while the last dispose() is under way starts a new worker, which the next init() shares', async () => {
    const ca = await init({ worker: true, build: 'single', gemmKernel: 'simd128' });
    const disposing = ca.dispose();
    const next = await init({ worker: true, build: 'single', gemmKernel: 'simd128' });
    await disposing;
    assert.notEqual(next, ca);
    assert.deepEqual(await next.attention(q, k, v, SHAPE), local.attention(q, k, v, SHAPE));
    // The old worker closing did not forget its successor: a third runtime
    // opens in next's worker, and disposing it leaves next working.
    const third = await init({ worker: true, build: 'single', gemmKernel: 'simd128' });
    await third.dispose();
    assert.deepEqual(await next.attention(q, k, v, SHAPE), local.attention(q, k, v, SHAPE));
    await next.dispose();
  });

  it('rejects every call after dispose with the local message', async () => {
    const ca = await init({ worker: true, build: 'single', gemmKernel: 'simd128' });
    const layer = await new ca.CausalAttention(3, 2, 6, 0.0);
    assert.equal(ca.build, 'single');
    assert.equal(ca.gemmKernel, 'simd128');
    await ca.dispose();
    await ca.dispose(); // harmless twice
    const localCa = await init({ build: 'single' });
    const expected = thrown(() => { localCa.dispose(); localCa.rand(2); });
    for (const call of [() => ca.rand(2), () => layer.forward(INPUTS, [6, 3])]) {
      const error = await rejection(call());
      assert.ok(error instanceof TypeError);
      assert.equal(error.message, expected.message);
    }
    assert.notEqual(await init({ worker: true, build: 'single' }), ca, 'a new init() starts a new worker');
  });
});
