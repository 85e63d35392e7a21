// The book's modules in JS: printed numbers (to the printed 4 decimals),
// PyTorch state-dict layout, train/eval, shapes, errors, and agreement with
// a plain-JS module on random weights (|a - ref| <= 1e-5 (1 + |ref|)).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { init } from 'causal-attention';
import { linearJs } from './helpers.mjs';
import { maxRelativeError, randomArray, referenceAttention } from './js-reference.mjs';

// "Your journey starts with one step" (seeds/000 and the book, ch. 3).
const inputs = new Float32Array([
  0.43, 0.15, 0.89, 0.55, 0.87, 0.66, 0.57, 0.85, 0.64,
  0.22, 0.58, 0.33, 0.77, 0.25, 0.10, 0.05, 0.80, 0.55,
]);
const batch = new Float32Array([...inputs, ...inputs]); // torch.stack((inputs, inputs))
const printed = (a) => Array.from(a, (x) => x.toFixed(4));

const bookRows = {
  causal: ['-0.4519', '0.2216', '-0.5874', '0.0058', '-0.6300', '-0.0632', '-0.5675', '-0.0843',
    '-0.5526', '-0.0981', '-0.5299', '-0.1081'],
  mha: ['0.3190', '0.4858', '0.2943', '0.3897', '0.2856', '0.3593', '0.2693', '0.3873', '0.2639',
    '0.3928', '0.2575', '0.4028'],
};

for (const build of ['single', 'threads']) {
  describe(`the book's numbers (${build} build)`, async () => {
    const ca = await init({ build, threads: build === 'single' ? 1 : 2 });

    it('torch.rand after torch.manual_seed', () => {
      ca.manualSeed(0);
      assert.deepEqual(printed(ca.rand(6)), ['0.4963', '0.7682', '0.0885', '0.1320', '0.3074', '0.6341']);
      ca.manualSeed(42);
      assert.deepEqual(printed(ca.rand([2, 3])), ['0.8823', '0.9150', '0.3829', '0.9593', '0.3904', '0.6009']);
    });

    it('seed 789: SelfAttention_v2 weights, and the causal weights by both mask strategies', () => {
      ca.manualSeed(789);
      const sa = new ca.SelfAttention(3, 2);
      const { weights, scores } = sa.forward(inputs, [6, 3], { returnWeights: true, returnScores: true });
      assert.deepEqual(printed(weights.subarray(0, 6)), ['0.1921', '0.1646', '0.1652', '0.1550', '0.1721', '0.1510']);
      assert.deepEqual(printed(weights.subarray(30, 36)), ['0.1935', '0.1663', '0.1666', '0.1542', '0.1666', '0.1529']);
      // The masked scores print row 6 as [0.3408, 0.1270, 0.1290, 0.0198, 0.1290, 0.0078].
      assert.deepEqual(printed(scores.subarray(30, 36)), ['0.3408', '0.1270', '0.1290', '0.0198', '0.1290', '0.0078']);
      const causal = new ca.CausalAttention(3, 2, 6, 0.0).loadStateDict(sa.stateDict());
      const expected = [
        ['1.0000', '0.0000', '0.0000', '0.0000', '0.0000', '0.0000'],
        ['0.5517', '0.4483', '0.0000', '0.0000', '0.0000', '0.0000'],
        ['0.3800', '0.3097', '0.3103', '0.0000', '0.0000', '0.0000'],
        ['0.2758', '0.2460', '0.2462', '0.2319', '0.0000', '0.0000'],
        ['0.2175', '0.1983', '0.1984', '0.1888', '0.1971', '0.0000'],
        ['0.1935', '0.1663', '0.1666', '0.1542', '0.1666', '0.1529'],
      ].flat();
      for (const maskStrategy of ['neg-inf', 'renormalize']) {
        const r = causal.forward(inputs, [6, 3], { returnWeights: true, maskStrategy });
        assert.deepEqual(printed(r.weights), expected, maskStrategy);
      }
    });

    it('seed 002: rand(6, 3) inputs, three 3→3 projections: scores and context vectors', () => {
      ca.manualSeed(123);
      const x = ca.rand([6, 3]);
      const layer = new ca.CausalAttention(3, 3, 6, 0.0);
      const { output, scores } = layer.forward(x, [1, 6, 3], { returnScores: true });
      const scaled = scores.map((s) => s / Math.sqrt(3)); // attn_scores / sqrt(3)
      assert.deepEqual(printed(scaled.subarray(0, 6)), ['0.0640', '0.0679', '0.0194', '0.0903', '0.0184', '0.0417']);
      assert.deepEqual(printed(scaled.subarray(30, 36)), ['0.0950', '0.1266', '0.0323', '0.1542', '0.0284', '0.0785']);
      assert.deepEqual(printed(output), [
        '-0.3325', '-0.1223', '0.2555', '-0.5215', '-0.1879', '0.1063', '-0.3994', '-0.1458', '0.0869',
        '-0.4794', '-0.1667', '0.0904', '-0.4201', '-0.1554', '0.0910', '-0.4472', '-0.1731', '0.0766']);
    });

    it('CausalAttention(3, 2, 6, 0.0) after manualSeed(123) on the batch of two', () => {
      ca.manualSeed(123);
      const y = new ca.CausalAttention(3, 2, 6, 0.0).forward(batch, [2, 6, 3]);
      assert.equal(y.length, 2 * 6 * 2);
      assert.deepEqual(printed(y.subarray(0, 12)), bookRows.causal);
      assert.deepEqual(printed(y.subarray(12)), bookRows.causal);
    });

    it('MultiHeadAttention(3, 2, 6, 0.0, 2) after manualSeed(123)', () => {
      ca.manualSeed(123);
      const y = new ca.MultiHeadAttention(3, 2, 6, 0.0, 2).forward(batch, [2, 6, 3]);
      assert.deepEqual(printed(y.subarray(0, 12)), bookRows.mha);
      assert.deepEqual(printed(y.subarray(12)), bookRows.mha);
    });

    it('MultiHeadAttentionWrapper(3, 2, 6, 0.0, 2): first row [-0.4519, 0.2216, 0.4772, 0.1063]', () => {
      ca.manualSeed(123);
      const y = new ca.MultiHeadAttentionWrapper(3, 2, 6, 0.0, 2).forward(batch, [2, 6, 3]);
      assert.equal(y.length, 2 * 6 * 4);
      assert.deepEqual(printed(y.subarray(0, 4)), ['-0.4519', '0.2216', '0.4772', '0.1063']);
    });
  });
}

// A plain-JS module forward: projections, split heads, attention, merge, out_proj.
function moduleJs(m, x, B, T) {
  const p = m.layerParams();
  const H = p.numHeads, hd = p.headDim, dm = H * hd;
  const split = (a) => {
    const out = new Float64Array(a.length);
    for (let b = 0; b < B; b++) for (let t = 0; t < T; t++) for (let h = 0; h < H; h++) {
      for (let c = 0; c < hd; c++) out[((b * H + h) * T + t) * hd + c] = a[((b * T + t) * H + h) * hd + c];
    }
    return out;
  };
  const [q, k, v] = [[p.wQuery, p.bQuery], [p.wKey, p.bKey], [p.wValue, p.bValue]]
    .map(([w, b]) => split(linearJs(x, B * T, m.dIn, dm, w, b)));
  const { output, weights } = referenceAttention(q, k, v, {
    batch: B, heads: H, queryLength: T, headDim: hd, causal: m.contextLength !== undefined, // SelfAttention has none
  });
  const merged = new Float64Array(B * T * dm);
  for (let b = 0; b < B; b++) for (let t = 0; t < T; t++) for (let h = 0; h < H; h++) {
    for (let c = 0; c < hd; c++) merged[((b * T + t) * H + h) * hd + c] = output[((b * H + h) * T + t) * hd + c];
  }
  return { output: p.wOut ? linearJs(merged, B * T, dm, dm, p.wOut, p.bOut) : merged, weights, q, k, v };
}

describe('modules', async () => {
  const ca = await init({ build: 'single' });

  it('agree with a plain-JS module on random weights, odd sizes included', () => {
    const configs = [
      () => new ca.CausalAttention(1, 1, 4, 0.0),
      () => new ca.CausalAttention(5, 7, 40, 0.0, true),
      () => new ca.MultiHeadAttention(8, 6, 33, 0.0, 6), // numHeads = dOut: head size 1
      () => new ca.MultiHeadAttention(1, 4, 9, 0.0, 2, true),
      () => new ca.MultiHeadAttentionWrapper(4, 3, 20, 0.0, 3, true),
      () => new ca.SelfAttention(6, 5, true),
      () => new ca.MultiHeadAttention(96, 96, 128, 0.0, 12),
    ];
    ca.manualSeed(5);
    for (const [i, make] of configs.entries()) {
      const m = make();
      const T = Math.min(m.contextLength ?? 17, 3 + i * 5);
      const B = 1 + (i % 3);
      const x = randomArray(B * T * m.dIn, 100 + i);
      const { output, weights } = m.forward(x, [B, T, m.dIn], { returnWeights: true });
      const ref = moduleJs(m, x, B, T);
      assert.equal(output.length, B * T * m.outputDim);
      assert.ok(maxRelativeError(output, ref.output) <= 1e-5, `config ${i} output`);
      assert.ok(maxRelativeError(weights, ref.weights) <= 1e-5, `config ${i} weights`);
      // The heads the attention ran on, as the book splits them.
      const kept = m.forward(x, [B, T, m.dIn], { returnQKV: true });
      assert.deepEqual(kept.output, m.forward(x, [B, T, m.dIn]), `config ${i}: keeping Q/K/V changes nothing`);
      assert.equal(kept.weights, undefined);
      for (const [name, want] of [['queries', ref.q], ['keys', ref.k], ['values', ref.v]]) {
        assert.equal(kept[name].length, B * m.numHeads * T * m.layerParams().headDim);
        assert.ok(maxRelativeError(kept[name], want) <= 1e-5, `config ${i} ${name}`);
      }
    }
  });

  it('output and weight shapes: wrapper concatenates heads, MultiHeadAttention projects', () => {
    ca.manualSeed(1);
    const wrapper = new ca.MultiHeadAttentionWrapper(3, 2, 6, 0.0, 3);
    const mha = new ca.MultiHeadAttention(3, 6, 6, 0.0, 3);
    const x = randomArray(2 * 5 * 3, 3);
    const a = wrapper.forward(x, [2, 5, 3], { returnWeights: true });
    const b = mha.forward(x, [2, 5, 3], { returnWeights: true });
    assert.equal(a.output.length, 2 * 5 * 6); // numHeads · dOut
    assert.equal(b.output.length, 2 * 5 * 6); // dOut
    assert.equal(a.weights.length, 2 * 3 * 5 * 5);
    assert.equal(b.weights.length, 2 * 3 * 5 * 5);
    assert.equal(mha.headDim, 2);
    assert.equal(wrapper.heads.length, 3);
    assert.ok(wrapper.heads[0] instanceof ca.CausalAttention);
  });

  it('each batch element is attended on its own', () => {
    ca.manualSeed(2);
    const m = new ca.MultiHeadAttention(4, 4, 8, 0.0, 2, true);
    const x = randomArray(3 * 8 * 4, 9);
    const all = m.forward(x, [3, 8, 4]);
    for (let b = 0; b < 3; b++) {
      const one = m.forward(x.slice(b * 32, (b + 1) * 32), [1, 8, 4]);
      assert.ok(maxRelativeError(all.subarray(b * 32, (b + 1) * 32), one) <= 1e-6, `element ${b}`);
    }
    assert.ok(maxRelativeError(all.subarray(0, 32), all.subarray(32, 64)) > 1e-3, 'different sequences differ');
  });

  it('train()/eval(): dropout only in training, seeded and reproducible', () => {
    ca.manualSeed(3);
    const m = new ca.CausalAttention(4, 4, 16, 0.5);
    assert.equal(m.training, true); // as nn.Module
    const x = randomArray(2 * 16 * 4, 4);
    const shape = [2, 16, 4];
    assert.equal(m.eval(), m);
    assert.equal(m.training, false);
    const evalA = m.forward(x, shape, { returnWeights: true });
    const evalB = m.forward(x, shape, { returnWeights: true });
    assert.deepEqual(evalA, evalB);
    for (let row = 0; row < 32; row++) {
      const s = evalA.weights.subarray(row * 16, row * 16 + 16).reduce((a, b) => a + b, 0);
      assert.ok(Math.abs(s - 1) < 1e-6);
    }
    assert.equal(m.train(), m);
    ca.manualSeed(10);
    const t1 = m.forward(x, shape, { returnWeights: true });
    const t2 = m.forward(x, shape, { returnWeights: true });
    assert.notDeepEqual(t1.weights, t2.weights, 'each forward draws a new mask');
    assert.ok(t1.weights.some((w) => w === 0) && t1.weights.some((w) => w > 1), 'dropped and scaled by 2');
    ca.manualSeed(10);
    assert.deepEqual(m.forward(x, shape, { returnWeights: true }), t1, 'manualSeed replays');
    assert.deepEqual(m.forward(x, shape, { seed: 77 }), m.forward(x, shape, { seed: 77 }));
    const wrapper = new ca.MultiHeadAttentionWrapper(4, 2, 16, 0.1, 2);
    wrapper.eval();
    assert.ok(wrapper.heads.every((h) => h.training === false), 'eval reaches the heads');
    // dropout is settable, like nn.Dropout's p, and reaches the heads.
    wrapper.dropout = 0.25;
    assert.ok(wrapper.heads.every((h) => h.dropout === 0.25));
    m.dropout = 0;
    assert.deepEqual(m.train().forward(x, shape), m.eval().forward(x, shape), 'p = 0: training is a no-op');
  });

  it('stateDict uses PyTorch names and layouts and round-trips', () => {
    ca.manualSeed(4);
    const mha = new ca.MultiHeadAttention(3, 4, 6, 0.0, 2, true);
    const dict = mha.stateDict();
    assert.deepEqual(Object.keys(dict), [
      'W_query.weight', 'W_query.bias', 'W_key.weight', 'W_key.bias',
      'W_value.weight', 'W_value.bias', 'out_proj.weight', 'out_proj.bias']);
    assert.equal(dict['W_query.weight'].length, 4 * 3); // [dOut, dIn]
    assert.equal(dict['out_proj.weight'].length, 4 * 4);
    // W_query.weight[o][i] is the weight from input i to output o.
    const x = new Float32Array([1, 0, 0]);
    const q = mha.W_query.forward(x, [1, 3]);
    assert.equal(q[1], dict['W_query.weight'][1 * 3 + 0] + dict['W_query.bias'][1]);

    const other = new ca.MultiHeadAttention(3, 4, 6, 0.0, 2, true);
    const input = randomArray(6 * 3, 8);
    assert.notDeepEqual(other.forward(input, [6, 3]), mha.forward(input, [6, 3]));
    // Nested arrays, as tensor.tolist() exports them, load too.
    const rows = (v, cols) => Array.from({ length: v.length / cols }, (_, r) => Array.from(v.subarray(r * cols, (r + 1) * cols)));
    const nested = Object.fromEntries(Object.entries(dict).map(([name, v]) => [name,
      name.endsWith('.weight') ? rows(v, name.startsWith('out_proj') ? 4 : 3) : Array.from(v)]));
    other.loadStateDict(nested);
    assert.deepEqual(other.forward(input, [6, 3]), mha.forward(input, [6, 3]));
    dict['W_query.weight'][0] = 99; // stateDict returns copies
    assert.notEqual(mha.W_query.weight[0], 99);

    const wrapperDict = new ca.MultiHeadAttentionWrapper(3, 2, 6, 0.0, 2).stateDict();
    assert.deepEqual(Object.keys(wrapperDict), [
      'heads.0.W_query.weight', 'heads.0.W_key.weight', 'heads.0.W_value.weight',
      'heads.1.W_query.weight', 'heads.1.W_key.weight', 'heads.1.W_value.weight']);
  });

  it('loadStateDict reports every mismatch in one error and loads nothing', () => {
    ca.manualSeed(6);
    const m = new ca.MultiHeadAttention(3, 4, 6, 0.0, 2);
    const before = m.stateDict();
    const bad = m.stateDict();
    delete bad['W_key.weight'];
    bad['W_value.weight'] = new Float32Array(11);
    bad['out_proj.weight'] = new Float32Array(16).fill(1);
    bad['heads.0.W_query.weight'] = new Float32Array(6);
    assert.throws(() => m.loadStateDict(bad), (e) => e instanceof RangeError
      && /^loadStateDict: 3 problems: missing 'W_key.weight' \(12 values\); 'W_value.weight' has 11 values, expected 12; unexpected 'heads.0.W_query.weight'$/.test(e.message));
    assert.deepEqual(m.stateDict(), before, 'nothing loaded');
    assert.throws(() => m.loadStateDict({ ...before, 'W_query.weight': 'abc' }), TypeError);
    assert.throws(() => m.loadStateDict(null), /stateDict must be an object/);
  });

  it('rejects tokens beyond contextLength and mismatched inputs, then keeps working', () => {
    ca.manualSeed(7);
    const m = new ca.CausalAttention(3, 2, 6, 0.0);
    const x7 = new Float32Array(7 * 3);
    assert.throws(() => m.forward(x7, [1, 7, 3]), (e) => e instanceof RangeError
      && e.message === 'the number of tokens (shape[1]) must be at most contextLength 6, got 7');
    assert.throws(() => m.forward(new Float32Array(18), [1, 6, 4]), /shape\[2\] must be dIn 3 for this module, got 4/);
    assert.throws(() => m.forward(new Float32Array(17), [1, 6, 3]), /x must have length 18 \(shape \[1, 6, 3\]\), got length 17/);
    assert.throws(() => m.forward(new Float32Array(18), [6, 3, 1, 1]), /shape must have 2 to 3 dimensions, got 4/);
    assert.throws(() => new ca.MultiHeadAttention(3, 5, 6, 0.0, 2), /dOut must be divisible by numHeads, got dOut 5 and numHeads 2/);
    assert.throws(() => new ca.CausalAttention(3, 2, 6, 1.5), /dropout must be a number in \[0, 1\), got 1.5/);
    assert.equal(m.forward(new Float32Array(18), [6, 3]).length, 12);
  });
});

describe('modules give the same dropout in every build', () => {
  it('single and threaded builds agree bit for bit', async () => {
    const outputs = [];
    for (const options of [{ build: 'single' }, { build: 'threads', threads: 2 }]) {
      const ca = await init(options);
      ca.manualSeed(11);
      const m = new ca.MultiHeadAttention(8, 8, 40, 0.3, 2);
      outputs.push(m.forward(randomArray(2 * 40 * 8, 12), [2, 40, 8], { returnWeights: true }));
    }
    assert.deepEqual(outputs[0], outputs[1]);
  });
});

describe('module tree: children, modes, state dicts (nn.Module)', async () => {
  const ca = await init({ build: 'single' });
  const linearsOf = (m) => [m.W_query, m.W_key, m.W_value, m.outProj].filter(Boolean);

  it('train()/eval() reach every submodule of every module kind (a fix: eval() used to stop at the top)', () => {
    ca.manualSeed(20);
    const gqa = new ca.GroupedQueryAttention(8, 8, 4, 2, { contextLength: 8 });
    const all = [
      [new ca.SelfAttention(4, 4), (m) => linearsOf(m)],
      [new ca.CausalAttention(4, 4, 8, 0.1), (m) => linearsOf(m)],
      [new ca.MultiHeadAttention(8, 8, 16, 0, 2), (m) => linearsOf(m)],
      [gqa, (m) => linearsOf(m)],
      [new ca.MultiHeadAttentionWrapper(4, 2, 8, 0.1, 3), (m) => [...m.heads, ...m.heads.flatMap(linearsOf)]],
      [new ca.ModuleList([new ca.Linear(2, 3), new ca.CausalAttention(4, 4, 8, 0)]),
        (m) => [m[0], m[1], ...linearsOf(m[1])]],
      [new ca.Linear(3, 2), () => []],
      [new ca.Embedding(5, 2), () => []],
    ];
    assert.equal(linearsOf(gqa).length, 4);
    for (const [m, submodules] of all) {
      const name = m.constructor.name;
      assert.equal(m.eval(), m);
      for (const s of [m, ...submodules(m)]) assert.equal(s.training, false, `${name}: eval() reaches ${s.constructor.name}`);
      assert.equal(m.train(), m);
      for (const s of [m, ...submodules(m)]) assert.equal(s.training, true, `${name}: train() reaches ${s.constructor.name}`);
      m.train(false);
      assert.ok(submodules(m).every((s) => s.training === false), `${name}: train(false)`);
    }
    const mha = new ca.MultiHeadAttention(8, 8, 16, 0, 2).eval();
    assert.equal(mha.W_query.training, false);
    assert.equal(mha.outProj.training, false);
  });

  it('children are the runtime\'s classes, registered under the state dict\'s names', () => {
    ca.manualSeed(21);
    const mha = new ca.MultiHeadAttention(3, 4, 6, 0.0, 2);
    assert.ok(mha instanceof ca.Module && mha.W_query instanceof ca.Linear && mha.outProj instanceof ca.Linear);
    assert.deepEqual(mha.namedChildren().map(([n]) => n), ['W_query', 'W_key', 'W_value', 'out_proj']);
    const gqa = new ca.GroupedQueryAttention(8, 8, 4, 2, { contextLength: 8 });
    assert.deepEqual(gqa.namedChildren().map(([n]) => n), ['W_key', 'W_value', 'W_query', 'out_proj']);
    assert.deepEqual(Object.keys(gqa.stateDict()), ['W_key.weight', 'W_value.weight', 'W_query.weight', 'out_proj.weight']);
    assert.deepEqual(gqa.namedParameters().map(([n]) => n), Object.keys(gqa.stateDict()));
    const wrapper = new ca.MultiHeadAttentionWrapper(3, 2, 6, 0.0, 2, true);
    assert.ok(Array.isArray(wrapper.heads));
    assert.deepEqual(Object.keys(wrapper.stateDict()).slice(0, 3), ['heads.0.W_query.weight', 'heads.0.W_query.bias', 'heads.0.W_key.weight']);
    assert.ok(wrapper.children()[0] instanceof ca.ModuleList);
    // Each runtime binds its own classes; the code behind them is the same.
    assert.equal(ca.Linear.name, 'Linear');
    assert.equal(Object.getPrototypeOf(ca.Linear.prototype).constructor.name, 'Linear');
  });

  it('Linear and Embedding load state dicts, with the same checks as the attention modules', () => {
    ca.manualSeed(22);
    const lin = new ca.Linear(3, 2);
    const other = new ca.Linear(3, 2).loadStateDict(lin.stateDict());
    assert.deepEqual(other.stateDict(), lin.stateDict());
    assert.deepEqual(other.forward(inputs, [6, 3]), lin.forward(inputs, [6, 3]));
    const before = other.stateDict();
    assert.throws(() => other.loadStateDict({ weight: new Float32Array(6).fill(1) }), (e) => e instanceof RangeError
      && e.message === "loadStateDict: 1 problem: missing 'bias' (2 values)");
    assert.deepEqual(other.stateDict(), before, 'nothing loaded');
    const emb = new ca.Embedding(4, 2).loadStateDict({ weight: [[1, 2], [3, 4], [5, 6], [7, 8]] });
    assert.deepEqual(Array.from(emb.forward([2, 0])), [5, 6, 1, 2]);
    assert.throws(() => emb.loadStateDict({ weight: [1, 2] }), /^RangeError: loadStateDict: 1 problem: 'weight' has 2 values, expected 8$/);
    assert.throws(() => emb.loadStateDict({ weight: 'x' }), TypeError);
  });

  it('ModuleList: children 0, 1, ... with PyTorch\'s prefixes; indexable and iterable', () => {
    ca.manualSeed(23);
    const list = new ca.ModuleList([new ca.Linear(2, 3), new ca.Embedding(4, 2)]);
    list.append(new ca.Linear(3, 1, false));
    assert.ok(list instanceof ca.ModuleList && list instanceof ca.Module);
    assert.equal(list.length, 3);
    assert.ok(list[0] instanceof ca.Linear && list[1] instanceof ca.Embedding);
    assert.equal(list.at(-1), list[2]);
    assert.deepEqual([...list], [list[0], list[1], list[2]]);
    assert.deepEqual(Object.keys(list.stateDict()), ['0.weight', '0.bias', '1.weight', '2.weight']);
    assert.deepEqual(list.parameters().map((p) => p.name), ['0.weight', '0.bias', '1.weight', '2.weight']);
    assert.equal(list.parameters()[2].data, list[1].weight);
    assert.throws(() => { list[0] = new ca.Linear(2, 3); }, TypeError);
    assert.throws(() => list.append({}), /module must be a Module, got an object/);
    assert.throws(() => new ca.ModuleList(3), /modules must be an iterable of modules, got 3/);
    const nested = new ca.ModuleList([list, new ca.MultiHeadAttention(2, 2, 4, 0, 1)]);
    assert.deepEqual(Object.keys(nested.stateDict()).slice(3, 6), ['0.2.weight', '1.W_query.weight', '1.W_key.weight']);
    const copy = new ca.ModuleList([new ca.Linear(2, 3), new ca.Embedding(4, 2), new ca.Linear(3, 1, false)]);
    copy.loadStateDict(list.stateDict());
    assert.deepEqual(copy.stateDict(), list.stateDict());
  });

  it('Sequential: each forward on the one before\'s output, the backwards in reverse', () => {
    ca.manualSeed(26);
    const seq = new ca.Sequential(new ca.Embedding(5, 4), new ca.CausalAttention(4, 3, 6, 0.0), new ca.Linear(3, 2));
    assert.ok(seq instanceof ca.Sequential && seq instanceof ca.Module);
    assert.deepEqual(Object.keys(seq.stateDict()).slice(0, 2), ['0.weight', '1.W_query.weight']);
    const ids = [1, 4, 0, 2, 2, 3];
    const y = seq.forward(ids, [2, 3]);
    ca.manualSeed(26);
    const [emb, att, lin] = [new ca.Embedding(5, 4), new ca.CausalAttention(4, 3, 6, 0.0), new ca.Linear(3, 2)];
    const h = att.forward(emb.forward(ids, [2, 3]), [2, 3, 4]);
    assert.deepEqual(y, lin.forward(h, [2, 3, 3]));
    const g = randomArray(2 * 3 * 2, 27);
    assert.equal(seq.backward(g), null, 'indices have no gradient');
    emb.backward(att.backward(lin.backward(g)));
    assert.deepEqual(seq.gradients(), new ca.ModuleList([emb, att, lin]).gradients());
    const two = new ca.Sequential(new ca.Linear(3, 4), new ca.Linear(4, 2));
    assert.equal(two.forward(inputs, [6, 3]).length, 12);
    assert.throws(() => two.forward(inputs, [6, 2]), /shape\[1\] must be inFeatures 3, got 2/);
  });

  it('ca.Module: a model of its own, as nn.Module subclasses are written', () => {
    class TwoLayer extends ca.Module {
      constructor() {
        super();
        this.fc1 = this.registerModule('fc1', new ca.Linear(3, 4));
        this.fc2 = this.registerModule('fc2', new ca.Linear(4, 2));
      }
    }
    ca.manualSeed(24);
    const model = new TwoLayer().eval();
    assert.ok(model instanceof ca.Module);
    assert.equal(model.fc2.training, false);
    assert.deepEqual(Object.keys(model.stateDict()), ['fc1.weight', 'fc1.bias', 'fc2.weight', 'fc2.bias']);
    assert.throws(() => model.registerModule('fc1', new ca.Linear(1, 1)), /a child named 'fc1' is already registered/);
    assert.throws(() => model.registerModule('a.b', new ca.Linear(1, 1)), /name must be a non-empty string without '.'/);
  });
});

describe('worker mode: the module tree', () => {
  it('ModuleList and ca.Module through the worker', async () => {
    const remote = await init({ worker: true, build: 'single' });
    try {
      await remote.manualSeed(25);
      const a = await new remote.Linear(2, 3);
      const list = await new remote.ModuleList([a, await new remote.CausalAttention(3, 3, 4, 0.0)]);
      assert.equal(list.length, 2);
      assert.deepEqual(Object.keys(await list.stateDict()).slice(0, 3), ['0.weight', '0.bias', '1.W_query.weight']);
      await list.eval();
      assert.equal(await list[1].W_query.training, false);
      await a.forward(new Float32Array(2), [1, 2]); // refreshes the handle's snapshot
      assert.equal(a.training, false, 'eval() through the list reached the Linear');
    } finally {
      await remote.dispose();
    }
  });
});
