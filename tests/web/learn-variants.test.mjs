// Learn II's modules in Node: the attention variants
// (web/learn/model/variants.mjs) trained on the default task, with the step at
// which each forms an induction head printed; the checkpoints
// (web/learn/model/checkpoints.mjs); keeping a run (web/learn/model/persist.mjs): a run
// record through JSON resumes bit for bit, and the page's state-dict JSON
// loads into a new model with the package's loadStateDict.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { init } from 'causal-attention';
import { Checkpoints, snapshot } from '../../web/learn/model/checkpoints.mjs';
import { bestInduction } from '../../web/learn/model/metrics.mjs';
import { AttentionOnlyTransformer } from '../../web/learn/model/model.mjs';
import { restoreRun, runRecord, stateDictJSON } from '../../web/learn/model/persist.mjs';
import { DEFAULTS, Trainer, checkSettings } from '../../web/learn/model/trainer.mjs';
import { VARIANTS, kvGroupsFor } from '../../web/learn/model/variants.mjs';

let ca;
before(async () => {
  ca = await init({ build: 'single' });
});

/** Trains until the best induction score on the probe passes 0.4 (probing every 10 steps) or `steps`: that step, or null. */
function formsAt(trainer, steps) {
  while (trainer.step <= steps) {
    if (trainer.step % 10 === 0 && bestInduction(trainer.probe().scores).score > 0.4) return trainer.step;
    trainer.trainStep();
  }
  return null;
}

describe('attention variants (web/learn/model/variants.mjs)', () => {
  it('checks the variant settings', () => {
    assert.match(checkSettings({ ...DEFAULTS, attention: 'linear' }).join(), /attention must be one of full, gqa, window, sinks, rope, got linear/);
    assert.match(checkSettings({ ...DEFAULTS, attention: 'rope', heads: 8, dModel: 24 }).join(), /even head size .* 24 \/ 8 = 3/);
    assert.deepEqual(checkSettings({ ...DEFAULTS, attention: 'full', heads: 8, dModel: 24 }), []);
    assert.match(checkSettings({ ...DEFAULTS, attention: 'window', window: 0 }).join(), /window must be an integer from 1 to 256, got 0/);
    assert.equal(kvGroupsFor(4), 2);
    assert.equal(kvGroupsFor(3), 1);
  });

  it('builds each variant under PyTorch names: learned positions only for full, shared keys for gqa, sinks', () => {
    const d = 16;
    for (const attention of VARIANTS) {
      ca.manualSeed(0);
      const model = new AttentionOnlyTransformer(ca, { vocab: 5, layers: 1, heads: 4, dModel: d, contextLength: 8, attention, window: 4 });
      const dict = model.net.stateDict();
      assert.equal('pos_emb.weight' in dict, attention === 'full', attention);
      assert.equal('layers.0.sinks' in dict, attention === 'sinks', attention);
      assert.equal(dict['layers.0.W_key.weight'].length, attention === 'gqa' ? d * d / 2 : d * d, attention);
    }
  });

  it('on the default task, each forms an induction head, except a window shorter than the repeat (steps printed)', () => {
    const found = {};
    for (const [attention, window] of [['full'], ['gqa'], ['sinks'], ['rope'], ['window', 64], ['window', 8]]) {
      const trainer = new Trainer(ca, { ...DEFAULTS, attention, window: window ?? DEFAULTS.window });
      const name = window ? `window ${window}` : attention;
      found[name] = { at: formsAt(trainer, window === 8 ? 300 : 400), best: bestInduction(trainer.probe().scores).score };
    }
    console.log(`  the step at which the best induction score passes 0.4 (seed 0, probing every 10 steps): ${
      Object.entries(found).map(([k, v]) => `${k} ${v.at ?? `none by 300 (best ${v.best.toFixed(3)})`}`).join(', ')}`);
    for (const [name, { at }] of Object.entries(found)) if (name !== 'window 8') assert.notEqual(at, null, name);
    assert.equal(found['window 8'].at, null);
    assert.ok(found['window 8'].best < 0.05, `window 8: best induction ${found['window 8'].best}`);
  });
});

describe('checkpoints (web/learn/model/checkpoints.mjs)', () => {
  it('keeps at most `keep`, evenly spread from step 0, doubling the interval', () => {
    const c = new Checkpoints(1, { budget: 8, every: 10 }); // keep 8 / 1 snapshots
    assert.equal(c.keep, 8);
    for (let step = 0; step <= 1000; step++) if (c.due(step)) c.add({ step, scores: [{ layer: 0, head: 0, induction: step, previousToken: 0 }] });
    const steps = c.list.map((x) => x.step);
    assert.ok(steps.length <= 8 && steps.length >= 4, `${steps}`);
    assert.equal(steps[0], 0);
    assert.ok(steps.every((s, k) => k === 0 || s - steps[k - 1] === c.every), `${steps} every ${c.every}`);
    assert.ok(steps[steps.length - 1] > 1000 - c.every, `${steps}`);
    assert.deepEqual(c.summary()[1].best, { score: steps[1], layer: 0, head: 0 });
  });

  it('a snapshot holds what the page shows: the probe\'s weights and scores, and its loss', () => {
    const trainer = new Trainer(ca, DEFAULTS);
    const at0 = snapshot(trainer);
    assert.equal(at0.step, 0);
    // Untrained: no better than guessing on the probe's repeat.
    assert.ok(at0.probeLoss > Math.log(32) - 0.3, `probe loss ${at0.probeLoss}`);
    for (let k = 0; k < 5; k++) trainer.trainStep();
    const again = new Trainer(ca, DEFAULTS);
    assert.deepEqual(snapshot(again).weights, at0.weights, 'the same seed, the same untrained heads');
    assert.notDeepEqual(snapshot(trainer).weights, at0.weights);
    assert.equal(again.probe().probeLoss, at0.probeLoss);
    // A snapshot is of the whole model, whatever is knocked out (learn-ablation.mjs).
    again.setAblation([[0, 0]]);
    assert.deepEqual(snapshot(again).weights, at0.weights);
    assert.equal(snapshot(again).probeLoss, at0.probeLoss);
    assert.notEqual(again.probe().probeLoss, at0.probeLoss);
  });
});

describe('keeping a run (web/learn/model/persist.mjs)', () => {
  it('a run record through JSON resumes training bit for bit (weights, AdamW state, step, losses)', () => {
    for (const attention of ['full', 'sinks']) {
      const settings = { ...DEFAULTS, attention, seed: 3 };
      const a = new Trainer(ca, settings);
      for (let k = 0; k < 25; k++) a.trainStep();
      const json = JSON.parse(JSON.stringify(runRecord(a), (key, v) => (v instanceof Float32Array ? Array.from(v) : v)));
      const b = new Trainer(ca, json.settings);
      restoreRun(b, json);
      assert.equal(b.step, 25);
      for (let k = 0; k < 15; k++) {
        a.trainStep();
        b.trainStep();
      }
      assert.deepEqual(b.losses, a.losses, attention);
    }
  });

  it('a record it cannot read changes nothing: the trainer stays fresh', () => {
    const a = new Trainer(ca, DEFAULTS);
    for (let k = 0; k < 3; k++) a.trainStep();
    const record = runRecord(a);
    record.optimizer.state[0].exp_avg = new Float32Array(1);
    const b = new Trainer(ca, DEFAULTS);
    const fresh = b.model.net.stateDict();
    assert.throws(() => restoreRun(b, record), { name: 'RangeError', message: /^stateDict.state\[0\].exp_avg must have 2048 values, got 1$/ });
    assert.deepEqual(b.model.net.stateDict(), fresh);
    assert.equal(b.step, 0);
    assert.deepEqual(b.optimizer.stateDict().state, {});
  });

  it('the downloaded state dict: PyTorch names, weights as rows of d_model, loadable by loadStateDict', () => {
    const a = new Trainer(ca, DEFAULTS);
    for (let k = 0; k < 10; k++) a.trainStep();
    const parsed = JSON.parse(stateDictJSON(a.model.net.stateDict(), DEFAULTS.dModel));
    assert.equal(parsed['tok_emb.weight'].length, 32);
    assert.equal(parsed['tok_emb.weight'][0].length, 64);
    assert.equal(parsed['layers.1.out_proj.bias'].length, 64);
    assert.ok(typeof parsed['layers.1.out_proj.bias'][0] === 'number');
    ca.manualSeed(99);
    const model = new AttentionOnlyTransformer(ca, { ...DEFAULTS, vocab: 32 }).eval();
    model.net.loadStateDict(parsed);
    assert.deepEqual(model.forward(a.probeIds, 1, 64).logits, a.model.eval().forward(a.probeIds, 1, 64).logits);
  });
});
