// causal-attention (this package), imported by name like a user would:
// the single-threaded build, or the pthreads build with n threads.
import { sweepCaches } from '../lib/sweep.mjs';
import { decodeLengths, decodeParts, takeRows } from '../lib/shapes.mjs';
import { Unavailable } from '../lib/unavailable.mjs';
import { moduleWeights } from './ort-common.mjs';

export const name = 'ours';

/** The decode step's three routes (the last only where KV heads are shared). */
export const DECODE_VARIANTS = ['resident KV cache', 'attention(), K/V copied in', 'attention(), K/V repeated per head'];
/** The resident route with a smaller cache (createKVCache's dtype), by variant name. */
export const CACHE_DTYPE_VARIANTS = new Map([
  ['resident KV cache, bfloat16', 'bfloat16'], ['resident KV cache, int8', 'int8'],
]);

/**
 * The resident float32 step timed warm (steps repeated so the cache stays
 * as warm as a read of the same bytes): the untimed step before
 * each timed one reads the whole cache, as back-to-back steps do.
 */
export const WARM_VARIANT = 'resident KV cache, warm';

/** The many-sequence rows: a ragged batch (shape.lengths) and a window cache (shape.window). */
export const RAGGED_VARIANTS = ['resident KV cache', 'one cache per sequence'];
export const WINDOW_VARIANTS = ['window cache', 'full cache, window option'];

export function variants(shape) {
  if (shape.kind === 'decode') {
    if (shape.lengths) return RAGGED_VARIANTS;
    if (shape.window) return WINDOW_VARIANTS;
    return [...DECODE_VARIANTS.slice(0, shape.kvHeads < shape.heads ? 3 : 2), ...CACHE_DTYPE_VARIANTS.keys(),
      WARM_VARIANT];
  }
  return [shape.kind === 'mha' ? 'MultiHeadAttention' : 'attention'];
}

/**
 * `load` imports the package: by name in Node; the browser bench passes
 * its URL (bench/browser/peers.mjs).
 */
export async function create({ threads }, load = () => import('causal-attention')) {
  const { init } = await load();
  const ca = await init(threads === 1 ? { build: 'single' } : { build: 'threads', threads });
  return {
    label: `ours (${ca.build})`,
    threads: ca.threads,
    prepare(variant, shape, inputs) {
      if (shape.kind === 'decode') return prepareDecode(ca, variant, shape, inputs);
      return shape.kind === 'mha' ? prepareModule(ca, shape, inputs) : prepareAttention(ca, shape, inputs);
    },
    memoryBytes: () => ca.memoryBytes,
    dispose: () => ca.dispose(),
  };
}

function prepareAttention(ca, s, { q, k, v }) {
  // Written into a caller-supplied output (the API's hot-path form); the
  // copies of q, k, v into the wasm heap and of the output out of it are
  // part of every call.
  const out = new Float32Array(q.length);
  const options = {
    batch: s.batch, heads: s.heads, queryLength: s.length, headDim: s.headDim, causal: true, out,
  };
  return { run: () => ca.attention(q, k, v, options).output };
}

/**
 * One generation step at cacheLength L: the new token's keys and values go
 * in, its query attends over all L. Resident: the cache holds L - 1 tokens
 * in wasm memory; a step appends one and attends (truncating back first, so
 * every run is the same step). The attention() routes copy the whole cache
 * in on every call: with kvHeads (no repetition), or, as before grouped
 * heads existed, with every KV head repeated for its query heads. Every
 * timed step starts with cold caches (sweepCaches, untimed), except the
 * warm variant's (WARM_VARIANT).
 */
function prepareDecode(ca, variant, s, inputs) {
  if (variant === WARM_VARIANT) {
    const route = decodeRoute(ca, DECODE_VARIANTS[0], s, inputs);
    return { ...route, before: route.run };
  }
  return { ...decodeRoute(ca, variant, s, inputs), before: sweepCaches };
}

/**
 * A decode step's route by variant: run() does one step and returns the
 * output (the same preallocated array every time); release() frees the
 * cache(s). bench/studies/decode-sequences.mjs times them warm.
 * @returns {{ run: () => Float32Array, release?: () => void, tolerance?: number }}
 */
export function decodeRoute(ca, variant, s, inputs) {
  if (s.lengths) return raggedRoute(ca, variant, s, inputs);
  if (s.window) return windowRoute(ca, variant, s, inputs);
  const { batch, heads, kvHeads, headDim, cacheLength: L } = s;
  const out = new Float32Array(batch * heads * headDim);
  const dtype = CACHE_DTYPE_VARIANTS.get(variant);
  if (variant === 'resident KV cache' || dtype) {
    const { past, last } = decodeParts(s, inputs);
    const cache = ca.createKVCache({ batch, kvHeads, headDim, capacity: L, dtype });
    cache.append(past.k, past.v);
    const options = { heads, queryLength: 1, out };
    return {
      run() {
        cache.truncate(L - 1);
        return cache.append(last.k, last.v).attention(inputs.q, options).output;
      },
      release: () => cache.dispose(),
      // Rounded keys and values: the dtypes' accuracy bounds (of outputs below 1).
      tolerance: { bfloat16: 1e-2, int8: 3e-2 }[dtype ?? ''],
    };
  }
  const options = {
    batch, heads, kvHeads, queryLength: 1, keyLength: L, headDim, causal: 'bottom-right', out,
  };
  if (variant === 'attention(), K/V copied in') {
    return { run: () => ca.attention(inputs.q, inputs.k, inputs.v, options).output };
  }
  const group = heads / kvHeads;
  const repeat = (a) => {
    const size = a.length / (batch * kvHeads);
    const r = new Float32Array(a.length * group);
    for (let h = 0; h < batch * kvHeads; h++) {
      for (let g = 0; g < group; g++) r.set(a.subarray(h * size, (h + 1) * size), (h * group + g) * size);
    }
    return r;
  };
  const k = repeat(inputs.k);
  const v = repeat(inputs.v);
  const repeated = { ...options, kvHeads: heads };
  return { run: () => ca.attention(inputs.q, k, v, repeated).output };
}

// Two routes that must give the same numbers as the row they are timed
// against (one cache of all sequences; the window cache): checked to 1e-6.
const SAME = 1e-6;

/**
 * A ragged batch: sequence b holds lengths[b] tokens. 'resident KV cache':
 * one cache of B sequences, one step for all (each sequence truncated to
 * its L_b − 1, one token appended to every sequence, one attention);
 * 'one cache per sequence': B caches and B steps, each its own.
 */
function raggedRoute(ca, variant, s, inputs) {
  const { batch, heads, kvHeads, headDim, cacheLength: L } = s;
  const lengths = decodeLengths(s);
  const { past, last } = decodeParts(s, inputs);
  const q = inputs.q;
  const out = new Float32Array(batch * heads * headDim);
  // Sequence b's part of a [B, ...] tensor.
  const slice = (a, b) => a.subarray(b * (a.length / batch), (b + 1) * (a.length / batch));
  // Filled in plain loops: no closure keeps the inputs (hundreds of MiB) alive.
  const caches = variant === 'resident KV cache'
    ? [ca.createKVCache({ batch, kvHeads, headDim, capacity: L })]
    : lengths.map((n) => ca.createKVCache({ batch: 1, kvHeads, headDim, capacity: n }));
  for (let b = 0; b < batch; b++) {
    const [k, v] = [past.k, past.v].map((a) => takeRows(slice(a, b), kvHeads, L - 1, headDim, 0, lengths[b] - 1));
    if (caches.length === 1) caches[0].append(k, v, { sequences: [b] });
    else caches[b].append(k, v);
  }
  const release = () => caches.forEach((c) => c.dispose());
  if (caches.length === 1) {
    const [cache] = caches;
    const options = { heads, queryLength: 1, out };
    return {
      run() {
        lengths.forEach((n, b) => cache.truncate(n - 1, { sequences: [b] }));
        return cache.append(last.k, last.v).attention(q, options).output;
      },
      release,
    };
  }
  const steps = caches.map((cache, b) => {
    const [k, v, qb, outB] = [last.k, last.v, q, out].map((a) => slice(a, b));
    const options = { heads, queryLength: 1, out: outB };
    return () => cache.truncate(lengths[b] - 1).append(k, v).attention(qb, options);
  });
  return {
    run() {
      for (const step of steps) step();
      return out;
    },
    release,
    tolerance: SAME,
  };
}

/**
 * The window W after L tokens. 'window cache': createKVCache({ window: W,
 * capacity: 2·W }), filled in chunks of W (it keeps the newest W − 1 and
 * the chunk); 'full cache, window option': all L tokens, attention with {
 * window: { left: W − 1 } }. A step as for one sequence: truncate to L − 1,
 * append the newest token, attention.
 */
function windowRoute(ca, variant, s, inputs) {
  const { heads, kvHeads, headDim, cacheLength: L, window: W } = s;
  const { past, last } = decodeParts(s, inputs);
  const q = inputs.q;
  const out = new Float32Array(heads * headDim);
  const windowed = variant === 'window cache';
  const cache = ca.createKVCache(windowed
    ? { batch: 1, kvHeads, headDim, capacity: 2 * W, window: W }
    : { batch: 1, kvHeads, headDim, capacity: L });
  for (let at = 0; at < L - 1; at += W) {
    const to = Math.min(L - 1, at + W);
    cache.append(takeRows(past.k, kvHeads, L - 1, headDim, at, to), takeRows(past.v, kvHeads, L - 1, headDim, at, to));
  }
  const options = windowed ? { heads, queryLength: 1, out } : { heads, queryLength: 1, out, window: { left: W - 1 } };
  return {
    run() {
      cache.truncate(L - 1);
      return cache.append(last.k, last.v).attention(q, options).output;
    },
    release: () => cache.dispose(),
    tolerance: windowed ? undefined : SAME,
  };
}

/** [rows, cols] row-major → [cols, rows]: x·W layout to nn.Linear's [out, in]. */
function transpose(w, rows, cols) {
  const t = new Float32Array(w.length);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) t[c * rows + r] = w[r * cols + c];
  return t;
}

/**
 * The book's MultiHeadAttention(d_in, d_out, context_length, dropout 0,
 * num_heads) loaded with the onnxruntime graphs' weights (PyTorch layout),
 * so the outputs are compared, not only the times; in training mode, as
 * created. The training bench (ours-train.mjs) uses it too.
 */
export function moduleWithPeerWeights(ca, s) {
  const mha = new ca.MultiHeadAttention(s.dIn, s.dOut, s.length, 0.0, s.heads);
  const w = moduleWeights(s);
  return mha.loadStateDict({
    'W_query.weight': transpose(w.wq, s.dIn, s.dOut),
    'W_key.weight': transpose(w.wk, s.dIn, s.dOut),
    'W_value.weight': transpose(w.wv, s.dIn, s.dOut),
    'out_proj.weight': transpose(w.wo, s.dOut, s.dOut),
    'out_proj.bias': w.bo,
  });
}

function prepareModule(ca, s, { x }) {
  if (typeof ca.MultiHeadAttention !== 'function') {
    throw new Unavailable('ca.MultiHeadAttention is not in this build of the package yet');
  }
  const mha = moduleWithPeerWeights(ca, s).eval();
  const dims = [s.batch, s.length, s.dIn];
  const out = new Float32Array(s.batch * s.length * s.dOut);
  return { run: () => mha.forward(x, dims, { out }) };
}
