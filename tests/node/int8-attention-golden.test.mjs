// precision: 'int8' (src/attention/int8_operands.h, the integer kernels of
// src/attention/int16_rows-inl.h) through the public API, against the bits in
// tests/data/int8-attention-golden.json that the wasm build gave when the
// file was written (`node tests/node/int8-attention-golden.test.mjs --write`
// rewrites it): the scaled scores (returnScores 'scaled': the 15-bit queries,
// the smoothed 13-bit keys, their integer dot products, the outlier channels'
// float part and the q·mean shift, all integer or scalar float arithmetic) and the output (the integer P·V
// besides the float softmax). tests/native/attention/int8_attention_golden_test.cc
// runs the same cases through the C++ API on every native target: the same
// score bits (where every block of query rows is a multiple of four, the
// integer kernels' unit), the same output bits where the softmax is exact and
// P·V all integer (zero queries in a decode step), within 1e-5 (1 + |x|)
// elsewhere (the float softmax rounds differently per target). Inputs from the integer LCG of
// tests/native/kv/int8_rows_cases.h.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { init } from 'causal-attention';
import { hex, lcg } from './helpers.mjs';

const GOLDEN = new URL('../data/int8-attention-golden.json', import.meta.url);

// [name, heads, kvHeads, queryLength, keyLength, headDim, valueDim, kind]
// (batch 1, causal bottom-right). Every block of query rows is a multiple
// of four rows: the integer route throughout.
const CASES = [
  ['prefill_d64_t64', 4, 2, 64, 64, 64, 64, 'plain'],
  ['prefill_d32_t100_offset', 2, 1, 100, 100, 32, 32, 'offset'],
  ['prefill_d128_t36_outlier', 2, 2, 36, 36, 128, 128, 'outlier'],
  ['decode_g4_d64_keys300', 8, 2, 1, 300, 64, 64, 'plain'],
  ['chunk_t8_d48_dv80_keys200', 2, 1, 8, 200, 48, 80, 'offset'],
  ['zero_query_prefill_d64_t64', 4, 2, 64, 64, 64, 64, 'zeroQuery'],
  ['zero_query_decode_g4_d128_keys300', 8, 2, 1, 300, 128, 128, 'zeroQuery'],
];

// One case's q [H, Tq, D], k [KV, Tk, D], v [KV, Tk, Dv]: q = 2u, k = u,
// v = u in that order, then the kind's change: an offset 20u per key
// channel, four key channels x50, or zero queries.
export function inputs(index, H, KV, T, L, D, DV, kind) {
  const u = lcg(Math.imul(0x9e3779b9, index + 1));
  const q = new Float32Array(H * T * D).map(() => 2 * u());
  const k = new Float32Array(KV * L * D).map(() => u());
  const v = new Float32Array(KV * L * DV).map(() => u());
  if (kind === 'offset') {
    const offset = Array.from({ length: D }, () => Math.fround(20 * u()));
    for (let i = 0; i < k.length; i++) k[i] += offset[i % D];
  }
  if (kind === 'outlier') for (let i = 0; i < k.length; i++) if (i % D % 17 === 3) k[i] *= 50;
  if (kind === 'zeroQuery') q.fill(0);
  return { q, k, v };
}

function run(ca) {
  return CASES.map(([name, heads, kvHeads, queryLength, keyLength, headDim, valueDim, kind], i) => {
    const { q, k, v } = inputs(i, heads, kvHeads, queryLength, keyLength, headDim, valueDim, kind);
    const shape = { batch: 1, heads, kvHeads, queryLength, keyLength, headDim, valueDim, causal: 'bottom-right', precision: 'int8' };
    const { output } = ca.attention(q, k, v, shape);
    const { scores } = ca.attention(q, k, v, { ...shape, returnScores: 'scaled' });
    return { name, heads, kvHeads, queryLength, keyLength, headDim, valueDim, kind, output, scores };
  });
}

// The first index where two hex strings of 8 digits per value differ, or -1.
const firstDifference = (a, b) => {
  if (a === b) return -1;
  for (let j = 0; 8 * j < Math.max(a.length, b.length); j++) if (a.slice(8 * j, 8 * j + 8) !== b.slice(8 * j, 8 * j + 8)) return j;
  return -1;
};

if (process.argv.includes('--write')) {
  const ca = await init({ build: 'single' });
  const lines = run(ca).map(({ output, scores, ...c }) => '  ' + JSON.stringify({ ...c, out: hex(output), scores: hex(scores) }));
  writeFileSync(GOLDEN, `{"writer": "tests/node/int8-attention-golden.test.mjs --write",\n "cases": [\n${lines.join(',\n')}\n]}\n`);
} else {
  const golden = JSON.parse(readFileSync(GOLDEN, 'utf8')).cases;
  for (const [name, initOptions] of [['single', { build: 'single' }], ['threads', { build: 'threads', threads: 2 }]]) {
    describe(`int8 attention against the golden bits (${name} build)`, async () => {
      const ca = await init(initOptions);
      it('gives the golden file\'s output and score bits for every case', () => {
        assert.equal(golden.length, CASES.length);
        const results = run(ca);
        for (let i = 0; i < CASES.length; i++) {
          const got = results[i], want = golden[i];
          assert.deepEqual([got.name, got.heads, got.kvHeads, got.queryLength, got.keyLength, got.headDim, got.valueDim, got.kind],
            [want.name, want.heads, want.kvHeads, want.queryLength, want.keyLength, want.headDim, want.valueDim, want.kind]);
          assert.equal(firstDifference(hex(got.output), want.out), -1, `${got.name}: output differs`);
          assert.equal(firstDifference(hex(got.scores), want.scores), -1, `${got.name}: scores differ`);
        }
      });
      it('the file is not all zeros: a changed route would show', () => {
        for (const c of golden) {
          assert.ok(/[1-9a-f]/.test(c.out), c.name);
          assert.equal(/[1-9a-f]/.test(c.scores), c.kind !== 'zeroQuery', c.name);
        }
      });
    });
  }
}
