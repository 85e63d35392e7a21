// Whether a change kept every output's bits: runs many attention cases
// through a checkout's dist/ (forward with and without weights, logSumExp and
// scores, the backward, KV-cache decode steps and prefill chunks in three
// dtypes, the modules' forward and backward; masks, windows, keyLengths,
// softcap, sinks, GQA, dropout, both layouts, odd sizes) and prints one
// FNV-1a hash of the output bits per case, then one of them all. Run it on
// two checkouts and compare (diff the outputs):
//   node bench/studies/bits.mjs [checkout=.] [--build=single|threads]
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const args = process.argv.slice(2);
const checkout = resolve(args.find((a) => !a.startsWith('--')) ?? '.');
const build = (args.find((a) => a.startsWith('--build=')) ?? '--build=single').slice(8);
const { init } = await import(pathToFileURL(`${checkout}/dist/node.mjs`).href);
const ca = await init({ build, gemmKernel: 'simd128' });

/** Deterministic values in [-1, 1) (an integer LCG). */
function values(n, seed) {
  let s = (seed * 2654435761) >>> 0;
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = s / 2 ** 31 - 1;
  }
  return out;
}

let all = 0x811c9dc5;
/** FNV-1a over the bytes of the arrays. */
function hash(...arrays) {
  let h = 0x811c9dc5;
  for (const a of arrays) {
    if (!a) continue;
    const bytes = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
    for (let i = 0; i < bytes.length; i++) h = Math.imul(h ^ bytes[i], 16777619) >>> 0;
  }
  all = Math.imul(all ^ h, 16777619) >>> 0;
  return h.toString(16).padStart(8, '0');
}

const lines = [];
const record = (name, f) => {
  try {
    lines.push(`${hash(...f())}  ${name}`);
  } catch (e) {
    lines.push(`error     ${name}: ${e.message}`);
  }
};

const shapes = [
  { batch: 1, heads: 1, queryLength: 1, keyLength: 1, headDim: 1 },
  { batch: 2, heads: 3, queryLength: 5, keyLength: 7, headDim: 3 },
  { batch: 1, heads: 2, queryLength: 17, keyLength: 17, headDim: 17 },
  { batch: 1, heads: 4, kvHeads: 2, queryLength: 65, keyLength: 65, headDim: 32, valueDim: 24 },
  { batch: 2, heads: 2, queryLength: 130, keyLength: 130, headDim: 64 },
  { batch: 1, heads: 8, kvHeads: 2, queryLength: 4, keyLength: 300, headDim: 64 },
  { batch: 1, heads: 2, queryLength: 300, keyLength: 300, headDim: 16 },
];
const variants = (s) => {
  const tq = s.queryLength, tk = s.keyLength, H = s.heads;
  const v = [
    ['causal', { causal: true }],
    ['none', { causal: false }],
    ['bottom-right', { causal: 'bottom-right' }],
    ['renormalize', { causal: true, maskStrategy: 'renormalize' }],
    ['window', { causal: true, window: { left: 5 } }],
    ['window both', { causal: false, window: { left: 3, right: 2 } }],
    ['softcap', { causal: true, softcap: 5 }],
    ['sinks', { causal: true, sinks: values(H, 9) }],
    ['bool mask', { causal: true, mask: Uint8Array.from(values(tq * tk, 3), (x, i) => (x > -0.5 || i % tk === 0 ? 1 : 0)), maskShape: [tq, tk] }],
    ['additive mask', { causal: false, mask: Float32Array.from(values(H * tq * tk, 4), (x) => (x < -0.8 ? -Infinity : x)), maskShape: [H, tq, tk] }],
    ['keyLengths', { causal: false, keyLengths: Array.from({ length: s.batch }, (_, b) => Math.max(1, tk - 2 * b - 1)) }],
    ['dropout', { causal: true, dropout: 0.2, training: true, seed: 7 }],
    ['bshd', { causal: true, layout: 'bshd' }],
  ];
  return v;
};

for (const [si, s] of shapes.entries()) {
  const kvH = s.kvHeads ?? s.heads, dv = s.valueDim ?? s.headDim;
  const q = values(s.batch * s.heads * s.queryLength * s.headDim, 10 + si);
  const k = values(s.batch * kvH * s.keyLength * s.headDim, 20 + si);
  const v = values(s.batch * kvH * s.keyLength * dv, 30 + si);
  const dO = values(s.batch * s.heads * s.queryLength * dv, 40 + si);
  for (const [name, extra] of variants(s)) {
    const o = { ...s, ...extra };
    const tag = `${JSON.stringify(s)} ${name}`;
    record(`forward ${tag}`, () => {
      const r = ca.attention(q, k, v, { ...o, returnLogSumExp: !o.maskStrategy });
      return [r.output, r.logSumExp];
    });
    record(`forward+weights ${tag}`, () => {
      const r = ca.attention(q, k, v, { ...o, returnWeights: true });
      return [r.output, r.weights];
    });
    if (!o.maskStrategy) {
      record(`scores ${tag}`, () => [ca.attention(q, k, v, { ...o, returnScores: 'masked' }).scores]);
      record(`backward ${tag}`, () => {
        const f = ca.attention(q, k, v, { ...o, returnLogSumExp: true });
        const g = ca.attentionBackward(dO, q, k, v, f.output, f.logSumExp, { ...o, seed: f.seed ?? o.seed });
        return [g.gradQ, g.gradK, g.gradV, g.gradSinks];
      });
    }
  }
}

// KV caches: decode steps (1, 2, 4, 8 query rows per KV head) and a prefill chunk, per dtype.
for (const dtype of ['float32', 'bfloat16', 'int8']) {
  for (const [headDim, kvHeads, groups] of [[64, 2, 4], [128, 1, 8], [48, 2, 1], [64, 1, 2], [32, 2, 4]]) {
    const heads = kvHeads * groups;
    const cache = ca.createKVCache({ batch: 1, kvHeads, headDim, capacity: 400, dtype });
    cache.append(values(kvHeads * 333 * headDim, 50), values(kvHeads * 333 * headDim, 51));
    for (const tq of [1, 3]) {
      const q = values(heads * tq * headDim, 52 + tq);
      record(`cache ${dtype} D${headDim} kv${kvHeads} x${groups} rows ${tq}`,
        () => [cache.attention(q, { heads, queryLength: tq }).output]);
      record(`cache ${dtype} D${headDim} kv${kvHeads} x${groups} rows ${tq} window+weights`,
        () => { const r = cache.attention(q, { heads, queryLength: tq, window: { left: 40 }, returnWeights: true }); return [r.output, r.weights]; });
    }
    cache.dispose();
  }
}

// The modules.
ca.manualSeed(123);
const gqa = new ca.GroupedQueryAttention(64, 64, 8, 2, { contextLength: 64, ropeBase: 500000 });
const mha = new ca.MultiHeadAttention(64, 64, 64, 0.1, 4);
const x = values(2 * 40 * 64, 60);
for (const [name, m] of [['gqa', gqa], ['mha', mha]]) {
  record(`module ${name} forward+backward`, () => {
    const y = m.forward(x, [2, 40, 64]);
    const gx = m.backward(values(y.length, 61));
    return [y, gx, ...Object.values(m.gradients())];
  });
}

console.log(lines.join('\n'));
console.log(`${all.toString(16).padStart(8, '0')}  all (${lines.length} cases, ${ca.build}, ${ca.gemmKernel})`);
