#!/usr/bin/env node
// The many-sequence decode rows warm, as interleaved ratios within one run (on a
// shared machine only those compare): the decode table's shapes and routes
// (bench/lib/shapes.mjs DECODE_SEQUENCE_SHAPES, bench/peers/ours.mjs
// decodeRoute; the table, `node bench/run.mjs --decode --rows=ragged,window`,
// times them from cold caches against onnxruntime-web too). Llama-3-8B layer
// shape (32 query heads, 8 KV heads, head size 128), one thread unless told:
//   ragged   one step of one cache of 8 sequences of 512, 1024, ..., 4096
//            tokens vs 8 single-sequence caches' steps (the same keys)
//   window   a window cache (W 4096, capacity 8192) after 32 768 tokens
//            vs a full cache of those 32 768 with the window option
// A step: truncate to L − 1, append the newest token, attention. Each pair
// is timed interleaved after warm-up, `rounds` times (default 3); prints
// each round's medians and ratio.
//   node bench/studies/decode-sequences.mjs [threads] [rounds]
import { decodeRoute, variants } from '../peers/ours.mjs';
import { DECODE_SEQUENCE_SHAPES, makeInputs, shapeName } from '../lib/shapes.mjs';
import { interleaved } from '../lib/timing.mjs';
import { init } from 'causal-attention';

const threads = Number(process.argv[2] ?? 1);
const rounds = Number(process.argv[3] ?? 3);
const ca = await init(threads > 1 ? { build: 'threads', threads } : { build: 'single' });

const pairs = DECODE_SEQUENCE_SHAPES.map((shape) => {
  const inputs = makeInputs(shape);
  // The first variant is the table's row 1; the second computes the same numbers another way.
  const [a, b] = variants(shape).map((variant) => ({ variant, ...decodeRoute(ca, variant, shape, inputs) }));
  const [x, y] = [a.run().slice(), b.run()];
  const diff = x.reduce((m, v, i) => Math.max(m, Math.abs(v - y[i])), 0);
  console.log(`${shapeName(shape)}: ${a.variant} vs ${b.variant}; max |Δ| ${diff}`);
  return { shape, a, b };
});
console.log(`${ca.threads} thread(s); medians of 15 interleaved runs after 1 s of warm-up`);
for (let r = 0; r < rounds; r++) {
  console.log(`round ${r + 1}: ` + pairs.map(({ shape, a, b }) => {
    const [ta, tb] = interleaved(a.run, b.run, 1000);
    return `${shape.row} ${ta.toFixed(2)} vs ${tb.toFixed(2)} ms (ratio ${(ta / tb).toFixed(3)})`;
  }).join('; '));
}
for (const { a, b } of pairs) {
  a.release?.();
  b.release?.();
}
ca.dispose();
