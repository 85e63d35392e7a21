// @tensorflow/tfjs-core with @tensorflow/tfjs-backend-wasm: the training
// step as tfjs users write it, tf.grads of the composed attention (its
// fastest form in the forward table: per-head 2-D matMuls on XNNPACK, the
// [T, T] scores, mask and softmax materialised, autodiff keeping them for
// the backward). Returns the same gradients as ours-train.mjs. tfjs-core's
// Node bundle registers no gradient functions: the union package
// @tensorflow/tfjs (same version, same tfjs-core) registers tfjs's own.
//   attention: per (b, h), grads of sum(dy ∘ softmax(Q·scale·Kᵀ + mask)·V)
//              with respect to Q, K, V.
//   module:    per batch element, grads of the book's MultiHeadAttention
//              (x·W_q, x·W_k, x·W_v, per-head attention, concat, ·W_o + b_o)
//              with respect to x and the weights (weight gradients summed
//              over the batch); x's gradient returned.
import { causalMask } from '../lib/onnx.mjs';
import { moduleWeights } from './ort-common.mjs';
import { create as createTfjs } from './tfjs-wasm.mjs';

export const name = 'tfjs-backend-wasm';

export const variants = () => ['tf.grads, per-head 2-D'];

export async function create(config) {
  const base = await createTfjs(config); // backend, threads (or Unavailable)
  await import('@tensorflow/tfjs'); // tfjs's gradient functions
  const tf = await import('@tensorflow/tfjs-core');
  return {
    label: base.label,
    threads: base.threads,
    prepare(variant, shape, inputs) {
      return shape.kind === 'mha-train' ? prepareModule(tf, shape, inputs) : prepareAttention(tf, shape, inputs);
    },
  };
}

/** Causal attention of one head on 2-D tensors, as the forward table's tfjs does it. */
const attentionHead = (tf, mask, scale) => (qh, kh, vh) => tf.matMul(
  tf.softmax(tf.add(tf.matMul(tf.mul(qh, scale), tf.transpose(kh)), mask)), vh);

function prepareAttention(tf, s, { q, k, v, gradOutput }) {
  const { batch: B, heads: H, length: T, headDim: D } = s;
  const mask = tf.tensor2d(causalMask(T), [T, T]);
  const grads = tf.grads(attentionHead(tf, mask, 1 / Math.sqrt(D)));
  const n = B * H * T * D;
  return {
    run() {
      const out = new Float32Array(3 * n);
      for (let bh = 0; bh < B * H; ++bh) {
        const at = bh * T * D;
        const head = (a) => tf.tensor2d(a.subarray(at, at + T * D), [T, D]);
        const g = tf.tidy(() => grads([head(q), head(k), head(v)], head(gradOutput)));
        g.forEach((t, i) => {
          out.set(t.dataSync(), i * n + at);
          t.dispose();
        });
      }
      return out;
    },
    release: () => mask.dispose(),
  };
}

function prepareModule(tf, s, { x, gradOutput }) {
  const { batch: B, length: T, dIn, dOut, heads: H } = s;
  const hd = dOut / H;
  const w = moduleWeights(s); // x·W layout: wq [dIn, dOut], ..., wo [dOut, dOut]
  const params = [tf.tensor2d(w.wq, [dIn, dOut]), tf.tensor2d(w.wk, [dIn, dOut]),
    tf.tensor2d(w.wv, [dIn, dOut]), tf.tensor2d(w.wo, [dOut, dOut]), tf.tensor1d(w.bo)];
  const mask = tf.tensor2d(causalMask(T), [T, T]);
  const head = attentionHead(tf, mask, 1 / Math.sqrt(hd));
  const grads = tf.grads((xb, wq, wk, wv, wo, bo) => {
    const Q = tf.matMul(xb, wq), K = tf.matMul(xb, wk), V = tf.matMul(xb, wv);
    const slice = (m, h) => tf.slice(m, [0, h * hd], [T, hd]);
    const ctx = tf.concat(Array.from({ length: H }, (_, h) => head(slice(Q, h), slice(K, h), slice(V, h))), 1);
    return tf.add(tf.matMul(ctx, wo), bo);
  });
  return {
    run() {
      const gradX = new Float32Array(B * T * dIn);
      const sums = params.map((p) => new Float32Array(p.size));
      for (let b = 0; b < B; ++b) {
        const xb = x.subarray(b * T * dIn, (b + 1) * T * dIn);
        const dy = gradOutput.subarray(b * T * dOut, (b + 1) * T * dOut);
        const g = tf.tidy(() => grads([tf.tensor2d(xb, [T, dIn]), ...params], tf.tensor2d(dy, [T, dOut])));
        gradX.set(g[0].dataSync(), b * T * dIn);
        g.slice(1).forEach((t, i) => t.dataSync().forEach((val, e) => { sums[i][e] += val; }));
        g.forEach((t) => t.dispose());
      }
      return gradX;
    },
    release: () => {
      mask.dispose();
      params.forEach((p) => p.dispose());
    },
  };
}
