// The relaxed side modules (CMakeLists.txt, src/gemm/matmul_relaxed.cc): each
// build instantiates the relaxed-SIMD kernels (the microkernels' mul + add as
// one f32x4.relaxed_madd: the GEMM's and the attention tiles' products) where
// the engine validates them, else the SIMD128 ones; Module.gemmKernel says
// which. Node 20 validates relaxed SIMD only with
// --experimental-wasm-relaxed-simd, so a child process with that flag runs
// the package's Linear, attention (head sizes 1, 3, 64, 96; odd lengths) and
// its backward on both builds against JS double-precision references (the
// native tests' tolerance) and checks 1, 2 and 3 threads give the same bits;
// Chromium runs the relaxed kernel in tests/browser/.
// init({ gemmKernel: 'simd128' }) keeps the SIMD128 kernel there: plain
// Node's bits. The same holds for the decode step's kernels of a GQA group
// of four query heads (few_rows-inl.h: Q·Kᵀ and P·V of a key tile), which
// the side module exports too: KV cache steps of each dtype (4 and 8 query
// heads per KV head) against the JS reference on the stored values.
import assert from 'node:assert/strict';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { nodeResult } from './node-child.mjs';

const dist = dirname(fileURLToPath(import.meta.resolve('causal-attention')));
const loaderUrl = pathToFileURL(join(dist, 'engine/loader.mjs')).href;
const referenceUrl = new URL('./js-reference.mjs', import.meta.url).href;

// Prints { builds: { single: { kernel, worst, sideModule }, threads: ... },
// identical, digest } for init({ gemmKernel: process.env.GEMM_KERNEL }).
const CHILD = `
import { createHash } from 'node:crypto';
import { init } from 'causal-attention';
import { loadModule, terminateWorkers } from ${JSON.stringify(loaderUrl)};
import { maxRelativeError, randomArray, referenceAttention64, referenceAttentionBackward, storedKv }
  from ${JSON.stringify(referenceUrl)};
const report = { builds: {}, outputs: {} };
// Attention shapes: head sizes 1, 3, 64 and 96, odd lengths, a key range
// longer than the queries (several key tiles, a partial diagonal one).
const shapes = [[1, 2, 67, 1], [2, 3, 45, 3], [1, 2, 130, 64], [1, 1, 97, 96]].map(
  ([batch, heads, queryLength, headDim], i) => {
    const o = { batch, heads, queryLength, headDim, causal: true };
    const n = batch * heads * queryLength * headDim;
    const [q, k, v, g] = [1, 2, 3, 4].map((s) => randomArray(n, 10 * i + s));
    return { o, q, k, v, g, ref: referenceAttention64(q, k, v, o),
             grad: referenceAttentionBackward(g, q, k, v, o) };
  });
for (const [build, threads] of [['single', 1], ['threads', 2], ['threads', 3]]) {
  const ca = await init({ build, threads, gemmKernel: process.env.GEMM_KERNEL });
  const mod = await loadModule(build, 2); // the same files: is there a side module?
  const sideModule = mod.gemmKernel !== undefined;
  terminateWorkers(mod);
  const kernel = ca.gemmKernel;
  ca.manualSeed(3);
  // Big enough for two threads and several depth passes of the GEMM.
  const rows = 203, din = 600, dout = 150;
  const lin = new ca.Linear(din, dout);
  const x = new Float32Array(rows * din);
  for (let i = 0; i < x.length; i++) x[i] = Math.sin(i * 0.37);
  const y = lin.forward(x, [rows, din]);
  const bits = [y];
  let attentionWorst = 0;
  for (const { o, q, k, v, g, ref, grad } of shapes) {
    const { output, logSumExp } = ca.attention(q, k, v, { ...o, returnLogSumExp: true });
    const { gradQ, gradK, gradV } = ca.attentionBackward(g, q, k, v, output, logSumExp, o);
    attentionWorst = Math.max(attentionWorst, maxRelativeError(output, ref.output),
      maxRelativeError(gradQ, grad.gradQ), maxRelativeError(gradK, grad.gradK),
      maxRelativeError(gradV, grad.gradV));
    bits.push(output, gradQ, gradK, gradV);
  }
  const { weight: w, bias: b } = lin.stateDict();
  let worst = 0;
  for (let r = 0; r < rows; r++) {
    for (let o = 0; o < dout; o++) {
      let acc = b[o];
      for (let i = 0; i < din; i++) acc += x[r * din + i] * w[o * din + i];
      worst = Math.max(worst, Math.abs(y[r * dout + o] - acc) / (1 + Math.abs(acc)));
    }
  }
  // Decode steps: one query per head against 300 cached tokens (five key
  // tiles, the last one partial), heads/kvHeads 4 and 8, each cache dtype.
  for (const [heads, kvHeads, d] of [[8, 2, 128], [16, 2, 40]]) {
    for (const dtype of ['float32', 'bfloat16', 'int8']) {
      const L = 300;
      const k = new Float32Array(kvHeads * L * d).map((_, i) => Math.sin(i * 0.11));
      const v = new Float32Array(kvHeads * L * d).map((_, i) => Math.cos(i * 0.07));
      const q = new Float32Array(heads * d).map((_, i) => Math.sin(i * 0.29 + 1));
      const cache = ca.createKVCache({ batch: 1, kvHeads, headDim: d, capacity: L, dtype }).append(k, v);
      const { output } = cache.attention(q, { heads, queryLength: 1 });
      cache.dispose();
      const want = referenceAttention64(q, storedKv(k, d, dtype), storedKv(v, d, dtype),
        { batch: 1, heads, kvHeads, queryLength: 1, keyLength: L, headDim: d, causal: 'bottom-right' }).output;
      for (let i = 0; i < want.length; i++) {
        worst = Math.max(worst, Math.abs(output[i] - want[i]) / (1 + Math.abs(want[i])));
      }
      bits.push(output);
    }
  }
  report.builds[build] = { kernel, worst, attentionWorst, build: ca.build, sideModule };
  report.outputs[threads] = bits.flatMap((a) => Array.from(new Uint32Array(a.buffer, a.byteOffset, a.length)));
  ca.dispose();
}
// Bit-identical for any thread count (each element of C in a fixed order).
report.identical = [2, 3].every((t) => report.outputs[t].every((bits, i) => bits === report.outputs[1][i]));
report.digest = createHash('sha256').update(new Uint32Array(report.outputs[1])).digest('hex');
// The attention outputs and gradients and the decode steps (the tiles' own
// kernels and the decode kernels), without the GEMM.
report.attentionDigest = createHash('sha256')
  .update(new Uint32Array(report.outputs[1].slice(203 * 150))).digest('hex');
delete report.outputs;
console.log(JSON.stringify(report));
`;

function runChild(flags, gemmKernel = 'auto') {
  return nodeResult([...flags, '--input-type=module', '-e', CHILD],
    { env: { ...process.env, GEMM_KERNEL: gemmKernel } });
}

describe('the GEMM and decode kernels of the wasm builds', () => {
  it('is the relaxed-SIMD side module where relaxed SIMD validates: within the tolerance, 1/2/3 threads bit-identical', async () => {
    const report = await runChild(['--experimental-wasm-relaxed-simd']);
    assert.equal(report.identical, true);
    for (const build of ['single', 'threads']) {
      const r = report.builds[build];
      assert.equal(r.build, build);
      // A package built without clang >= 16 has no side module: SIMD128.
      assert.equal(r.kernel, r.sideModule ? 'relaxed-simd' : 'simd128', build);
      assert.ok(r.worst <= 1e-5, `${build}: |y - ref| / (1 + |ref|) = ${r.worst} > 1e-5`);
      assert.ok(r.attentionWorst <= 1e-5, `${build}: attention, |a - ref| / (1 + |ref|) = ${r.attentionWorst} > 1e-5`);
    }
  });

  it('is the SIMD128 one where it does not (plain Node 20): within the tolerance, 1/2/3 threads bit-identical', async () => {
    const report = await runChild([]);
    assert.equal(report.identical, true);
    for (const build of ['single', 'threads']) {
      const r = report.builds[build];
      assert.equal(r.kernel, 'simd128', build);
      assert.ok(r.worst <= 1e-5, `${build}: |y - ref| / (1 + |ref|) = ${r.worst} > 1e-5`);
      assert.ok(r.attentionWorst <= 1e-5, `${build}: attention, |a - ref| / (1 + |ref|) = ${r.attentionWorst} > 1e-5`);
    }
  });

  it("init({ gemmKernel: 'simd128' }) where relaxed SIMD validates: the SIMD128 kernel, plain Node's bits", async () => {
    const plain = await runChild([]);
    const relaxed = await runChild(['--experimental-wasm-relaxed-simd']);
    const forced = await runChild(['--experimental-wasm-relaxed-simd'], 'simd128');
    assert.equal(forced.identical, true);
    for (const build of ['single', 'threads']) assert.equal(forced.builds[build].kernel, 'simd128', build);
    assert.equal(forced.digest, plain.digest);
    // The fused multiply-add rounds differently: the option changed something,
    // in the GEMM and in the attention tiles.
    if (relaxed.builds.single.sideModule) {
      assert.notEqual(relaxed.digest, plain.digest);
      assert.notEqual(relaxed.attentionDigest, plain.attentionDigest);
    }
  });
});
