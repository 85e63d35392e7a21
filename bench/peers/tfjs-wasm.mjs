// @tensorflow/tfjs-core with @tensorflow/tfjs-backend-wasm (SIMD build).
// Two ways to compute, the harness keeps the faster per shape:
//   'per-head 2-D' : for each (b, h): Q_h·scale, Kᵀ_h = transpose(K_h),
//                    S = matMul(Q_h, Kᵀ_h), + mask, softmax, matMul(·, V_h).
//                    2-D matMul without transposes runs on XNNPACK here.
//   'batched 3-D'  : the same on [B·H, T, D] with matMul(Q, K, false, true);
//                    the wasm backend's batched/transposed matMul path is
//                    much slower (measured), kept to show it.
// Scale is folded into Q (T·D multiplies instead of T·T); the mask is a
// [T, T] tensor of 0 / -inf added before the softmax. Inputs are copied into
// tensors and the output read back (dataSync) inside every run.
import { Unavailable } from '../lib/unavailable.mjs';
import { causalMask } from '../lib/onnx.mjs';

export const name = 'tfjs-backend-wasm';

export const variants = (shape) => (shape.kind === 'attention' ? ['per-head 2-D', 'batched 3-D'] : []);

async function tryThreads(tf, wasm, threads) {
  // tfjs turns threads off in Node (WASM_HAS_MULTITHREAD_SUPPORT is false
  // when IS_NODE, tfjs issue #3830). Forcing the flag shows what happens.
  const logged = [];
  const { warn, error, log } = console;
  console.warn = console.error = console.log = (...a) => logged.push(a.join(' '));
  try {
    tf.env().set('WASM_HAS_MULTITHREAD_SUPPORT', true);
    wasm.setThreadsCount(threads);
    const ok = await tf.setBackend('wasm');
    if (!ok) {
      const text = logged.join(' ');
      const code = /ERR_[A-Z_]+/.exec(text)?.[0];
      const why = code === 'ERR_WORKER_PATH'
        ? 'ERR_WORKER_PATH (its pthread worker is a blob: URL, which Node\'s Worker rejects)'
        : (code ?? text.split('\n')[0].slice(0, 120));
      throw new Unavailable('threads are disabled in Node by tfjs (WASM_HAS_MULTITHREAD_SUPPORT ' +
        `is false under IS_NODE, tfjs#3830); forcing the flag fails: ${why}`);
    }
  } finally {
    Object.assign(console, { warn, error, log });
  }
}

export async function create({ threads }) {
  const tf = await import('@tensorflow/tfjs-core');
  const wasm = await import('@tensorflow/tfjs-backend-wasm');
  if (threads > 1) {
    await tryThreads(tf, wasm, threads);
  } else if (!(await tf.setBackend('wasm'))) {
    throw new Unavailable('tf.setBackend("wasm") failed');
  }
  await tf.ready();
  if (!(await tf.env().getAsync('WASM_HAS_SIMD_SUPPORT'))) throw new Unavailable('no wasm SIMD');
  const actual = tf.backend().wasm._get_threads_count?.() ?? 1;
  return {
    label: 'tfjs-backend-wasm',
    threads: actual,
    prepare(variant, s, inputs) {
      return variant === 'batched 3-D' ? prepareBatched(tf, s, inputs) : preparePerHead(tf, s, inputs);
    },
  };
}

function preparePerHead(tf, s, { q, k, v }) {
  const { batch: B, heads: H, length: T, headDim: D } = s;
  const mask = tf.tensor2d(causalMask(T), [T, T]);
  const scale = 1 / Math.sqrt(D);
  return {
    run() {
      const out = new Float32Array(B * H * T * D);
      for (let bh = 0; bh < B * H; ++bh) {
        const at = bh * T * D;
        const head = tf.tidy(() => {
          const qh = tf.mul(tf.tensor2d(q.subarray(at, at + T * D), [T, D]), scale);
          const kt = tf.transpose(tf.tensor2d(k.subarray(at, at + T * D), [T, D]));
          const vh = tf.tensor2d(v.subarray(at, at + T * D), [T, D]);
          return tf.matMul(tf.softmax(tf.add(tf.matMul(qh, kt), mask)), vh);
        });
        out.set(head.dataSync(), at);
        head.dispose();
      }
      return out;
    },
    release: () => mask.dispose(),
  };
}

function prepareBatched(tf, s, { q, k, v }) {
  const { batch: B, heads: H, length: T, headDim: D } = s;
  const scoresBytes = 4 * B * H * T * T;
  if (scoresBytes > 512 * 2 ** 20) {
    throw new Unavailable(`[B·H, T, T] scores would take ${Math.round(scoresBytes / 2 ** 20)} MiB per intermediate`);
  }
  const mask = tf.tensor2d(causalMask(T), [T, T]);
  const scale = 1 / Math.sqrt(D);
  const dims = [B * H, T, D];
  return {
    run() {
      const o = tf.tidy(() => {
        const qs = tf.mul(tf.tensor3d(q, dims), scale);
        const scores = tf.add(tf.matMul(qs, tf.tensor3d(k, dims), false, true), mask);
        return tf.matMul(tf.softmax(scores), tf.tensor3d(v, dims));
      });
      const out = o.dataSync();
      o.dispose();
      return out;
    },
    release: () => mask.dispose(),
  };
}
