// An int8 cache's decode steps (the integer route, src/kv/wasm/int8_rows-inl.h)
// through the public API, bit for bit against tests/data/int8-decode-golden.json:
// the outputs the wasm route gave when the file was written (`node
// tests/node/int8-decode-golden.test.mjs --write` rewrites it), so that any
// change to the route's bits shows. GQA groups of 4 and 8 query rows, MHA's
// one row per KV head and groups of 3, 6 and 7, head
// sizes 16-128, values wider than keys (48 / 80), key counts 1 to 1000 (one
// tile, a partial last tile, decode chunks), an outlier token (values x200),
// a NaN value block and a NaN query (NaN rows, the float32 route), zero
// queries (uniform weights). The inputs come from an integer LCG that
// tests/native/kv/int8_rows_cases.h writes identically: the native test
// (tests/native/kv/int8_rows_test.cc) runs the same cases through the C++ API.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { init } from 'causal-attention';
import { hex, lcg } from './helpers.mjs';

const GOLDEN = new URL('../data/int8-decode-golden.json', import.meta.url);

// [name, heads, kvHeads, headDim, valueDim, keys, kind]
const CASES = [
  ['d16_g4_keys1', 8, 2, 16, 16, 1, 'plain'],
  ['d32_g8_keys31', 16, 2, 32, 32, 31, 'plain'],
  ['d48_g4_keys64', 8, 2, 48, 48, 64, 'plain'],
  ['d64_g8_keys65', 8, 1, 64, 64, 65, 'plain'],
  ['d128_g4_keys333', 8, 2, 128, 128, 333, 'plain'],
  ['d128_g8_keys31', 8, 1, 128, 128, 31, 'plain'],
  ['d48_dv80_g8_keys333', 16, 2, 48, 80, 333, 'plain'],
  ['d48_dv80_g4_keys65', 8, 2, 48, 80, 65, 'plain'],
  ['d64_g4_keys1000', 8, 2, 64, 64, 1000, 'plain'],
  ['outlier_d128_g4_keys333', 8, 2, 128, 128, 333, 'outlier'],
  ['outlier_d48_dv80_g8_keys65', 16, 2, 48, 80, 65, 'outlier'],
  ['nan_value_d64_g4_keys65', 8, 2, 64, 64, 65, 'nanValue'],
  ['nan_query_d64_g8_keys64', 16, 2, 64, 64, 64, 'nanQuery'],
  ['zero_query_d16_g4_keys1', 8, 2, 16, 16, 1, 'zeroQuery'],
  ['zero_query_d128_g4_keys333', 8, 2, 128, 128, 333, 'zeroQuery'],
  ['zero_query_d48_dv80_g8_keys65', 16, 2, 48, 80, 65, 'zeroQuery'],
  ['zero_query_d64_g8_keys1000', 8, 1, 64, 64, 1000, 'zeroQuery'],
  ['zero_query_outlier_d128_g8_keys333', 8, 1, 128, 128, 333, 'zeroQueryOutlier'],
  // One query row per KV head (MHA: GPT-2's shape) and groups that are not a
  // multiple of four (3; 6 = 4 + 2; 7 = 4 + 3): the one-row kernels
  // (src/kv/wasm/int8_one_row-inl.h) for the rows past the groups of four.
  ['d64_g1_keys1000', 12, 12, 64, 64, 1000, 'plain'],
  ['d128_g3_keys333', 6, 2, 128, 128, 333, 'plain'],
  ['d48_dv80_g6_keys65', 12, 2, 48, 80, 65, 'plain'],
  ['d16_g1_keys1', 2, 2, 16, 16, 1, 'plain'],
  ['outlier_d64_g1_keys333', 4, 4, 64, 64, 333, 'outlier'],
  ['nan_value_d64_g1_keys65', 2, 2, 64, 64, 65, 'nanValue'],
  ['nan_query_d32_g3_keys64', 6, 2, 32, 32, 64, 'nanQuery'],
  ['zero_query_d64_g1_keys1000', 4, 4, 64, 64, 1000, 'zeroQuery'],
  ['zero_query_d48_dv80_g7_keys65', 14, 2, 48, 80, 65, 'zeroQuery'],
];

// One case's q [H, D], k [KV, L, D], v [KV, L, Dv] (batch 1): q = 2u, k = u,
// v = u in that order, then the kind's change.
function inputs(index, H, KV, D, DV, L, kind) {
  const u = lcg(Math.imul(0x9e3779b9, index + 1));
  const q = new Float32Array(H * D).map(() => 2 * u());
  const k = new Float32Array(KV * L * D).map(() => u());
  const v = new Float32Array(KV * L * DV).map(() => u());
  const t = Math.floor(L / 2);
  if (kind === 'outlier' || kind === 'zeroQueryOutlier') {
    for (let h = 0; h < KV; h++) for (let x = 0; x < DV; x++) v[(h * L + t) * DV + x] *= 200;
  }
  if (kind === 'zeroQuery' || kind === 'zeroQueryOutlier') q.fill(0);
  if (kind === 'nanValue') v[t * DV + DV - 1] = NaN; // KV head 0, its last block
  if (kind === 'nanQuery') q[1 * D + 5] = NaN; // query head 1 (KV head 0)
  return { q, k, v };
}

function run(ca) {
  return CASES.map(([name, H, KV, D, DV, L, kind], i) => {
    const { q, k, v } = inputs(i, H, KV, D, DV, L, kind);
    const cache = ca.createKVCache({ batch: 1, kvHeads: KV, headDim: D, valueDim: DV, capacity: L, dtype: 'int8' }).append(k, v);
    const { output } = cache.attention(q, { heads: H, queryLength: 1 });
    cache.dispose();
    return { name, heads: H, kvHeads: KV, headDim: D, valueDim: DV, keys: L, kind, output };
  });
}

if (process.argv.includes('--write')) {
  const ca = await init({ build: 'single' });
  const lines = run(ca).map(({ output, ...c }) => '  ' + JSON.stringify({ ...c, out: hex(output) }));
  writeFileSync(GOLDEN, `{"writer": "tests/node/int8-decode-golden.test.mjs --write",\n "cases": [\n${lines.join(',\n')}\n]}\n`);
} else {
  const golden = JSON.parse(readFileSync(GOLDEN, 'utf8')).cases;
  for (const [name, initOptions] of [['single', { build: 'single' }], ['threads', { build: 'threads', threads: 2 }]]) {
    describe(`int8 decode steps against the golden bits (${name} build)`, async () => {
      const ca = await init(initOptions);
      it('gives the golden file\'s bits for every case', () => {
        assert.equal(golden.length, CASES.length);
        const results = run(ca);
        for (let i = 0; i < CASES.length; i++) {
          const got = results[i], want = golden[i];
          assert.equal(got.name, want.name);
          assert.deepEqual([got.heads, got.kvHeads, got.headDim, got.valueDim, got.keys, got.kind],
            [want.heads, want.kvHeads, want.headDim, want.valueDim, want.keys, want.kind], got.name);
          const bits = hex(got.output);
          const first = bits === want.out ? -1 : Array.from(got.output).findIndex((_, j) => bits.slice(8 * j, 8 * j + 8) !== want.out.slice(8 * j, 8 * j + 8));
          assert.equal(first, -1, `${got.name}: output ${first} differs`);
        }
      });
      it('NaN exactly in the rows that see the NaN value block or query', () => {
        const results = run(ca);
        for (const r of results) {
          const nan = Array.from(r.output, (x) => Number.isNaN(x));
          const D = r.valueDim, G = r.heads / r.kvHeads;
          const want = nan.map((_, j) => {
            const head = Math.floor(j / D), x = j % D;
            if (r.kind === 'nanQuery') return head === 1;
            if (r.kind === 'nanValue') return head < G && x >= 32 * Math.floor((D - 1) / 32);
            return false;
          });
          assert.deepEqual(nan, want, r.name);
        }
      });
    });
  }
}
