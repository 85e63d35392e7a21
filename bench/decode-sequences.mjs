#!/usr/bin/env node
// Issue 20's decode rows, as interleaved ratios within one run (on a shared
// machine only those compare): one decode step, Llama-3-8B layer shape (32
// query heads, 8 KV heads, head size 128), one thread unless told.
//   ragged   one cache.attention over 8 sequences of 512, 1024, ..., 4096
//            tokens vs 8 single-sequence caches' steps (the same keys)
//   window   a window cache (W = 4096, capacity 8192) after 32 768 tokens
//            vs a full cache of those 32 768 with the window option
// Each pair is timed interleaved after warm-up, `rounds` times (default 3);
// prints each round's medians and ratio.
//   node bench/decode-sequences.mjs [threads] [rounds]
import { init } from '../dist/node.mjs';
import { interleaved, lcgRandom } from './lib/timing.mjs';

const threads = Number(process.argv[2] ?? 1);
const rounds = Number(process.argv[3] ?? 3);
const ca = await init({ build: threads > 1 ? 'threads' : 'single', threads });
const H = 32, KV = 8, D = 128;

const random = lcgRandom();
const mb = (cache) => (cache.capacity * cache.batch * KV * D * 2 * 4) / 2 ** 20;

// Ragged: 8 sequences, each appended in chunks of at most 1024 tokens.
const lengths = [1, 2, 3, 4, 5, 6, 7, 8].map((i) => 512 * i);
const ragged = ca.createKVCache({ batch: 8, kvHeads: KV, headDim: D, capacity: 4096 });
const alone = lengths.map((n) => ca.createKVCache({ batch: 1, kvHeads: KV, headDim: D, capacity: n }));
lengths.forEach((n, s) => {
  for (let at = 0; at < n; at += 1024) {
    const t = Math.min(1024, n - at);
    const k = random(KV * t * D), v = random(KV * t * D);
    ragged.append(k, v, { sequences: [s] });
    alone[s].append(k, v);
  }
});
const qRagged = random(8 * H * D);
const batchedStep = () => ragged.attention(qRagged, { heads: H, queryLength: 1 });
const separateSteps = () => alone.forEach((c, s) =>
  c.attention(qRagged.subarray(s * H * D, (s + 1) * H * D), { heads: H, queryLength: 1 }));

// Window: 32 768 tokens through a window cache and into a full cache.
const W = 4096, total = 32768;
const windowed = ca.createKVCache({ batch: 1, kvHeads: KV, headDim: D, capacity: 2 * W, window: W });
const full = ca.createKVCache({ batch: 1, kvHeads: KV, headDim: D, capacity: total });
for (let at = 0; at < total; at += 1024) {
  const k = random(KV * 1024 * D), v = random(KV * 1024 * D);
  windowed.append(k, v);
  full.append(k, v);
}
const q = random(H * D);
const windowStep = () => windowed.attention(q, { heads: H, queryLength: 1 });
const fullStep = () => full.attention(q, { heads: H, queryLength: 1, window: { left: W - 1 } });
// The same numbers: the window cache equals full-history attention with the window.
const [a, b] = [windowStep().output, fullStep().output];
const diff = a.reduce((m, x, i) => Math.max(m, Math.abs(x - b[i])), 0);

console.log(`${threads} thread(s), ${H} heads, ${KV} KV heads, head size 128; medians of 15 interleaved runs`);
console.log(`ragged: 8 sequences of ${lengths.join(', ')} tokens; caches ${mb(ragged).toFixed(0)} MiB ` +
  `(one, capacity 4096 each) vs ${alone.reduce((s, c) => s + mb(c), 0).toFixed(0)} MiB (eight)`);
console.log(`window: W ${W} after ${total} tokens; caches ${mb(windowed).toFixed(0)} MiB (window, capacity ${2 * W}) ` +
  `vs ${mb(full).toFixed(0)} MiB (full); max |window − full| ${diff.toExponential(1)}`);
for (let r = 0; r < rounds; r++) {
  const [batched, separate] = interleaved(batchedStep, separateSteps, 1000);
  const [win, fullMs] = interleaved(windowStep, fullStep, 1000);
  console.log(`round ${r + 1}: ragged batch ${batched.toFixed(2)} ms vs 8 steps ${separate.toFixed(2)} ms ` +
    `(ratio ${(batched / separate).toFixed(3)}); window cache ${win.toFixed(2)} ms vs full cache + window ` +
    `${fullMs.toFixed(2)} ms (ratio ${(win / fullMs).toFixed(3)})`);
}
[ragged, ...alone, windowed, full].forEach((c) => c.dispose());
ca.dispose();
