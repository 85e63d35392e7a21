// Linear, the modules and the models with bfloat16 and int8 weights
// (weightsDtype, quantize()): the stored values are the KV cache's rounding
// (js-reference.mjs's storedKv, written from the README's rule); a forward
// matches the float64 product with the stored values (int8 with fewer than
// 16 rows within 1e-4 · Σ|x·w| + 1e-6, else 1e-5·(1 + |ref|) +
// 1e-7 · Σ|x·w|); the models' logits against model-reference.mjs's float64
// forward of the stored values within 1e-3·(1 + |ref|), and within 2e-2 of
// the float32 model's largest |logit|; training refuses, errors name
// weightsDtype.
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, it } from 'node:test';
import { init } from 'causal-attention';
import { errorOfLargest, randomArray, storedKv } from './js-reference.mjs';
import { closeTo, drawnModel, referenceForward, toDouble } from './model-reference.mjs';

const DTYPES = ['bfloat16', 'int8'];
const GPT = { vocab_size: 37, context_length: 12, emb_dim: 40, n_heads: 4, n_layers: 2, drop_rate: 0.0, qkv_bias: true };
const LLAMA = {
  vocab_size: 29, context_length: 64, emb_dim: 48, n_heads: 4, n_layers: 2, hidden_dim: 72, n_kv_groups: 2,
  rope_base: 500000,
};

/** Σ|x·w| and the float64 y of one output. */
function reference(x, w, bias, rows, inF, outF) {
  const y = new Float64Array(rows * outF), mag = new Float64Array(rows * outF);
  for (let r = 0; r < rows; r++) {
    for (let o = 0; o < outF; o++) {
      let s = bias ? bias[o] : 0, m = 0;
      for (let i = 0; i < inF; i++) {
        s += x[r * inF + i] * w[o * inF + i];
        m += Math.abs(x[r * inF + i] * w[o * inF + i]);
      }
      y[r * outF + o] = s;
      mag[r * outF + o] = m;
    }
  }
  return { y, mag };
}

/** The values with -0 as 0 (the int8 rounding stores 0 for both). */
const zeroed = (a) => a.map((v) => v + 0);

for (const build of ['single', 'threads']) {
  describe(`weightsDtype (${build} build)`, async () => {
    const ca = await init({ build, threads: build === 'single' ? 1 : 2 });

    it('Linear: the stored values are the KV cache rounding, and forward is their float64 product', () => {
      for (const dtype of DTYPES) {
        for (const [rows, inF, outF, bias] of [[1, 70, 33, true], [3, 31, 9, false], [5, 100, 17, true],
          [17, 70, 33, true], [40, 129, 5, false]]) {
          ca.manualSeed(rows);
          const float = new ca.Linear(inF, outF, bias);
          const original = float.weight.slice();
          const q = new ca.Linear(inF, outF, bias, { weightsDtype: dtype });
          q.loadStateDict(float.stateDict());
          assert.equal(q.weightsDtype, dtype);
          assert.deepEqual(zeroed(q.weight), zeroed(storedKv(original, inF, dtype)), `${dtype}: stored values`);
          const x = randomArray(rows * inF, rows + 7).map((v) => 2 * v);
          const y = q.forward(x, [rows, inF]);
          const { y: ref, mag } = reference(x, q.weight, q.bias, rows, inF, outF);
          for (let i = 0; i < y.length; i++) {
            const bound = dtype === 'int8' && rows < 16 ? 1e-4 * mag[i] + 1e-6 : 1e-5 * (1 + Math.abs(ref[i])) + 1e-7 * mag[i];
            assert.ok(Math.abs(y[i] - ref[i]) <= bound, `${dtype} ${rows}x${inF}->${outF} [${i}]: ${y[i]} vs ${ref[i]}`);
          }
        }
      }
    });

    it('Linear: bytes held, quantize back to float32, dispose, a replaced or reloaded weight re-stored', () => {
      const l = new ca.Linear(70, 33);
      assert.equal(l.weightsDtype, 'float32');
      assert.equal(l.weightsBytes, 0);
      l.quantize('int8');
      assert.equal(l.weightsBytes, 33 * (70 + 3 * 4) + 64);
      l.quantize('bfloat16');
      assert.equal(l.weightsBytes, 33 * 70 * 2 + 64);
      const x = randomArray(70, 3);
      // A new weight array (the checked setter): the next forward stores it.
      const w = randomArray(33 * 70, 4);
      l.weight = w;
      const y = l.forward(x, [1, 70]);
      assert.deepEqual(l.weight, storedKv(w, 70, 'bfloat16'));
      const { y: ref } = reference(x, l.weight, l.bias, 1, 70, 33);
      closeTo(y, ref, 1e-5, 'replaced weight');
      // loadStateDict writes in place and re-stores.
      const other = new ca.Linear(70, 33);
      l.loadStateDict(other.stateDict());
      assert.deepEqual(l.weight, storedKv(other.weight, 70, 'bfloat16'));
      closeTo(l.forward(x, [1, 70]), reference(x, l.weight, l.bias, 1, 70, 33).y, 1e-5, 'reloaded weight');
      l.quantize('float32');
      assert.equal(l.weightsDtype, 'float32');
      assert.equal(l.weightsBytes, 0);
      l.quantize('int8');
      l.dispose();
      l.dispose();
      assert.equal(l.weightsDtype, 'float32');
      assert.equal(l.forward(x, [1, 70]).length, 33);
    });

    it('a stored weight lets go of its float32 array: forward makes no copy, reading weight makes one and keeps it', async () => {
      setFlagsFromString('--expose-gc');
      const gc = runInNewContext('gc');
      // After a gc(), V8 frees array buffers' memory on a thread of its own:
      // read it again for up to 2 s until `done` holds (by default: until
      // two readings agree).
      const settled = async (done = (bytes, last) => bytes === last) => {
        let bytes = -1;
        for (let i = 0; i < 40; i++) {
          await new Promise((resolve) => setTimeout(resolve, i && 50));  // WeakRef targets live to the end of the job
          gc();
          const last = bytes;
          bytes = process.memoryUsage().arrayBuffers;
          if (done(bytes, last)) break;
        }
        return bytes;
      };
      const inF = 1024, outF = 2048;  // 8 MiB of float32
      const l = new ca.Linear(inF, outF, false);
      l.quantize('int8').quantize('float32');  // the heap has grown for the stored block once
      const values = l.weight.slice();
      const original = new WeakRef(l.weight);
      const before = await settled();
      l.quantize('int8');
      const x = randomArray(inF, 5);
      const y = l.forward(x, [1, inF]);
      assert.deepEqual(l.forward(x, [1, inF]), y);
      const freed = before - await settled((bytes) => before - bytes > 3 * inF * outF);
      assert.ok(freed > 3 * inF * outF, `quantized and run, ${freed} bytes of arrays freed (the float32 weight is ${4 * inF * outF})`);
      assert.equal(original.deref(), undefined, 'the float32 array was let go');
      const w = l.weight;
      assert.equal(l.weight, w, 'made once, then kept');
      assert.deepEqual(zeroed(w), zeroed(values));
      l.quantize('float32');
      assert.equal(l.weight, w, 'quantize(\'float32\') computes with those values');
    });

    it('errors name weightsDtype; training refuses a stored weight', () => {
      assert.throws(() => new ca.Linear(3, 4, true, { weightsDtype: 'fp16' }),
        (e) => e instanceof RangeError && /options\.weightsDtype must be one of 'float32', 'bfloat16', 'int8', got the string "fp16"/.test(e.message));
      assert.throws(() => new ca.Linear(3, 4, true, { dtype: 'int8' }), TypeError);
      const l = new ca.Linear(3, 4);
      assert.throws(() => l.quantize('int4'), (e) => e instanceof RangeError && /weightsDtype must be one of .*got the string "int4"/.test(e.message));
      assert.throws(() => l.quantize(undefined), RangeError);
      const gpt = new ca.GPTModel(GPT);
      assert.throws(() => gpt.quantize(8), (e) => e instanceof RangeError && /weightsDtype/.test(e.message));
      assert.throws(() => ca.loadPretrained({ config: {}, safetensors: new Uint8Array(8), weightsDtype: 'q4' }),
        (e) => e instanceof RangeError && /options\.weightsDtype/.test(e.message));
      // A training forward keeps nothing; backward says why.
      l.quantize('int8').train();
      const y = l.forward(new Float32Array(6), [2, 3]);
      assert.throws(() => l.backward(y), (e) => e instanceof TypeError && /weightsDtype 'int8'.*inference/.test(e.message));
      // A gradient from before quantize(): no backward, no optimizer step.
      const f = new ca.Linear(3, 4).train();
      const opt = new ca.optim.SGD(f, { lr: 0.1 });
      f.forward(new Float32Array(6).fill(1), [2, 3]);
      f.quantize('bfloat16');
      assert.throws(() => f.backward(new Float32Array(8)), /weightsDtype 'bfloat16'/);
      f.quantize('float32');
      f.forward(new Float32Array(6).fill(1), [2, 3]);
      f.backward(new Float32Array(8).fill(1));
      f.quantize('int8');
      const before = f.weight.slice();
      assert.throws(() => opt.step(), (e) => e instanceof TypeError && /'weight' is stored as weightsDtype 'int8'/.test(e.message));
      assert.deepEqual(f.weight, before);
      // An attention module: backward refuses too.
      const mha = new ca.MultiHeadAttention(8, 8, 4, 0, 2).quantize('int8');
      const out = mha.forward(randomArray(32, 2), [1, 4, 8]);
      assert.throws(() => mha.backward(out), /weightsDtype 'int8'/);
      mha.W_key.quantize('bfloat16');
      assert.throws(() => mha.forward(randomArray(32, 2), [1, 4, 8]), (e) => e instanceof RangeError &&
        /weightsDtype must be one dtype.*'int8' and 'bfloat16'|weightsDtype must be one dtype.*'bfloat16' and 'int8'/.test(e.message));
    });

    it('attention modules and feed-forwards: quantized against float32 modules holding the stored values', () => {
      for (const dtype of DTYPES) {
        const cases = [
          [() => new ca.MultiHeadAttention(40, 40, 8, 0, 4, true), [2, 5, 40]],
          [() => new ca.GroupedQueryAttention(48, 48, 4, 2, { contextLength: 8, ropeBase: 10000 }), [1, 6, 48]],
          [() => new ca.FeedForward({ ...GPT, emb_dim: 40 }), [3, 40]],
          [() => new ca.GatedFeedForward(LLAMA), [2, 48]],
        ];
        for (const [make, shape] of cases) {
          const q = make().eval();
          q.quantize(dtype);
          const f = make().eval();
          f.loadStateDict(q.stateDict()); // float32, the stored values
          const x = randomArray(shape.reduce((a, b) => a * b), 9);
          const got = q.forward(x, shape);
          const ref = f.forward(x, shape);
          assert.ok(errorOfLargest(got, ref) < (dtype === 'int8' ? 1e-3 : 1e-5),
            `${q.constructor.name} ${dtype}: ${errorOfLargest(got, ref)}`);
        }
      }
    });

    for (const family of ['gpt', 'llama']) {
      it(`${family}: logits against the float64 forward of the stored values, and within 2e-2 of float32`, () => {
        const cfg = family === 'gpt' ? GPT : LLAMA;
        const [B, T] = [2, 7];
        const ids = Int32Array.from({ length: B * T }, (_, i) => (i * 7 + 3) % cfg.vocab_size);
        const float = drawnModel(ca, family, cfg, 11).eval();
        const full = float.forward(ids, [B, T]);
        for (const dtype of DTYPES) {
          const m = drawnModel(ca, family, cfg, 11).eval().quantize(dtype);
          const logits = m.forward(ids, [B, T]);
          const ref = referenceForward(family, cfg, toDouble(m.stateDict()), ids, B, T).logits;
          closeTo(logits, ref, dtype === 'int8' ? 1e-3 : 1e-5, `${dtype} logits`);
          const err = errorOfLargest(logits, full);
          assert.ok(err <= 2e-2, `${dtype}: ${err} of the largest float32 logit`);
          assert.ok(err > 0, 'the weights were rounded');
          // Cached generation reads the same stored weights.
          const greedy = m.generate(ids.subarray(0, 3), { maxNewTokens: 4, useCache: true });
          const plain = m.generate(ids.subarray(0, 3), { maxNewTokens: 4, useCache: false });
          assert.deepEqual(greedy, plain);
          m.dispose();
          assert.equal(m.outHead.weightsDtype, 'float32');
        }
      });
    }
  });
}

describe('a stored weight after its runtime is disposed', () => {
  it('reading weight throws a TypeError saying so; dispose() stays harmless', async () => {
    const ca = await init({ build: 'single' });
    const l = new ca.Linear(40, 8).quantize('int8');
    ca.dispose();
    assert.throws(() => l.weight, { name: 'TypeError', message: /disposed; call init\(\) for a new one/ });
    l.dispose();
  });
});

describe('weightsDtype in worker mode', () => {
  it('quantize() and the constructor option pass through the handles', async () => {
    const local = await init({ threads: 1 });
    const remote = await init({ worker: true, threads: 1 });
    try {
      for (const ca of [local, remote]) await ca.manualSeed(3);
      const a = new local.Linear(40, 7, true, { weightsDtype: 'int8' });
      const b = await new remote.Linear(40, 7, true, { weightsDtype: 'int8' });
      assert.equal(await b.weightsDtype, 'int8');
      const x = randomArray(40, 5);
      assert.deepEqual(await b.forward(x, [1, 40]), a.forward(x, [1, 40]));
      await b.quantize('bfloat16');
      a.quantize('bfloat16');
      assert.deepEqual(await b.forward(x, [1, 40]), a.forward(x, [1, 40]));
      await assert.rejects(b.quantize('int4'), RangeError);
    } finally {
      await remote.dispose();
      local.dispose();
    }
  });
});
