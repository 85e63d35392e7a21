// The Learn section's interpretability lab (web/learn/model/lab.mjs) on a
// model trained with the page's defaults (400 steps), in Node on the built
// package: patching layer 2's heads together restores most of the loss gap
// and the best induction head alone a clear part of it; attribution
// patching ranks the heads as exact patching does (Spearman ≥ 0.8); the
// layer-1 head with the highest K-composition into the best induction head
// is a previous-token head; positions before the repeat, where the clean and
// corrupted runs are the same, restore exactly nothing (bit for bit). The
// numbers are printed.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { init } from 'causal-attention';
import { corruptProbe, patchedLosses, rowLosses, runLab, spearman } from '../../web/learn/model/lab.mjs';
import { repeatTargets } from '../../web/learn/model/icl.mjs';
import { snapshot, withParams } from '../../web/learn/model/checkpoints.mjs';
import { DEFAULTS, Trainer } from '../../web/learn/model/trainer.mjs';

let ca;
let trainer;
let early;
before(async () => {
  ca = await init({ build: 'single' });
  trainer = new Trainer(ca, DEFAULTS);
  while (trainer.step < 50) trainer.trainStep();
  early = snapshot(trainer);
  while (trainer.step < 400) trainer.trainStep();
});
after(() => trainer?.dispose());

describe('the lab on a trained Learn model', () => {
  it('patching, attribution, composition, logit lens and circuits say the same thing', () => {
    const lab = runLab(trainer);
    const { heads: H, layers: L, tokens: T, period: P } = lab;
    const best = lab.scores.reduce((a, b) => (b.induction > a.induction ? b : a));
    const exact = (l, h) => lab.patching.find((p) => p.layer === l && p.head === h);
    const table = lab.patching.map((p, i) => `${p.layer + 1}.${p.head + 1} ${p.restored.toFixed(2)}/${lab.attribution[i].estimate.toFixed(2)}`);
    console.log(`  loss clean ${lab.lossClean.toFixed(3)}, corrupted ${lab.lossCorrupt.toFixed(3)}; ` +
      `layer 2 patched: ${lab.layerRestored[1].toFixed(3)} of the gap; per head (exact/attribution) ${table.join(', ')}; ` +
      `Spearman ${lab.agreement.toFixed(3)}; grid ${lab.patchingMs.toFixed(0)} ms, lab ${lab.ms.toFixed(0)} ms`);
    assert.ok(lab.lossCorrupt > lab.lossClean + 1, `a gap to restore: ${lab.lossClean} → ${lab.lossCorrupt}`);
    assert.ok(lab.layerRestored[1] > 0.6, `layer 2 together restores ${lab.layerRestored[1]}`);
    assert.equal(best.layer, 1);
    assert.ok(exact(1, best.head).restored > 0.2, `the best induction head alone restores ${exact(1, best.head).restored}`);
    assert.ok(lab.agreement >= 0.8, `attribution vs exact patching: Spearman ${lab.agreement}`);
    // Before the repeat the runs are the same: nothing to restore, bit for bit.
    for (const p of lab.patching) for (let t = 0; t < P; t++) assert.equal(p.positions[t], 0);
    // K-composition into the best induction head comes most from a previous-token head.
    const k = lab.composition[0].k;
    const into = [...Array(H).keys()].map((a) => k[a * H + best.head]);
    const reader = into.indexOf(Math.max(...into));
    assert.ok(lab.scores.find((s) => s.layer === 0 && s.head === reader).previousToken >= 0.3);
    // The logit lens after the last layer is the model's own prediction.
    assert.equal(lab.lens.length, L + 1);
    const lastLens = lab.lens[L];
    const { logits } = trainer.model.eval().forward(trainer.probeIds, 1, T);
    for (let t = 0; t < T; t++) {
      const row = logits.subarray(t * lab.vocab, (t + 1) * lab.vocab);
      assert.equal(lastLens[t].token, row.indexOf(Math.max(...row)), `position ${t}`);
    }
    // Direct logit attribution: the best induction head pushes the correct token up.
    const dla = lab.directLogit.find((x) => x.layer === 1 && x.head === best.head).logit;
    assert.ok(dla > 0, `direct logit of the induction head ${dla}`);
    // Circuits of the best head: [V, V] over tokens, [T, T] over positions.
    assert.deepEqual([lab.circuits.layer, lab.circuits.head], [best.layer, best.head]);
    assert.equal(lab.circuits.qkTokens.length, lab.vocab ** 2);
    assert.equal(lab.circuits.qkPositions.length, T * T);
    assert.equal(lab.circuits.ovTokens.length, lab.vocab ** 2);
  });

  it('runs at a checkpoint (the slider\'s): before the phase change layer 2 restores little; the live weights come back bit for bit', () => {
    const before = trainer.model.net.stateDict();
    const late = runLab(trainer);
    const atEarly = withParams(trainer, early.params, () => runLab(trainer));
    assert.deepEqual(trainer.model.net.stateDict(), before);
    console.log(`  at step ${early.step}: layer 2 restores ${atEarly.layerRestored[1].toFixed(3)} of a gap ` +
      `${(atEarly.lossCorrupt - atEarly.lossClean).toFixed(3)}; at step 400: ${late.layerRestored[1].toFixed(3)} of ` +
      `${(late.lossCorrupt - late.lossClean).toFixed(3)}`);
    assert.ok(atEarly.lossCorrupt - atEarly.lossClean < (late.lossCorrupt - late.lossClean) / 4,
      'before induction forms there is little gap between the clean and corrupted repeat');
    assert.equal(atEarly.measurable, false);
    assert.ok(atEarly.patching.every((p) => p.restored === 0), 'no fractions of a gap that is not there');
    assert.equal(late.measurable, true);
    assert.deepEqual(runLab(trainer).patching, late.patching, 'the lab again on the restored weights: the same numbers');
  });

  it('the grid\'s shared-prefix rows are patchHeads forwards: each row\'s loss is the full patched forward\'s', () => {
    const model = trainer.model.eval();
    const { probeIds: clean, period: P, tokens: T } = trainer;
    const { heads: H, vocab: V, dModel: d } = model;
    const corrupt = corruptProbe(clean, P, V);
    const targets = repeatTargets(clean, P);
    const c = model.forwardHooked(clean, 1, T);
    const k = model.forwardHooked(corrupt, 1, T);
    const [lossCorrupt] = rowLosses(k.logits, targets, 1, V);
    // Each layer's rows against one patchHeads forward per row (the whole network run from the tokens).
    const full = (l, heads, positions) => {
      const values = new Float32Array(heads.length * T * d);
      heads.forEach((h, i) => values.set(c.headOutputs[l].subarray(h * T * d, (h + 1) * T * d), i * T * d));
      const patches = [];
      patches[l] = { heads, values, ...(positions ? { positions } : {}) };
      return rowLosses(model.forwardHooked(corrupt, 1, T, { patches }).logits, targets, 1, V)[0];
    };
    for (let l = 0; l < model.layers; l++) {
      const losses = patchedLosses(model, k, c, l, targets);
      assert.equal(losses.length, 1 + H + H * T + 1);
      assert.ok(Math.abs(losses[0] - lossCorrupt) <= 1e-6 * lossCorrupt, `row 0 is the corrupted run: ${losses[0]} vs ${lossCorrupt}`);
      const near = (got, expect, what) => assert.ok(Math.abs(got - expect) <= 1e-6 * (1 + expect), `layer ${l} ${what}: ${got} vs ${expect}`);
      for (let h = 0; h < H; h++) {
        near(losses[1 + h], full(l, [h]), `head ${h}`);
        for (const t of [0, P - 1, P, P + 3, T - 2]) near(losses[1 + H + h * T + t], full(l, [h], [t]), `head ${h} at ${t}`);
        // Before the repeat the patch is the head's own output: row 0's loss, bit for bit.
        for (let t = 0; t < P; t++) assert.equal(losses[1 + H + h * T + t], losses[0]);
      }
      near(losses[1 + H + H * T], full(l, [...Array(H).keys()]), 'every head');
    }
  });

  it('the corrupted probe keeps the first half and changes every token of the second; Spearman as defined', () => {
    const clean = Int32Array.from([1, 2, 3, 1, 2, 3]);
    const bad = corruptProbe(clean, 3, 5);
    assert.deepEqual([...bad.subarray(0, 3)], [1, 2, 3]);
    for (let i = 3; i < 6; i++) assert.notEqual(bad[i], clean[i]);
    assert.equal(spearman([1, 2, 3, 4], [10, 20, 30, 40]), 1);
    assert.equal(spearman([1, 2, 3, 4], [4, 3, 2, 1]), -1);
    assert.ok(Math.abs(spearman([1, 2, 2, 3], [1, 3, 2, 4]) - 0.9487) < 1e-3);
  });
});
