// Answers that could come out silently wrong: a parameter set to an array
// of the wrong kind or length, a batch too large for a spread into
// Math.max, two outputs in one buffer, state dicts of the wrong shape. Each
// case asserts the refusal by class and message, or the right answer.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { init } from 'causal-attention';
import { randomArray } from './js-reference.mjs';

const ca = await init();

describe('parameters are checked where they are set', () => {
  it('GroupedQueryAttention.sinks takes only a Float32Array of numHeads values, and the module keeps working', () => {
    ca.manualSeed(1);
    const gqa = new ca.GroupedQueryAttention(16, 16, 4, 2, { contextLength: 8, sinks: true }).eval();
    gqa.sinks.set([0.5, -1, 2, 0]);
    const x = Float32Array.from(randomArray(3 * 16, 2));
    const before = gqa.forward(x, [1, 3, 16]);
    assert.throws(() => { gqa.sinks = new Float32Array([5]); }, {
      name: 'RangeError', message: 'GroupedQueryAttention.sinks must have length 4 (shape [4]), got length 1',
    });
    assert.throws(() => { gqa.sinks = new Float64Array(4); }, { name: 'TypeError', message: /^GroupedQueryAttention\.sinks must be a Float32Array/ });
    assert.throws(() => { gqa.sinks = null; }, { name: 'TypeError', message: /^GroupedQueryAttention\.sinks must be a Float32Array/ });
    assert.throws(() => { gqa.sinks = new Float32Array(1000); }, { name: 'RangeError' });
    // An unrelated call that leaves other data in wasm memory changes nothing.
    ca.attention(new Float32Array(64).fill(3), new Float32Array(64).fill(3), new Float32Array(64).fill(3),
      { batch: 1, heads: 1, queryLength: 4, keyLength: 4, headDim: 16 });
    assert.deepEqual(gqa.forward(x, [1, 3, 16]), before);
    const replaced = new Float32Array([0.5, -1, 2, 0]);
    gqa.sinks = replaced;
    assert.equal(gqa.sinks, replaced, 'a valid array is taken as it is (as PyTorch keeps the tensor)');
    assert.deepEqual(gqa.forward(x, [1, 3, 16]), before);
  });

  it('a module built without sinks or bias refuses them instead of reading them', () => {
    ca.manualSeed(1);
    const gqa = new ca.GroupedQueryAttention(16, 16, 4, 2, { contextLength: 8 });
    assert.equal(gqa.sinks, null);
    assert.throws(() => { gqa.sinks = new Float32Array(4); }, {
      name: 'TypeError', message: /^GroupedQueryAttention\.sinks cannot be set: it was constructed without options\.sinks/,
    });
    gqa.sinks = null;
    const linear = new ca.Linear(3, 2, false);
    assert.throws(() => { linear.bias = new Float32Array(2); }, { name: 'TypeError', message: /^Linear\.bias cannot be set/ });
    assert.equal(linear.bias, null);
  });

  it('the projections of the book modules: weight and bias by length and kind', () => {
    ca.manualSeed(123);
    const mha = new ca.MultiHeadAttention(3, 2, 6, 0.0, 2, true);
    const x = Float32Array.from(randomArray(6 * 3, 5));
    const before = mha.forward(x, [6, 3]);
    assert.throws(() => { mha.W_query.weight = new Float32Array(3); }, {
      name: 'RangeError', message: 'Linear.weight must have length 6 (shape [2, 3]), got length 3',
    });
    assert.throws(() => { mha.W_query.bias = [0, 0]; }, { name: 'TypeError', message: /^Linear\.bias must be a Float32Array/ });
    assert.throws(() => { mha.outProj.bias = new Float32Array(3); }, { name: 'RangeError' });
    assert.deepEqual(mha.forward(x, [6, 3]), before);
    assert.deepEqual(mha.W_query.parameters().map((p) => p.shape), [[2, 3], [2]]);
  });
});

describe('state dicts are checked whole', () => {
  it('a nested array (tensor.tolist()) must have the parameter\'s shape, not only its count', () => {
    ca.manualSeed(123);
    const linear = new ca.Linear(3, 2);
    const w = Array.from(linear.weight);
    const rows = [w.slice(0, 3), w.slice(3, 6)];               // [2, 3]: PyTorch's layout
    const transposed = [0, 1, 2].map((i) => [rows[0][i], rows[1][i]]);  // [3, 2]
    assert.throws(() => linear.loadStateDict({ weight: transposed, bias: Array.from(linear.bias) }), {
      name: 'RangeError',
      message: "loadStateDict: 1 problem: size mismatch for 'weight': copying a param with shape [3, 2] " +
        'from the state dict, the shape in the current model is [2, 3]',
    });
    assert.throws(() => linear.loadStateDict({ weight: [[1, 2, 3], [4, 5], [6]], bias: [0, 0] }), {
      name: 'RangeError', message: /'weight' is a nested array whose rows differ in length or depth/,
    });
    assert.deepEqual(Array.from(linear.weight), w, 'nothing loaded');
    linear.loadStateDict({ weight: rows.map((r) => r.map((v) => v * 2)), bias: [1, 2] });
    assert.deepEqual(Array.from(linear.weight), w.map((v) => Math.fround(v * 2)));
    linear.loadStateDict({ weight: w, bias: [1, 2] });         // flat arrays: by length, as before
    assert.deepEqual(Array.from(linear.weight), w);
  });

  it('an optimizer loads its own dict and PyTorch\'s (with its flags), and refuses another optimizer\'s', () => {
    ca.manualSeed(1);
    const linear = new ca.Linear(3, 2);
    const sgd = new ca.optim.SGD(linear, { lr: 0.1, momentum: 0.9 });
    const saved = sgd.stateDict();
    const torchLike = structuredClone(saved);
    Object.assign(torchLike.param_groups[0], { maximize: false, foreach: null, differentiable: false, fused: null });
    const again = new ca.optim.SGD(linear).loadStateDict(torchLike);
    assert.equal(again.momentum, 0.9);
    const adamW = new ca.optim.AdamW(linear);
    assert.throws(() => new ca.optim.SGD(linear).loadStateDict(adamW.stateDict()), { name: 'RangeError', message: /is missing momentum/ });
    assert.throws(() => adamW.loadStateDict(saved), { name: 'RangeError', message: /is missing betas, eps/ });
  });
});

describe('outputs', () => {
  const shape = { batch: 1, heads: 1, queryLength: 3, keyLength: 3, headDim: 4, returnWeights: true };
  const [q, k, v] = [1, 2, 3].map((s) => Float32Array.from(randomArray(12, s)));

  it('out and weightsOut sharing memory is a RangeError; disjoint views of one buffer work', () => {
    const both = new Float32Array(12);
    assert.throws(() => ca.attention(q, k, v, { ...shape, out: both, weightsOut: both.subarray(0, 9) }), {
      name: 'RangeError', message: /^options\.out and options\.weightsOut must not share memory/,
    });
    const buffer = new Float32Array(21);
    const overlapping = buffer.subarray(11, 20);
    assert.throws(() => ca.attention(q, k, v, { ...shape, out: buffer.subarray(0, 12), weightsOut: overlapping }), { name: 'RangeError' });
    const expected = ca.attention(q, k, v, shape);
    const result = ca.attention(q, k, v, { ...shape, out: buffer.subarray(0, 12), weightsOut: buffer.subarray(12, 21) });
    assert.deepEqual(result.output, expected.output);
    assert.deepEqual(result.weights, expected.weights);
  });
});

describe('no spread of user-sized arrays', () => {
  it('a cache of 200 000 sequences reports its length and attends', () => {
    const batch = 200_000;
    const cache = ca.createKVCache({ batch, kvHeads: 1, headDim: 1, capacity: 2 });
    assert.equal(cache.length, 0);
    cache.append(new Float32Array(batch).fill(1), new Float32Array(batch).fill(2));
    assert.equal(cache.length, 1);
    const { output } = cache.attention(new Float32Array(batch).fill(1), { heads: 1, queryLength: 1 });
    assert.equal(output.length, batch);
    assert.ok(output.every((x) => x === 2));
    cache.dispose();
  });
});

describe('saved tensors are the module\'s own', () => {
  it('changing the mask after a training forward changes no gradient', () => {
    const T = 5;
    const x = Float32Array.from(randomArray(T * 4, 9));
    const g = Float32Array.from(randomArray(T * 4, 10));
    const mask = Float32Array.from(randomArray(T * T, 11), (r) => 3 * r);
    const gradX = (mutate) => {
      ca.manualSeed(123);
      const mha = new ca.MultiHeadAttention(4, 4, T, 0.0, 2);
      const m = mask.slice();
      mha.forward(x, [T, 4], { mask: m, maskShape: [T, T] });
      mutate(m);
      return mha.backward(g);
    };
    const kept = gradX(() => {});
    assert.deepEqual(gradX((m) => m.fill(0)), kept);
    assert.notDeepEqual(gradX(() => {}), (() => {
      ca.manualSeed(123);
      const mha = new ca.MultiHeadAttention(4, 4, T, 0.0, 2);
      mha.forward(x, [T, 4], { mask: new Float32Array(T * T), maskShape: [T, T] });
      return mha.backward(g);
    })(), 'the mask matters to the gradient (the check can fail)');
  });
});

describe('messages name sizes, not Infinity or NaN', () => {
  it('a maskShape too large for any array', () => {
    const q = new Float32Array(12);
    assert.throws(() => ca.attention(q, q, q, {
      batch: 1, heads: 1, queryLength: 3, keyLength: 3, headDim: 4,
      mask: new Float32Array(9), maskShape: [2 ** 20, 2 ** 20, 2 ** 20, 2 ** 20],
    }), {
      name: 'RangeError',
      message: 'options.mask would need maskShape [1048576, 1048576, 1048576, 1048576] elements, more than 2^53: no array can be that long',
    });
  });
});

describe('worker mode reads as locally', () => {
  it("a disposed cache's length throws the local TypeError synchronously, not a handle", async () => {
    const remote = await init({ worker: true, build: 'single' });
    try {
      const layout = { batch: 1, kvHeads: 1, headDim: 4, capacity: 8 };
      const cache = await remote.createKVCache(layout);
      const mirror = ca.createKVCache(layout);
      await cache.dispose();
      mirror.dispose();
      let local;
      try { mirror.length; } catch (error) { local = error; }
      assert.ok(local instanceof TypeError);
      assert.throws(() => cache.length, { name: 'TypeError', message: local.message });
    } finally {
      await remote.dispose();
    }
  });
});

describe('sizes and hyperparameters are checked where they are set', () => {
  it("a module's sizes and submodules are fixed at construction (a changed one read past the weights)", () => {
    ca.manualSeed(1);
    const linear = new ca.Linear(3, 2);
    assert.throws(() => { linear.inFeatures = 6; }, {
      name: 'TypeError', message: 'Linear.inFeatures is fixed when the module is constructed (3), got 6: construct a new module instead',
    });
    const embedding = new ca.Embedding(4, 2);
    assert.throws(() => { embedding.numEmbeddings = 400; }, { name: 'TypeError', message: /^Embedding\.numEmbeddings is fixed/ });
    assert.throws(() => embedding.forward([300], [1]), { name: 'RangeError' });
    const gqa = new ca.GroupedQueryAttention(4, 4, 2, 1, { contextLength: 4 });
    for (const key of ['contextLength', 'numHeads', 'headDim', 'numKVGroups', 'ropeBase', 'W_query', 'outProj']) {
      assert.throws(() => { gqa[key] = 400; }, { name: 'TypeError', message: new RegExp(`^GroupedQueryAttention\\.${key} is fixed`) });
    }
    const mha = new ca.MultiHeadAttention(4, 4, 6, 0.0, 2);
    assert.throws(() => { mha.W_query = new ca.Linear(4, 4); }, { name: 'TypeError', message: /^MultiHeadAttention\.W_query is fixed/ });
    assert.equal(gqa.forward(new Float32Array(16), [4, 4]).length, 16, 'the module still works');
  });

  it("an optimizer's hyperparameters: settable for a schedule, checked as the constructor checks them", () => {
    const linear = new ca.Linear(2, 2);
    const sgd = new ca.optim.SGD(linear, { lr: 0.1, momentum: 0.9 });
    sgd.lr = 0.05;
    assert.equal(sgd.lr, 0.05);
    assert.throws(() => { sgd.lr = NaN; }, { name: 'RangeError', message: 'SGD.lr must be a finite number >= 0, got NaN' });
    assert.throws(() => { sgd.dampening = 0.5; sgd.nesterov = true; }, { name: 'RangeError', message: /^SGD\.nesterov needs momentum > 0 and dampening 0/ });
    assert.equal(sgd.lr, 0.05, 'a refused value changes nothing');
    const adamW = new ca.optim.AdamW(linear);
    assert.throws(() => { adamW.betas = [1, 0.5]; }, { name: 'RangeError', message: /^AdamW\.betas\[0\] must be a number in \[0, 1\)/ });
    assert.deepEqual(adamW.betas, [0.9, 0.999]);
    assert.equal(adamW.stateDict().param_groups[0].lr, 1e-3);
  });
});
