// Long contexts: attention without weights needs no
// [batch, heads, queryLength, keyLength] tensor, so shapes whose weights
// alone would pass 4 GiB (b·h·Tq·Tk·4 >= 2^32, beyond size_t on wasm32)
// must run when the weights are not asked for — ca.attention, a chunked
// prefill into a long KV cache, attentionBackward and a module forward —
// and be a RangeError naming the weights only when they are.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { init } from 'causal-attention';
import { randomArray } from './js-reference.mjs';

/** Row `i` of head (b, h) of causal (top-left) attention with headDim 1, in float64. */
function row(q, k, v, { heads, queryLength: tq, keyLength: tk = tq }, b, h, i, offset = tk - tq) {
  const qi = q[(b * heads + h) * tq + i];
  const base = (b * heads + h) * tk;
  let max = -Infinity;
  for (let j = 0; j <= i + offset; j++) max = Math.max(max, qi * k[base + j]);
  let sum = 0;
  let acc = 0;
  for (let j = 0; j <= i + offset; j++) {
    const e = Math.exp(qi * k[base + j] - max);
    sum += e;
    acc += e * v[base + j];
  }
  return acc / sum;
}

const near = (a, b) => Math.abs(a - b) <= 1e-5 * (1 + Math.abs(b));

// 1024 sequences of 1024 tokens, headDim 1: b·h·Tq·Tk = 2^30 (4 GiB of weights).
const WIDE = { batch: 1024, heads: 1, queryLength: 1024, headDim: 1, causal: true };
const WIDE_LENGTH = 1024 * 1024;
const wideInputs = (seed) => [0, 1, 2].map((i) => randomArray(WIDE_LENGTH, seed + i));

describe('long contexts: no weights tensor unless asked for', async () => {
  const ca = await init({ build: 'single' });

  it('ca.attention at b·h·Tq·Tk = 2^30 (1024 sequences of 1024 tokens)', () => {
    const shape = WIDE;
    const [q, k, v] = wideInputs(1);
    const { output } = ca.attention(q, k, v, shape);
    for (const [b, i] of [[0, 0], [0, 1023], [517, 300], [1023, 1023]]) {
      assert.ok(near(output[b * 1024 + i], row(q, k, v, shape, b, 0, i, 0)), `sequence ${b} row ${i}`);
    }
    // Asking for the weights is the error, and it names them.
    assert.throws(() => ca.attention(q, k, v, { ...shape, returnWeights: true }),
      { name: 'RangeError', message: /^options\.returnWeights: the weights \[batch 1024, heads 1, queryLength 1024, keyLength 1024\] would take 4\.00 GiB, more than one block of a wasm32 heap holds \(2\.00 GiB\)/ });
  });

  it('attentionBackward at the same size', () => {
    const shape = WIDE;
    const [q, k, v] = wideInputs(4);
    const forward = ca.attention(q, k, v, { ...shape, returnLogSumExp: true });
    const { gradV } = ca.attentionBackward(new Float32Array(WIDE_LENGTH).fill(1), q, k, v, forward.output,
      forward.logSumExp, shape);
    // dO = 1 everywhere: gradV of key j is the sum of its weights over the rows that see it;
    // summed over a sequence's keys that is the number of rows.
    let total = 0;
    for (let j = 0; j < 1024; j++) total += gradV[j];
    assert.ok(Math.abs(total - 1024) < 1e-2, `${total}`);
  });

  it('a chunked prefill into a long KV cache (32 query heads over 1 KV head, chunks of 4096 tokens)', () => {
    const cache = ca.createKVCache({ batch: 1, kvHeads: 1, headDim: 1, capacity: 8192 });
    try {
      const k = randomArray(8192, 7);
      const v = randomArray(8192, 8);
      cache.append(k.subarray(0, 4096), v.subarray(0, 4096));
      const q = randomArray(32 * 4096, 9);
      cache.append(k.subarray(4096), v.subarray(4096));
      // The second chunk's queries over all 8192 keys: 32 × 4096 × 8192 weights would be 4 GiB.
      const shape = { heads: 32, queryLength: 4096 };
      const { output } = cache.attention(q, shape);
      const dense = { heads: 1, queryLength: 4096, keyLength: 8192 };
      for (const [h, i] of [[0, 0], [31, 4095], [20, 1000]]) {
        const expected = row(q.subarray(h * 4096, (h + 1) * 4096), k, v, dense, 0, 0, i);
        assert.ok(near(output[h * 4096 + i], expected), `head ${h} row ${i}`);
      }
    } finally {
      cache.dispose();
    }
  });

  it('a module forward over 32 768 tokens', () => {
    ca.manualSeed(1);
    const layer = new ca.CausalAttention(1, 1, 32768, 0.0).eval();
    const x = randomArray(32768, 10);
    const y = layer.forward(x, [1, 32768, 1]);
    assert.equal(y.length, 32768);
    assert.ok(y.every(Number.isFinite));
  });
});
