#!/usr/bin/env node
// Why the int8 KV cache keeps a scale per block of 32 values and not one per
// token (src/kv/kv_storage.h): a decode step (8 query heads, 2 KV heads, head
// size 128, 1000 keys) in float64 on the unrounded data against the same
// step on keys and values rounded three ways (bfloat16; int8 with one
// symmetric scale per token and KV head; int8 with one per block of 32), as
// the largest error over the output's largest value. Data: N(0, 1), sharper
// queries, and 4 outlier channels ×8 in the keys (as real K caches have) or
// in keys and values. Plain JS, no package; deterministic.
//   node bench/studies/int8-scale-block.mjs
let seed = 7;
const uniform = () => {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return seed / 2147483648;
};
const normal = () => Math.sqrt(-2 * Math.log(uniform() || 1e-9)) * Math.cos(2 * Math.PI * uniform());
const [H, KV, D, L] = [8, 2, 128, 1000];

/** Rounded to int8 with a symmetric scale per `block` values, read back. */
function int8(a, block) {
  const out = new Float32Array(a.length);
  for (let r = 0; r < a.length; r += block) {
    let max = 0;
    for (let i = r; i < r + block; i++) max = Math.max(max, Math.abs(a[i]));
    const s = Math.fround(max / 127);
    for (let i = r; i < r + block; i++) out[i] = s > 0 ? Math.fround(Math.round(a[i] / s) * s) : 0;
  }
  return out;
}

function bfloat16(a) {
  const f = Float32Array.from(a);
  const u = new Uint32Array(f.buffer);
  for (let i = 0; i < u.length; i++) u[i] = ((u[i] + 0x7fff + ((u[i] >>> 16) & 1)) >>> 16) << 16;
  return f;
}

function attention(q, k, v) {
  const out = new Float64Array(H * D);
  for (let h = 0; h < H; h++) {
    const kv = Math.floor(h / (H / KV));
    const s = new Float64Array(L);
    let m = -Infinity;
    for (let j = 0; j < L; j++) {
      let dot = 0;
      for (let c = 0; c < D; c++) dot += q[h * D + c] * k[(kv * L + j) * D + c];
      s[j] = dot / Math.sqrt(D);
      m = Math.max(m, s[j]);
    }
    let sum = 0;
    for (let j = 0; j < L; j++) sum += (s[j] = Math.exp(s[j] - m));
    for (let j = 0; j < L; j++) for (let c = 0; c < D; c++) out[h * D + c] += (s[j] / sum) * v[(kv * L + j) * D + c];
  }
  return out;
}

console.log('| data | bfloat16 | int8, scale per token | int8, scale per 32 values |\n|---|---|---|---|');
for (const [name, kOut, vOut, qScale] of [
  ['N(0, 1)', 1, 1, 1], ['N(0, 1), queries ×3', 1, 1, 3], ['4 key channels ×8', 8, 1, 1], ['4 key and value channels ×8', 8, 8, 1],
]) {
  seed = 7;
  const q = Float32Array.from({ length: H * D }, () => normal() * qScale);
  const k = Float32Array.from({ length: KV * L * D }, (_, i) => normal() * (i % D < 4 ? kOut : 1));
  const v = Float32Array.from({ length: KV * L * D }, (_, i) => normal() * (i % D < 4 ? vOut : 1));
  const exact = attention(q, k, v);
  const largest = Math.max(...exact.map(Math.abs));
  const error = (o) => {
    let worst = 0;
    for (let i = 0; i < o.length; i++) worst = Math.max(worst, Math.abs(o[i] - exact[i]));
    return (worst / largest).toExponential(2);
  };
  console.log(`| ${name} | ${error(attention(q, bfloat16(k), bfloat16(v)))} | ` +
    `${error(attention(q, int8(k, D), int8(v, D)))} | ${error(attention(q, int8(k, 32), int8(v, 32)))} |`);
}
