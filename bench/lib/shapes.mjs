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

export function shapeName(s) {
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
 * attention; x for the module.
 */
export function makeInputs(s, seed = 1234) {
  const next = makeUniform(seed);
  if (s.kind === 'mha') return { x: next(s.batch * s.length * s.dIn) };
  // Training (bench/lib/training.mjs): also the gradient of the output.
  if (s.kind === 'mha-train') {
    const x = next(s.batch * s.length * s.dIn);
    return { x, gradOutput: next(s.batch * s.length * s.dOut) };
  }
  const n = s.batch * s.heads * s.length * s.headDim;
  const qkv = { q: next(n), k: next(n), v: next(n) };
  return s.kind === 'attention-train' ? { ...qkv, gradOutput: next(n) } : qkv;
}

/** A seeded source of uniform [-1, 1) Float32Arrays: makeUniform(seed)(n). */
export function makeUniform(seed) {
  const random = mulberry32(seed);
  return (n) => uniform(n, random);
}
