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

/** Bytes of cached keys and values a decode step reads: B·Hkv·L·D·2·4. */
export function decodeBytes(s) {
  return s.batch * s.kvHeads * s.cacheLength * s.headDim * 2 * 4;
}

export function shapeName(s) {
  if (s.kind === 'decode') {
    return `${s.model} (${s.heads}/${s.kvHeads} heads, D ${s.headDim}), ${s.cacheLength} cached`;
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
  if (s.kind === 'decode') return 4 * s.batch * s.heads * s.cacheLength * s.headDim;
  if (s.kind === 'mha') {
    const projections = 2 * s.batch * s.length * s.dIn * s.dOut * 3 + 2 * s.batch * s.length * s.dOut * s.dOut;
    const headDim = s.dOut / s.heads;
    return projections + attentionFlops({ batch: s.batch, heads: s.heads, length: s.length, headDim });
  }
  return attentionFlops(s);
}

// Mulberry32: a tiny seeded generator, so every worker can rebuild the same
// inputs instead of receiving them.
function mulberry32(seed) {
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
 * before this step (k, v [B, Hkv, L - 1, D]) and this step's token's k, v
 * [B, Hkv, 1, D].
 */
export function decodeParts(s, { k, v }) {
  const heads = s.batch * s.kvHeads;
  const L = s.cacheLength;
  const D = s.headDim;
  const rows = (a, from, to) => {
    const out = new Float32Array(heads * (to - from) * D);
    for (let h = 0; h < heads; h++) {
      out.set(a.subarray((h * L + from) * D, (h * L + to) * D), h * (to - from) * D);
    }
    return out;
  };
  return {
    past: { k: rows(k, 0, L - 1), v: rows(v, 0, L - 1) },
    last: { k: rows(k, L - 1, L), v: rows(v, L - 1, L) },
  };
}

/** A seeded source of uniform [-1, 1) Float32Arrays: makeUniform(seed)(n). */
export function makeUniform(seed) {
  const random = mulberry32(seed);
  return (n) => uniform(n, random);
}
