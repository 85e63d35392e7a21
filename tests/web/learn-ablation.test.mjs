// Ablation and in-context learning in the Learn section, in Node on the
// built package: web/learn/model/icl.mjs against hand-made logits, and a trainer
// with the page's defaults (web/learn/model/trainer.mjs) whose probe loss rises
// when its best induction head, or the previous-token head it reads, is
// knocked out (the modules' headMask), and comes back bit for bit when the
// head is restored. Numbers printed for the README.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { init } from 'causal-attention';
import { iclScore, iclSpan, repeatTargets, tokenLosses } from '../../web/learn/model/icl.mjs';
import { IGNORE } from '../../web/learn/model/tasks.mjs';
import { DEFAULTS, Trainer, accuracy } from '../../web/learn/model/trainer.mjs';

let ca;
before(async () => {
  ca = await init({ build: 'single' });
});

describe('in-context learning (web/learn/model/icl.mjs)', () => {
  it('per-token losses are the log-softmax at the next token; crossEntropy agrees', () => {
    const vocab = 3;
    const ids = Int32Array.from([0, 2, 1, 1]);
    const logits = Float32Array.from([1, 2, 3, 0, 0, 0, -1, 5, 2, 4, 4, 4]);
    const losses = tokenLosses(logits, ids, vocab);
    assert.equal(losses.length, 3);
    const lse = (a) => Math.log(a.reduce((s, x) => s + Math.exp(x), 0));
    assert.ok(Math.abs(losses[0] - (lse([1, 2, 3]) - 3)) < 1e-12);
    assert.ok(Math.abs(losses[1] - Math.log(3)) < 1e-12);
    assert.ok(Math.abs(losses[2] - (lse([-1, 5, 2]) - 5)) < 1e-12);
    const targets = Int32Array.from([2, 1, 1, IGNORE]);
    const mean = (losses[0] + losses[1] + losses[2]) / 3;
    assert.ok(Math.abs(ca.crossEntropy(logits, targets).loss - mean) < 1e-6);
  });

  it('the ICL score is the last quarter\'s mean loss minus the first quarter\'s', () => {
    assert.equal(iclSpan(63), 15);
    assert.equal(iclSpan(3), 1);
    assert.equal(iclScore([5]), 0);
    assert.equal(iclScore([4, 9, 9, 9, 9, 9, 9, 1]), (1 + 9) / 2 - (4 + 9) / 2);
    const falling = Array.from({ length: 63 }, (_, i) => (i < 32 ? 3.5 : 0.5));
    assert.equal(iclScore(falling), -3);
  });

  it('scores the repeat as the training does: ids[i + 1] from i = P on; accuracy counts argmax hits', () => {
    assert.deepEqual(Array.from(repeatTargets(Int32Array.from([7, 8, 9, 7, 8, 9]), 3)),
      [IGNORE, IGNORE, IGNORE, 8, 9, IGNORE]);
    const logits = Float32Array.from([0, 1, 0, 5, 0, 0, 2, 2, 0, 0, 0, 9]);
    assert.equal(accuracy(logits, Int32Array.from([1, 1, 0, IGNORE]), 3), 2 / 3);
    assert.equal(accuracy(logits, Int32Array.from([IGNORE, IGNORE, IGNORE, IGNORE]), 3), 0);
  });
});

describe('ablation on a trained model (the page\'s defaults, 400 steps)', () => {
  let trainer;
  before(() => {
    trainer = new Trainer(ca, DEFAULTS);
  });
  after(() => trainer?.dispose());

  it('untrained: the probe loss is near ln V and the ICL score near 0', () => {
    const p = trainer.probe();
    assert.equal(p.tokenLosses.length, trainer.tokens - 1);
    assert.ok(Math.abs(p.probeLoss - Math.log(DEFAULTS.vocab)) < 1, `probe loss ${p.probeLoss}`);
    assert.ok(Math.abs(p.icl) < 1, `ICL ${p.icl}`);
    // The probe loss is the mean per-token loss over the repeat.
    const P = trainer.period;
    const repeat = p.tokenLosses.slice(P);
    const mean = repeat.reduce((s, x) => s + x, 0) / repeat.length;
    assert.ok(Math.abs(mean - p.probeLoss) < 1e-5 * (1 + mean), `${mean} vs ${p.probeLoss}`);
  });

  it('knocking out the best induction head raises the probe loss; restoring it gives the same bits', () => {
    // From about step 380 on (measured every 5 steps to 560) knocking out the
    // best head costs 0.15-0.41; before, the four layer-2 heads are redundant
    // enough that at some steps (275-280, 320-325) the loss even dips.
    while (trainer.step < 400) trainer.trainStep();
    const full = trainer.probe();
    const best = full.scores.reduce((a, b) => (b.induction > a.induction ? b : a));
    const prev = full.scores.filter((s) => s.layer === 0).reduce((a, b) => (b.previousToken > a.previousToken ? b : a));
    trainer.setAblation([[best.layer, best.head]]);
    const noInduction = trainer.probe();
    trainer.setAblation([[prev.layer, prev.head]]);
    const noPrevious = trainer.probe();
    const secondBest = (p) => Math.max(...p.scores.filter((s) => s.layer === best.layer).map((s) => s.induction));
    trainer.setAblation([...Array(DEFAULTS.heads).keys()].map((h) => [1, h]));
    const noLayer2 = trainer.probe();
    trainer.setAblation([]);
    const restored = trainer.probe();
    const pct = (p) => `${(100 * p.probeAccuracy).toFixed(0)}%`;
    console.log(`  after 400 steps: probe loss ${full.probeLoss.toFixed(3)}, accuracy ${pct(full)} ` +
      `(ICL ${full.icl.toFixed(3)}); ` +
      `without the best induction head (layer ${best.layer + 1} head ${best.head + 1}, score ` +
      `${best.induction.toFixed(3)}) ${noInduction.probeLoss.toFixed(3)}, ${pct(noInduction)} ` +
      `(ICL ${noInduction.icl.toFixed(3)}); ` +
      `without layer 1's previous-token head (head ${prev.head + 1}, score ${prev.previousToken.toFixed(3)}) ` +
      `${noPrevious.probeLoss.toFixed(3)}, ${pct(noPrevious)}, layer 2's best induction score ` +
      `${secondBest(full).toFixed(3)} → ${secondBest(noPrevious).toFixed(3)}; without layer 2 ` +
      `${noLayer2.probeLoss.toFixed(3)}, ${pct(noLayer2)}; ` +
      `ln ${DEFAULTS.vocab} = ${Math.log(DEFAULTS.vocab).toFixed(3)}`);
    assert.equal(best.layer, 1);
    assert.ok(full.icl < -1, `a trained model learns in context: ICL ${full.icl}`);
    assert.ok(noInduction.probeLoss > full.probeLoss + 0.1, `${full.probeLoss} → ${noInduction.probeLoss}`);
    assert.ok(noPrevious.probeLoss > full.probeLoss + 0.1, `${full.probeLoss} → ${noPrevious.probeLoss}`);
    assert.ok(secondBest(noPrevious) < secondBest(full), 'the previous-token head feeds the induction head');
    assert.ok(full.probeAccuracy > 0.6, `accuracy ${full.probeAccuracy}`);
    assert.ok(noPrevious.probeAccuracy < full.probeAccuracy - 0.3, `accuracy ${noPrevious.probeAccuracy}`);
    assert.ok(noLayer2.probeLoss > noInduction.probeLoss, 'without layer 2 no induction at all');
    assert.deepEqual(noInduction.ablated, [[best.layer, best.head]]);
    // The circuit: the layer-1 head with the highest K-composition into the
    // best induction head is a previous-token head (ca.compositionScores).
    const H = DEFAULTS.heads;
    const comp = ca.compositionScores(trainer.model.attention[0], trainer.model.attention[1]);
    const kInto = [...Array(H).keys()].map((a) => comp.k[a * H + best.head]);
    const reader = kInto.indexOf(Math.max(...kInto));
    const readerScore = full.scores.find((sc) => sc.layer === 0 && sc.head === reader).previousToken;
    console.log(`  K-composition into layer 2 head ${best.head + 1}: ${kInto.map((k) => k.toFixed(3)).join(', ')}; ` +
      `the highest, layer 1 head ${reader + 1}, has previous-token score ${readerScore.toFixed(3)}`);
    assert.ok(readerScore >= 0.3, `the K-composing head's previous-token score ${readerScore}`);
    // Restored: every number as before, bit for bit.
    assert.equal(restored.probeLoss, full.probeLoss);
    assert.equal(restored.probeAccuracy, full.probeAccuracy);
    assert.deepEqual(restored.tokenLosses, full.tokenLosses);
    assert.deepEqual(restored.weights, full.weights);
    // Training keeps every head: an ablation does not change a step's loss.
    const ablatedStep = new Trainer(ca, DEFAULTS);
    ablatedStep.setAblation([[1, 0]]);
    const plainStep = new Trainer(ca, DEFAULTS);
    assert.equal(ablatedStep.trainStep(), plainStep.trainStep());
    // Generation honours the ablation (the KV-cache path with headMask).
    trainer.setAblation([[best.layer, best.head]]);
    const g = trainer.startGeneration(trainer.probeIds.subarray(0, trainer.period + 4));
    assert.ok(Number.isInteger(g.next));
    trainer.dispose();
    trainer.setAblation([]);
  });

  it('refuses heads outside the model', () => {
    assert.throws(() => trainer.setAblation([[2, 0]]), /an ablated head must be \[layer in 0…1, head in 0…3\], got \[2, 0\]/);
    assert.throws(() => trainer.setAblation([[0, 4]]), RangeError);
    assert.throws(() => trainer.setAblation([[0, 1.5]]), RangeError);
  });
});
