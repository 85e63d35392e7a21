// The package entry (dist/, imported by its package name, not from sources)
// against two oracles: the module's scalar reference and a plain-JS one.
// Tolerance: |a - ref| <= 1e-5 (1 + |ref|) elementwise, as natively.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { init } from 'causal-attention';
import {
  dropoutKeeps, maxRelativeError, randomArray, referenceAttention,
} from './js-reference.mjs';
import { problem } from './helpers.mjs';

const TOL = 1e-5;
const builds = [
  ['single', { build: 'single' }],
  ['threads', { build: 'threads', threads: 2 }],
];

for (const [name, initOptions] of builds) {
  describe(`attention (${name} build)`, async () => {
    const ca = await init(initOptions);

    it('reports its build, threads and the WASM SIMD target (not EMU128)', () => {
      assert.equal(ca.build, name);
      assert.equal(ca.threads, name === 'single' ? 1 : 2);
      assert.equal(ca.target, 'WASM');
    });

    it('uses 1/√headDim rounded to float32 as the default scale, and says so', () => {
      for (const d of [1, 2, 3, 64, 100]) assert.equal(ca.defaultScale(d), Math.fround(1 / Math.sqrt(d)));
      const q = randomArray(2 * 3, 5), k = randomArray(2 * 3, 6), v = randomArray(2 * 3, 7);
      const o = { batch: 1, heads: 1, queryLength: 2, headDim: 3, returnWeights: true };
      assert.deepEqual(ca.attention(q, k, v, o).weights,
        ca.attention(q, k, v, { ...o, scale: ca.defaultScale(3) }).weights);
    });

    it('matches both references on many shapes, odd ones included', () => {
      const dims = [1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 33, 64];
      let cases = 0;
      for (let iter = 0; iter < 60; iter++) {
        const shape = {
          batch: 1 + (iter % 2),
          heads: 1 + (iter % 3),
          queryLength: iter % 9 === 0 ? 1 : 1 + ((iter * 37) % 90),
          keyLength: iter % 3 === 0 ? undefined : 1 + ((iter * 53) % 90),
          headDim: dims[iter % dims.length],
          valueDim: iter % 2 ? undefined : dims[(iter * 5) % dims.length],
          causal: [true, false, 'top-left', 'bottom-right'][iter % 4],
          maskStrategy: iter % 5 === 1 ? 'renormalize' : 'neg-inf',
          returnWeights: true,
        };
        if (shape.keyLength === undefined) delete shape.keyLength;
        if (shape.valueDim === undefined) delete shape.valueDim;
        if (iter % 4 === 2) Object.assign(shape, { training: true, dropout: 0.3, seed: iter });
        if (iter % 7 === 3) shape.scale = -0.7;
        const { q, k, v } = problem(shape, iter + 1);
        const got = ca.attention(q, k, v, shape);
        const wasmRef = ca.attentionReference(q, k, v, shape);
        const jsRef = referenceAttention(q, k, v, shape);
        const tag = JSON.stringify(shape);
        assert.ok(maxRelativeError(got.output, jsRef.output) <= TOL, `output vs JS ${tag}`);
        assert.ok(maxRelativeError(got.weights, jsRef.weights) <= TOL, `weights vs JS ${tag}`);
        assert.ok(maxRelativeError(wasmRef.output, jsRef.output) <= TOL, `wasm reference vs JS ${tag}`);
        const noWeights = ca.attention(q, k, v, { ...shape, returnWeights: false });
        assert.equal(noWeights.weights, undefined);
        assert.ok(maxRelativeError(noWeights.output, jsRef.output) <= TOL, `tiled output ${tag}`);
        cases++;
      }
      assert.equal(cases, 60);
    });

    it('returns [B,H,Tq,Dv] outputs and [B,H,Tq,Tk] weights', () => {
      const shape = { batch: 2, heads: 3, queryLength: 5, keyLength: 9, headDim: 4, valueDim: 6 };
      const { q, k, v } = problem(shape);
      const r = ca.attention(q, k, v, { ...shape, returnWeights: true });
      assert.equal(r.output.length, 2 * 3 * 5 * 6);
      assert.equal(r.weights.length, 2 * 3 * 5 * 9);
      assert.ok(r.output instanceof Float32Array);
    });

    it('causal weights are a triangle whose rows sum to 1', () => {
      const shape = { batch: 2, heads: 2, queryLength: 40, headDim: 8, returnWeights: true };
      const { q, k, v } = problem(shape, 5);
      const { weights } = ca.attention(q, k, v, shape);
      for (let row = 0; row < 2 * 2 * 40; row++) {
        const i = row % 40;
        let sum = 0;
        for (let j = 0; j < 40; j++) {
          const w = weights[row * 40 + j];
          if (j > i) assert.equal(w, 0, `row ${row} key ${j} must be masked`);
          else assert.ok(w > 0);
          sum += w;
        }
        assert.ok(Math.abs(sum - 1) < 1e-6, `row ${row} sums to ${sum}`);
      }
    });

    it('the two mask strategies give the same weights', () => {
      for (const causal of [true, 'bottom-right']) {
        const shape = {
          batch: 1, heads: 3, queryLength: 30, keyLength: 50, headDim: 16, causal, returnWeights: true,
        };
        const { q, k, v } = problem(shape, 9);
        const a = ca.attention(q, k, v, { ...shape, maskStrategy: 'neg-inf' });
        const b = ca.attention(q, k, v, { ...shape, maskStrategy: 'renormalize' });
        assert.ok(maxRelativeError(b.weights, a.weights) <= 1e-6);
        assert.ok(maxRelativeError(b.output, a.output) <= 1e-6);
      }
    });

    it('bottom-right alignment with Tq > Tk gives zero rows, never NaN', () => {
      const shape = {
        batch: 1, heads: 1, queryLength: 8, keyLength: 3, headDim: 2, causal: 'bottom-right', returnWeights: true,
      };
      const { q, k, v } = problem(shape, 3);
      for (const maskStrategy of ['neg-inf', 'renormalize']) {
        for (const returnWeights of [true, false]) {
          const r = ca.attention(q, k, v, { ...shape, maskStrategy, returnWeights });
          assert.ok(r.output.every((x) => !Number.isNaN(x)));
          assert.deepEqual(Array.from(r.output.subarray(0, 5 * 2)), new Array(10).fill(0));
          if (returnWeights) {
            assert.deepEqual(Array.from(r.weights.subarray(0, 5 * 3)), new Array(15).fill(0));
            assert.ok(r.weights[5 * 3] > 0); // row 5 sees key 0
          }
        }
      }
    });

    it('dropout drops a fraction p within 4 sigma and keeps row sums on average', () => {
      const T = 256;
      const shape = {
        batch: 1, heads: 8, queryLength: T, headDim: 4, causal: false, training: true, returnWeights: true,
      };
      const { q, k, v } = problem(shape, 17);
      for (const p of [0.1, 0.5, 0.8]) {
        const { weights } = ca.attention(q, k, v, { ...shape, dropout: p, seed: 2024 });
        let zeros = 0;
        let sumOfRowSums = 0;
        for (let row = 0; row < 8 * T; row++) {
          let s = 0;
          for (let j = 0; j < T; j++) {
            const w = weights[row * T + j];
            if (w === 0) zeros++;
            s += w;
          }
          sumOfRowSums += s;
        }
        const n = 8 * T * T;
        const sigma = Math.sqrt(n * p * (1 - p));
        assert.ok(Math.abs(zeros - n * p) < 4 * sigma, `p=${p}: ${zeros} of ${n} dropped`);
        // E[row sum] = 1: the mean over 2048 rows is within a few percent.
        const mean = sumOfRowSums / (8 * T);
        assert.ok(Math.abs(mean - 1) < 0.02 + 0.02 * p, `p=${p}: mean row sum ${mean}`);
      }
    });

    it('the dropout mask is a pure function of the seed and matches the JS definition', () => {
      const shape = {
        batch: 2, heads: 2, queryLength: 20, headDim: 4, training: true, dropout: 0.5, returnWeights: true,
      };
      const { q, k, v } = problem(shape, 21);
      const a = ca.attention(q, k, v, { ...shape, seed: 7 });
      const b = ca.attention(q, k, v, { ...shape, seed: 7 });
      const c = ca.attention(q, k, v, { ...shape, seed: 8 });
      assert.deepEqual(a.weights, b.weights);
      assert.deepEqual(a.output, b.output);
      assert.notDeepEqual(a.weights, c.weights);
      for (let row = 0; row < 80; row++) {
        for (let j = 0; j <= row % 20; j++) {
          assert.equal(a.weights[row * 20 + j] !== 0, dropoutKeeps(7, row, j, 0.5));
        }
      }
      // BigInt seeds above 2^53 work and differ from their low half.
      const big = ca.attention(q, k, v, { ...shape, seed: (1n << 60n) + 7n });
      assert.notDeepEqual(big.weights, a.weights);
    });

    it('dropout acts only in training; default seeds follow manualSeed', () => {
      const shape = { batch: 1, heads: 1, queryLength: 16, headDim: 4, dropout: 0.5, returnWeights: true };
      const { q, k, v } = problem(shape, 31);
      const evalMode = ca.attention(q, k, v, shape);
      const plain = ca.attention(q, k, v, { ...shape, dropout: 0 });
      assert.deepEqual(evalMode.weights, plain.weights);
      ca.manualSeed(123);
      const first = ca.attention(q, k, v, { ...shape, training: true });
      const second = ca.attention(q, k, v, { ...shape, training: true });
      assert.notDeepEqual(first.weights, second.weights);
      ca.manualSeed(123);
      assert.deepEqual(ca.attention(q, k, v, { ...shape, training: true }).weights, first.weights);
    });

    it('writes into caller-supplied arrays', () => {
      const shape = { batch: 1, heads: 2, queryLength: 7, headDim: 3, returnWeights: true };
      const { q, k, v } = problem(shape, 41);
      const out = new Float32Array(2 * 7 * 3);
      const weightsOut = new Float32Array(2 * 7 * 7);
      const r = ca.attention(q, k, v, { ...shape, out, weightsOut });
      assert.equal(r.output, out);
      assert.equal(r.weights, weightsOut);
      assert.deepEqual(out, ca.attention(q, k, v, shape).output);
    });

    it('NaN in one query row stays in that row', () => {
      const shape = { batch: 1, heads: 1, queryLength: 10, headDim: 4, returnWeights: true };
      const { q, k, v } = problem(shape, 51);
      q[3 * 4] = NaN;
      const r = ca.attention(q, k, v, shape);
      for (let i = 0; i < 10; i++) {
        assert.equal(Number.isNaN(r.output[i * 4]), i === 3, `row ${i}`);
      }
    });
  });
}

describe('the same seed gives the same result in every build and thread count', () => {
  it('the threaded build also runs with one thread (forced)', async () => {
    const ca = await init({ build: 'threads', threads: 1 });
    assert.equal(ca.build, 'threads');
    assert.equal(ca.threads, 1);
    const shape = { batch: 1, heads: 1, queryLength: 5, headDim: 2 };
    const { q, k, v } = problem(shape, 71);
    assert.ok(maxRelativeError(ca.attention(q, k, v, shape).output, referenceAttention(q, k, v, shape).output) <= TOL);
  });

  it('single, 2 and 3 threads are bit-identical, with and without weights', async () => {
    const shape = {
      batch: 2, heads: 3, queryLength: 200, headDim: 16, training: true, dropout: 0.25, seed: 99,
    };
    const { q, k, v } = problem(shape, 61);
    const results = [];
    for (const options of [{ build: 'single' }, { build: 'threads', threads: 2 }, { build: 'threads', threads: 3 }]) {
      const ca = await init(options);
      results.push([
        ca.attention(q, k, v, { ...shape, returnWeights: true }),
        ca.attention(q, k, v, shape).output,
      ]);
    }
    for (const [withWeights, tiled] of results.slice(1)) {
      assert.deepEqual(withWeights.output, results[0][0].output);
      assert.deepEqual(withWeights.weights, results[0][0].weights);
      assert.deepEqual(tiled, results[0][1]);
    }
  });
});
