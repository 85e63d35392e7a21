// Benchmark shapes, FLOP counts and deterministic inputs.
//
// Attention tensors are row-major Float32Arrays [B, H, T, D] (batch, heads,
// tokens, head size); the module shape is the book's MultiHeadAttention input
// x [batch, tokens, dIn].

/** The attention shapes of the table, in display order. */
export const ATTENTION_SHAPES = [
  { batch: 1, heads: 12, length: 128, headDim: 64 },
  { batch: 1, heads: 12, length: 512, headDim: 64 },
  { batch: 1, heads: 12, length: 1024, headDim: 64 },
  { batch: 1, heads: 12, length: 2048, headDim: 64 },
  { batch: 1, heads: 1, length: 4096, headDim: 64 },
  { batch: 1, heads: 2, length: 8192, headDim: 64, note: 'few long heads: threads split query blocks' },
  { batch: 8, heads: 12, length: 1024, headDim: 64 },
  { batch: 2, heads: 1, length: 6, headDim: 2, note: "the book's toy" },
].map((s) => ({ kind: 'attention', ...s }));

/** The book's bonus notebook: batch 8, 1024 tokens, d 768, 12 heads. */
export const MHA_SHAPE = {
  kind: 'mha', batch: 8, length: 1024, dIn: 768, dOut: 768, heads: 12,
};

/** The memory check: one long sequence, no weights, single-threaded build. */
export const MEMORY_CHECK_SHAPE = {
  kind: 'attention', batch: 1, heads: 1, length: 16384, headDim: 64,
};

/**
 * The decode table: one new token (q [1, H, 1, D]) against a KV cache of
 * cacheLength tokens (k, v [1, kvHeads, cacheLength, D]).
 */
export const DECODE_MODELS = [
  { model: 'GPT-2 small', heads: 12, kvHeads: 12, headDim: 64 },
  { model: 'Llama-3-8B', heads: 32, kvHeads: 8, headDim: 128 },
];
export const DECODE_LENGTHS = [1024, 4096, 16384];
export const DECODE_SHAPES = DECODE_MODELS.flatMap((m) => DECODE_LENGTHS.map((cacheLength) => ({
  kind: 'decode', batch: 1, ...m, cacheLength,
})));

/**
 * The many-sequence rows, at the Llama-3-8B layer: `ragged`, one cache of 8
 * sequences of 512, 1024, ..., 4096 tokens (`lengths`; cacheLength the
 * longest: the inputs are [8, Hkv, 4096, D], sequence b using its first
 * lengths[b] tokens); `window`, a window cache of W 4096 after 32 768 tokens
 * (`window`; a query sees its own key and the W − 1 before it).
 */
const LLAMA = DECODE_MODELS[1];
export const DECODE_SEQUENCE_SHAPES = [
  {
    kind: 'decode', row: 'ragged', batch: 8, ...LLAMA, cacheLength: 4096,
    lengths: Array.from({ length: 8 }, (_, b) => 512 * (b + 1)),
  },
  { kind: 'decode', row: 'window', batch: 1, ...LLAMA, cacheLength: 32768, window: 4096 },
];

/** Each sequence's length in a decode shape: `lengths`, or cacheLength for all. */
export function decodeLengths(s) {
  return s.lengths ?? Array.from({ length: s.batch }, () => s.cacheLength);
}

/** Keys each sequence's query sees: its length, or at most W in a window. */
function visibleKeys(s) {
  return decodeLengths(s).reduce((sum, L) => sum + Math.min(L, s.window ?? L), 0);
}

/**
 * Bytes of cached keys and values a decode step must read: Hkv·D·2·4 per
 * key a query sees (B·Hkv·L·D·2·4 for B sequences of L tokens).
 */
export function decodeBytes(s) {
  return visibleKeys(s) * s.kvHeads * s.headDim * 2 * 4;
}

export function shapeName(s) {
  if (s.kind === 'decode') {
    const model = `${s.model} (${s.heads}/${s.kvHeads} heads, D ${s.headDim})`;
    if (s.lengths) return `${model}, ${s.batch} sequences of ${s.lengths[0]}–${s.cacheLength} cached`;
    if (s.window) return `${model}, window ${s.window} of ${s.cacheLength} cached`;
    return `${model}, ${s.cacheLength} cached`;
  }
  if (s.kind === 'mha') {
    return `MHA module (B ${s.batch}, T ${s.length}, d ${s.dIn}, ${s.heads} heads)`;
  }
  return `(${s.batch},${s.heads},${s.length},${s.headDim})`;
}

/** Causal attention FLOPs: 4·B·H·D·T(T+1)/2 (Q·Kᵀ and W·V over the visible keys). */
export function attentionFlops({ batch, heads, length, headDim }) {
  return (4 * batch * heads * headDim * length * (length + 1)) / 2;
}

/** FLOPs of a shape: for the module, the Q, K, V and out projections plus causal attention. */
export function flops(s) {
  if (s.kind === 'decode') return 4 * s.heads * visibleKeys(s) * s.headDim;
  if (s.kind === 'mha') {
    const projections = 2 * s.batch * s.length * s.dIn * s.dOut * 3 + 2 * s.batch * s.length * s.dOut * s.dOut;
    const headDim = s.dOut / s.heads;
    return projections + attentionFlops({ batch: s.batch, heads: s.heads, length: s.length, headDim });
  }
  return attentionFlops(s);
}

// Mulberry32: a tiny seeded generator, so every worker can rebuild the same
// inputs instead of receiving them.
export function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function uniform(n, random) {
  const a = new Float32Array(n);
  for (let i = 0; i < n; ++i) a[i] = random() * 2 - 1;
  return a;
}

/**
 * Same inputs for every implementation: q, k, v uniform in [-1, 1) for
 * attention (for decode: the new token's q and the whole cache's k, v, the
 * last token included); x for the module.
 */
export function makeInputs(s, seed = 1234) {
  const next = makeUniform(seed);
  if (s.kind === 'mha') return { x: next(s.batch * s.length * s.dIn) };
  if (s.kind === 'decode') {
    const kv = s.batch * s.kvHeads * s.cacheLength * s.headDim;
    return { q: next(s.batch * s.heads * s.headDim), k: next(kv), v: next(kv) };
  }
  // Training (bench/lib/training.mjs): also the gradient of the output.
  if (s.kind === 'mha-train') {
    const x = next(s.batch * s.length * s.dIn);
    return { x, gradOutput: next(s.batch * s.length * s.dOut) };
  }
  const n = s.batch * s.heads * s.length * s.headDim;
  const qkv = { q: next(n), k: next(n), v: next(n) };
  return s.kind === 'attention-train' ? { ...qkv, gradOutput: next(n) } : qkv;
}

/**
 * A decode step's inputs split as a generation loop holds them: the cache
 * before this step (k, v [B, Hkv, L − 1, D]; in a ragged batch sequence b's
 * rows from lengths[b] − 1 on are padding) and this step's token's k, v
 * [B, Hkv, 1, D] (sequence b's row lengths[b] − 1).
 */
export function decodeParts(s, { k, v }) {
  const heads = s.batch * s.kvHeads;
  const L = s.cacheLength;
  const D = s.headDim;
  const lengths = decodeLengths(s);
  const newest = (a) => {
    const out = new Float32Array(heads * D);
    for (let h = 0; h < heads; h++) {
      const row = h * L + lengths[Math.floor(h / s.kvHeads)] - 1;
      out.set(a.subarray(row * D, (row + 1) * D), h * D);
    }
    return out;
  };
  return {
    past: { k: takeRows(k, heads, L, D, 0, L - 1), v: takeRows(v, heads, L, D, 0, L - 1) },
    last: { k: newest(k), v: newest(v) },
  };
}

/**
 * Rows [from, to) of every head of a [heads, length, D] tensor, as a new
 * [heads, to − from, D] one.
 */
export function takeRows(a, heads, length, D, from, to) {
  const out = new Float32Array(heads * (to - from) * D);
  for (let h = 0; h < heads; h++) {
    out.set(a.subarray((h * length + from) * D, (h * length + to) * D), h * (to - from) * D);
  }
  return out;
}

/** A seeded source of uniform [-1, 1) Float32Arrays: makeUniform(seed)(n). */
export function makeUniform(seed) {
  const random = mulberry32(seed);
  return (n) => uniform(n, random);
}
