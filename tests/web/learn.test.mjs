// The Learn section's modules in Node, without a browser: the tasks'
// batches (web/learn/model/tasks.mjs), the heads' scores (web/learn/model/metrics.mjs),
// the attention-only transformer on the built package (web/learn/model/model.mjs:
// its backward against finite differences, its KV-cache generation against
// one full forward) and a training run with the page's defaults
// (web/learn/model/trainer.mjs): an induction head appears, numbers printed.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { init } from 'causal-attention';
import { headScores, inductionGuesses, inductionScore, previousTokenScore } from '../../web/learn/model/metrics.mjs';
import { AttentionOnlyTransformer } from '../../web/learn/model/model.mjs';
import {
  IGNORE, compactVocabulary, inductionBatch, inductionProbe, parseTokenNumbers, period, random, textBatch,
  textProbe, toCompactIds,
} from '../../web/learn/model/tasks.mjs';
import { DEFAULTS, Trainer, argmax, checkSettings } from '../../web/learn/model/trainer.mjs';
import { VARIANTS } from '../../web/learn/model/variants.mjs';

let ca;
before(async () => {
  ca = await init({ build: 'single' });
});

describe('the tasks (web/learn/model/tasks.mjs)', () => {
  it('draws integers in range, the same for the same seed and stream, different otherwise', () => {
    const draw = (seed, stream) => { const r = random(seed, stream); return Array.from({ length: 200 }, () => r.below(7)); };
    const a = draw(1, 16);
    assert.deepEqual(draw(1, 16), a);
    assert.notDeepEqual(draw(2, 16), a);
    assert.notDeepEqual(draw(1, 17), a);
    assert.ok(a.every((x) => Number.isInteger(x) && x >= 0 && x < 7));
    assert.equal(new Set(a).size, 7, 'every value appears in 200 draws');
  });

  it('builds induction batches: each sequence repeats after its own P, only the repeat is scored', () => {
    const tokens = 20;
    const { ids, targets } = inductionBatch({ seed: 3, step: 5, batch: 12, tokens, vocab: 9 });
    assert.equal(ids.length, 12 * tokens);
    const periods = new Set();
    for (let b = 0; b < 12; b++) {
      const seq = ids.subarray(b * tokens, (b + 1) * tokens);
      const t = targets.subarray(b * tokens, (b + 1) * tokens);
      const p = t.findIndex((x) => x !== IGNORE);
      assert.ok(p >= 5 && p <= 10, `P = ${p} in [T/4, T/2]`);
      periods.add(p);
      for (let i = p; i < tokens; i++) assert.equal(seq[i], seq[i - p], `sequence ${b} repeats at ${i}`);
      for (let i = 0; i < tokens; i++) {
        assert.equal(t[i], i >= p && i + 1 < tokens ? seq[i + 1] : IGNORE, `target ${b}, ${i}`);
      }
      assert.ok(seq.every((x) => x >= 0 && x < 9));
    }
    assert.ok(periods.size >= 3, `periods vary: ${[...periods]}`);
    const again = inductionBatch({ seed: 3, step: 5, batch: 12, tokens, vocab: 9 });
    assert.deepEqual(again.ids, ids);
    assert.notDeepEqual(inductionBatch({ seed: 3, step: 6, batch: 12, tokens, vocab: 9 }).ids, ids);
  });

  it('the induction probe: its second half repeats its first', () => {
    const probe = inductionProbe({ seed: 0, tokens: 64, vocab: 32 });
    assert.equal(period(64), 32);
    assert.deepEqual(probe.subarray(32), probe.subarray(0, 32));
    assert.deepEqual(inductionProbe({ seed: 0, tokens: 64, vocab: 32 }), probe);
  });

  it('renumbers GPT-2 ids into a compact vocabulary, and back', () => {
    const { ids, vocab } = compactVocabulary([50, 7, 50, 9000, 7]);
    assert.deepEqual(vocab, [7, 50, 9000]);
    assert.deepEqual(Array.from(ids), [1, 0, 1, 2, 0]);
    assert.deepEqual(toCompactIds([9000, 3, 7, 3, 11], vocab), { ids: Int32Array.of(2, 0), unknown: [3, 11] });
  });

  it('cuts text batches into windows with next-token targets, and a repeated probe', () => {
    const stream = Int32Array.from({ length: 30 }, (_, i) => (i * 7) % 11);
    const { ids, targets } = textBatch({ seed: 1, step: 0, batch: 5, tokens: 8, stream });
    for (let b = 0; b < 5; b++) {
      const window = Array.from(ids.subarray(b * 8, b * 8 + 8));
      const start = [...Array(23).keys()].find((s) => window.every((x, i) => x === stream[s + i]));
      assert.notEqual(start, undefined, `window ${b} is a piece of the text`);
      assert.deepEqual(Array.from(targets.subarray(b * 8, b * 8 + 8)), Array.from(stream.subarray(start + 1, start + 9)));
    }
    assert.throws(() => textBatch({ seed: 1, step: 0, batch: 1, tokens: 30, stream }), /at least 31 tokens/);
    assert.deepEqual(Array.from(textProbe({ tokens: 7, stream })), [0, 7, 3, 0, 7, 3, 0]);
  });

  it('reads a prompt of token numbers', () => {
    assert.deepEqual(parseTokenNumbers(' 3 17,5 ', 32), { ids: Int32Array.of(3, 17, 5) });
    assert.match(parseTokenNumbers('3 32', 32).error, /from 0 to 31, got ‘32’/);
    assert.match(parseTokenNumbers('3 x', 32).error, /got ‘x’/);
    assert.match(parseTokenNumbers('  ', 32).error, /no tokens/);
  });
});

describe('the heads\' scores (web/learn/model/metrics.mjs)', () => {
  const T = 8;
  const P = 4;
  // Heads [3, T, T]: uniform causal, previous token (row 0 on itself), induction.
  const weights = new Float32Array(3 * T * T);
  for (let i = 0; i < T; i++) {
    for (let j = 0; j <= i; j++) weights[i * T + j] = 1 / (i + 1);
    weights[T * T + i * T + Math.max(0, i - 1)] = 1;
    weights[2 * T * T + i * T + (i >= P ? i - P + 1 : i)] = 1;
  }

  it('scores a uniform, a previous-token and an induction head', () => {
    let uniformPrevious = 0;
    for (let i = 1; i < T; i++) uniformPrevious += 1 / (i + 1);
    let uniformInduction = 0;
    for (let i = P; i < T; i++) uniformInduction += 1 / (i + 1);
    assert.ok(Math.abs(previousTokenScore(weights, T, 0) - uniformPrevious / (T - 1)) < 1e-7);
    assert.ok(Math.abs(inductionScore(weights, T, P, 0) - uniformInduction / (T - P)) < 1e-7);
    assert.equal(previousTokenScore(weights, T, 1), 1);
    assert.equal(inductionScore(weights, T, P, 1), 0);
    assert.equal(inductionScore(weights, T, P, 2), 1);
    assert.equal(previousTokenScore(weights, T, 2), 0);
    const all = headScores([weights], 3, T, P);
    assert.deepEqual(all.map((s) => [s.layer, s.head]), [[0, 0], [0, 1], [0, 2]]);
    assert.equal(all[2].induction, 1);
    assert.equal(previousTokenScore(weights, 1, 0), 0);
  });

  it('knows what a perfect induction head predicts', () => {
    assert.deepEqual(inductionGuesses([5, 6, 7, 5, 6, 5]), [null, null, null, 6, 7, 6]);
    assert.equal(argmax(Float32Array.of(0.1, 3, -1, 3)), 1);
  });
});

describe('the attention-only transformer (web/learn/model/model.mjs) on the package', () => {
  const config = { vocab: 7, layers: 2, heads: 2, dModel: 8, contextLength: 6 };
  const ids = Int32Array.of(1, 4, 2, 6, 0, 3, 5, 1, 1, 2, 4, 6);
  const targets = Int32Array.of(4, 2, 6, 0, 3, IGNORE, 1, 1, 2, 4, 6, IGNORE);

  // Every attention variant (learn-variants.mjs); the window shorter than the sequence.
  for (const attention of VARIANTS) {
    const variant = { ...config, attention, window: 3 };
    it(`has gradients that match finite differences (directional, float32): attention '${attention}'`, () => {
      ca.manualSeed(11);
      const model = new AttentionOnlyTransformer(ca, variant);
      const params = model.modules().flatMap((m) => m.parameters());
      const lossOf = () => ca.crossEntropy(model.forward(ids, 2, 6).logits, targets).loss;
      model.train();
      for (const m of model.modules()) m.zeroGrad();
      const { logits } = model.forward(ids, 2, 6);
      model.backward(ca.crossEntropy(logits, targets).gradLogits);
      // Along a random direction v per parameter tensor: (L(θ + εv) − L(θ − εv)) / 2ε against ∇L·v.
      const rng = random(5, 0);
      for (const p of params) {
        const v = Float32Array.from(p.data, () => rng.below(2001) / 1000 - 1);
        let analytic = 0;
        for (let k = 0; k < v.length; k++) analytic += p.grad[k] * v[k];
        const eps = 1e-2;
        const base = Float32Array.from(p.data);
        const shifted = (sign) => {
          for (let k = 0; k < v.length; k++) p.data[k] = base[k] + sign * eps * v[k];
          return lossOf();
        };
        const numeric = (shifted(1) - shifted(-1)) / (2 * eps);
        p.data.set(base);
        assert.ok(Math.abs(numeric - analytic) <= 2e-2 * Math.max(0.05, Math.abs(analytic)),
          `${p.name}: finite differences ${numeric}, backward ${analytic}`);
      }
    });

    it(`generates with the KV cache exactly what one full forward gives: attention '${attention}'`, () => {
      ca.manualSeed(12);
      const model = new AttentionOnlyTransformer(ca, variant).eval();
      const seq = ids.subarray(0, 6);
      const full = model.forward(seq, 1, 6, { returnWeights: true });
      const prompt = model.forwardCached(seq.subarray(0, 3));
      const close = (a, b, what) => assert.ok(Math.abs(a - b) <= 1e-5 * (1 + Math.abs(b)), `${what}: ${a} vs ${b}`);
      for (let c = 0; c < 7; c++) close(prompt.logits[c], full.logits[2 * 7 + c], `prompt logit ${c}`);
      for (let t = 3; t < 6; t++) {
        const r = model.forwardCached(seq.subarray(t, t + 1));
        assert.equal(model.cacheLength, t + 1);
        for (let c = 0; c < 7; c++) close(r.logits[c], full.logits[t * 7 + c], `token ${t} logit ${c}`);
        for (let l = 0; l < 2; l++) {
          assert.equal(r.weights[l].length, 2 * (t + 1));
          for (let h = 0; h < 2; h++) {
            for (let j = 0; j <= t; j++) close(r.weights[l][h * (t + 1) + j], full.weights[l][h * 36 + t * 6 + j], `weight ${l} ${h} ${t} ${j}`);
          }
        }
      }
      assert.throws(() => model.forwardCached(Int32Array.of(1)), /past the context length 6/);
      model.resetCache();
      assert.equal(model.cacheLength, 0);
    });
  }
});

describe('training (web/learn/model/trainer.mjs) with the page\'s defaults', () => {
  it('checks its settings', () => {
    assert.deepEqual(checkSettings(DEFAULTS), []);
    assert.match(checkSettings({ ...DEFAULTS, heads: 3 }).join(), /multiple of the number of heads \(3\), got 64/);
    assert.match(checkSettings({ ...DEFAULTS, layers: 4 }).join(), /layers must be an integer from 1 to 3, got 4/);
    assert.match(checkSettings({ ...DEFAULTS, contextLength: 512 }).join(), /contextLength .* to 256, got 512/);
    assert.match(checkSettings({ ...DEFAULTS, task: 'text' }, 2).join(), /at least 3 tokens/);
    assert.throws(() => new Trainer(ca, { ...DEFAULTS, lr: 0 }), RangeError);
  });

  it('an induction head appears within 400 steps and the loss on the repeats falls (numbers printed)', () => {
    const trainer = new Trainer(ca, DEFAULTS);
    const t0 = performance.now();
    let clicked = null;
    let best = 0;
    while (trainer.step < 400 && clicked === null) {
      trainer.trainStep();
      if (trainer.step % 10 === 0) {
        const { scores } = trainer.probe();
        best = Math.max(...scores.map((s) => s.induction));
        if (best > 0.4) clicked = trainer.step;
      }
    }
    const seconds = (performance.now() - t0) / 1000;
    // Another 100 steps for the loss to settle; windows of 20 steps.
    for (let k = 0; k < 100; k++) trainer.trainStep();
    const mean = (a) => a.reduce((s, x) => s + x, 0) / a.length;
    const start = mean(trainer.losses.slice(0, 20));
    const end = mean(trainer.losses.slice(-20));
    const { scores } = trainer.probe();
    const top = scores.reduce((a, b) => (b.induction > a.induction ? b : a));
    const previous = Math.max(...scores.filter((s) => s.layer === 0).map((s) => s.previousToken));
    console.log(`  defaults ${JSON.stringify(DEFAULTS)}: best induction score > 0.4 at step ${clicked} ` +
      `(${seconds.toFixed(1)} s, ${(clicked / seconds).toFixed(0)} steps/s in Node); after ${trainer.step} steps ` +
      `loss on the repeats ${start.toFixed(3)} → ${end.toFixed(3)} (ln 32 = ${Math.log(32).toFixed(3)}), ` +
      `layer ${top.layer + 1} head ${top.head + 1} induction ${top.induction.toFixed(3)}, best layer-1 ` +
      `previous-token score ${previous.toFixed(3)}`);
    assert.notEqual(clicked, null, `best induction score after 400 steps: ${best}`);
    assert.ok(end < start / 3, `loss ${start} → ${end}`);
    assert.equal(top.layer, 1, 'the induction head is in layer 2');
    assert.ok(previous > 0.3, `a previous-token head in layer 1: ${previous}`);
    trainer.dispose();
  });

  it('gives the same losses for the same seed, whatever runs between steps', () => {
    const plain = new Trainer(ca, { ...DEFAULTS, seed: 7 });
    for (let k = 0; k < 30; k++) plain.trainStep();
    const busy = new Trainer(ca, { ...DEFAULTS, seed: 7 });
    for (let k = 0; k < 30; k++) {
      busy.trainStep();
      if (k % 7 === 0) busy.probe();
      if (k % 11 === 0) {
        let r = busy.startGeneration(busy.probeIds.subarray(0, 5));
        for (let n = 0; n < 3; n++) r = busy.generateNext(r.next);
        busy.dispose();
      }
    }
    assert.deepEqual(busy.losses, plain.losses);
    const other = new Trainer(ca, { ...DEFAULTS, seed: 8 });
    for (let k = 0; k < 30; k++) other.trainStep();
    assert.notDeepEqual(other.losses, plain.losses);
  });

  it('trains on a text\'s compact vocabulary and stops generating at the context length', () => {
    const text = Array.from({ length: 40 }, (_, i) => [464, 3797, 11, 318, 257, 1332][i % 6]);
    const trainer = new Trainer(ca, { ...DEFAULTS, task: 'text', contextLength: 16, text });
    assert.deepEqual(trainer.gpt2Ids, [11, 257, 318, 464, 1332, 3797]);
    assert.equal(trainer.vocab, 6);
    assert.equal(trainer.tokens, 16);
    for (let k = 0; k < 60; k++) trainer.trainStep();
    assert.ok(trainer.losses[59] < trainer.losses[0] / 4, `loss ${trainer.losses[0]} → ${trainer.losses[59]}`);
    let r = trainer.startGeneration(trainer.stream.subarray(0, 10));
    assert.equal(r.weights[0].length, DEFAULTS.heads * 10 * 10);
    const produced = [];
    while (r) {
      produced.push(r.next);
      r = trainer.generateNext(r.next);
    }
    assert.equal(produced.length, 7, 'six fed tokens fill the context of 16, the seventh is the last prediction');
    assert.deepEqual(produced, Array.from(trainer.stream.subarray(10, 17)), 'the periodic text continues');
    trainer.dispose();
  });
});
