// The Learn section's training steps, bit for bit:
// the default model trained through the attention modules (one C++ layer
// call per forward and backward, activations and gradients copied into
// arrays the modules reuse from step to step) gives exactly the losses and
// parameters of the same model composed by hand from the runtime's
// standalone calls, which allocate fresh arrays every time: the Linear
// modules for the Q, K, V and output projections, ca.attention and
// ca.attentionBackward on split heads, grad x summed over Q, K, V in the
// layer's order (src/model/layer.cc). Both run the same kernels in the same
// order, so any difference is a bug in the fast path's bookkeeping (a stale
// reused buffer, a gradient not accumulated), not rounding: the comparison
// is exact (Object.is), in both builds.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { init } from 'causal-attention';
import { AttentionOnlyTransformer } from '../../web/learn/model/model.mjs';
import { IGNORE } from '../../web/learn/model/tasks.mjs';
import { DEFAULTS, Trainer } from '../../web/learn/model/trainer.mjs';

const STEPS = 6;

/** [B, T, H, hd] → [B, H, T, hd] (split) or back (merge). */
function permute(src, b, t, h, hd, split) {
  const dst = new Float32Array(src.length);
  for (let ib = 0; ib < b; ib++) {
    for (let it = 0; it < t; it++) {
      for (let ih = 0; ih < h; ih++) {
        const merged = ((ib * t + it) * h + ih) * hd;
        const heads = ((ib * h + ih) * t + it) * hd;
        for (let e = 0; e < hd; e++) {
          if (split) dst[heads + e] = src[merged + e];
          else dst[merged + e] = src[heads + e];
        }
      }
    }
  }
  return dst;
}

/**
 * One MultiHeadAttention (no dropout) from its parts: forward returns y and
 * keeps what backward needs; backward accumulates the projections'
 * gradients and returns grad x.
 */
function composedLayer(ca, m, batch, tokens) {
  const { numHeads: h, headDim: hd, dOut: d } = m;
  const shape = [batch, tokens, d];
  const options = { batch, heads: h, queryLength: tokens, headDim: hd, causal: true };
  let kept = null;
  return {
    forward(x) {
      const [q, k, v] = [m.W_query, m.W_key, m.W_value].map((p) => permute(p.forward(x, shape), batch, tokens, h, hd, true));
      const { output, logSumExp } = ca.attention(q, k, v, { ...options, returnLogSumExp: true });
      kept = { q, k, v, output, logSumExp };
      return m.outProj.forward(permute(output, batch, tokens, h, hd, false), shape);
    },
    backward(dy) {
      const { q, k, v, output, logSumExp } = kept;
      const dO = permute(m.outProj.backward(dy), batch, tokens, h, hd, true);
      const g = ca.attentionBackward(dO, q, k, v, output, logSumExp, options);
      const terms = [[m.W_query, g.gradQ], [m.W_key, g.gradK], [m.W_value, g.gradV]]
        .map(([p, dh]) => p.backward(permute(dh, batch, tokens, h, hd, false)));
      const dx = terms[0];
      for (const t of terms.slice(1)) for (let e = 0; e < dx.length; e++) dx[e] += t[e];
      return dx;
    },
  };
}

/** The Trainer's step with the composed layers in place of the modules' forward and backward. */
function composedStep(ca, trainer, layers) {
  const { ids, targets } = trainer.batch();
  const model = trainer.model.train();
  const { batch } = trainer.settings;
  const T = trainer.tokens;
  const shape = [batch, T, model.dModel];
  trainer.optimizer.zeroGrad();
  const x = model.tokenEmbedding.forward(ids, [batch, T]);
  const p = model.positionEmbedding.forward(Int32Array.from({ length: batch * T }, (_, k) => k % T), [batch, T]);
  for (let k = 0; k < x.length; k++) x[k] += p[k];
  for (const layer of layers) {
    const y = layer.forward(x.slice());
    for (let k = 0; k < x.length; k++) x[k] += y[k];
  }
  const { loss, gradLogits } = ca.crossEntropy(model.unembed.forward(x, shape), targets, { ignoreIndex: IGNORE });
  const dx = model.unembed.backward(gradLogits);
  for (let l = layers.length - 1; l >= 0; l--) {
    const d = layers[l].backward(dx);
    for (let k = 0; k < dx.length; k++) dx[k] += d[k];
  }
  model.tokenEmbedding.backward(dx);
  model.positionEmbedding.backward(dx);
  trainer.optimizer.step();
  trainer.losses.push(loss);
  trainer.step += 1;
}

const parameters = (trainer) => trainer.model.net.parameters().map((q) => q.data);

for (const build of ['single', 'threads']) {
  describe(`the Learn model's steps (${build} build)`, () => {
    it(`trains the default model ${STEPS} steps to the composed path's losses and parameters, bit for bit`, async () => {
      const ca = await init({ build, threads: build === 'threads' ? 2 : 1 });
      try {
        const fast = new Trainer(ca, { ...DEFAULTS });
        const slow = new Trainer(ca, { ...DEFAULTS });
        assert.ok(slow.model instanceof AttentionOnlyTransformer);
        const layers = [...slow.model.attention].map((m) => composedLayer(ca, m, DEFAULTS.batch, slow.tokens));
        for (let s = 0; s < STEPS; s++) {
          fast.trainStep();
          composedStep(ca, slow, layers);
          // An eval forward between steps (the page's probe) drops the
          // modules' reusable arrays: the next step must not depend on it.
          if (s === 2) fast.probe();
        }
        assert.equal(fast.losses.length, STEPS);
        fast.losses.forEach((loss, s) => assert.ok(Object.is(loss, slow.losses[s]),
          `step ${s}: loss ${loss} (modules) vs ${slow.losses[s]} (composed)`));
        assert.ok(fast.losses[STEPS - 1] < fast.losses[0], `the loss falls: ${fast.losses.join(', ')}`);
        const [a, b] = [parameters(fast), parameters(slow)];
        a.forEach((data, i) => assert.ok(data.every((v, j) => Object.is(v, b[i][j])), `parameter ${i} differs`));
        console.log(`# ${build}: ${STEPS} steps, losses ${fast.losses.map((l) => l.toFixed(4)).join(', ')}`);
      } finally {
        ca.dispose();
      }
    });

    it('reuses a module\'s kept arrays only where they fit: shapes that change between steps', async () => {
      const ca = await init({ build, threads: build === 'threads' ? 2 : 1 });
      try {
        // The same module trained on shapes in turn, against a fresh copy
        // of it for every call (same seed, same parameters).
        const make = () => { ca.manualSeed(7); return new ca.MultiHeadAttention(8, 8, 6, 0.0, 2); };
        const reused = make();
        const shapes = [[2, 6], [2, 6], [1, 3], [2, 6], [3, 5], [3, 5], [1, 3]];
        for (const [call, [batch, tokens]] of shapes.entries()) {
          const fresh = make();
          const n = batch * tokens * 8;
          const x = Float32Array.from({ length: n }, (_, i) => Math.sin(i + call));
          const dy = Float32Array.from({ length: n }, (_, i) => Math.cos(3 * i + call));
          const results = [reused, fresh].map((m) => {
            for (const q of m.parameters()) q.grad = null;
            const y = m.forward(x, [batch, tokens, 8]);
            return [y, m.backward(dy), ...m.parameters().map((q) => q.grad)];
          });
          results[0].forEach((a, i) => assert.ok(a.every((v, j) => Object.is(v, results[1][i][j])),
            `shape (${batch}, ${tokens}): result ${i} differs`));
        }
      } finally {
        ca.dispose();
      }
    });
  });
}
