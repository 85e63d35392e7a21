// The GEMM side modules (CMakeLists.txt, src/matmul_relaxed.cc): each build
// instantiates the relaxed-SIMD kernel (the microkernel's mul + add as one
// f32x4.relaxed_madd) where the engine validates it, else the SIMD128 one;
// Module.gemmKernel says which. Node 20 validates relaxed SIMD only with
// --experimental-wasm-relaxed-simd, so a child process with that flag runs
// the package's Linear on both builds against a JS double-precision
// reference (the native tests' tolerance) and checks 1, 2 and 3 threads give
// the same bits; Chromium runs the relaxed kernel in tests/browser/.
// init({ gemmKernel: 'simd128' }) keeps the SIMD128 kernel there: plain
// Node's bits. The same holds for the decode step's kernels of a GQA group
// of four query heads (few_rows-inl.h: Q·Kᵀ and P·V of a key tile), which
// the side module exports too: KV cache steps of each dtype (4 and 8 query
// heads per KV head) against the JS reference on the stored values.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

const dist = dirname(fileURLToPath(import.meta.resolve('causal-attention')));
const loaderUrl = pathToFileURL(join(dist, 'engine/loader.mjs')).href;
const referenceUrl = new URL('./js-reference.mjs', import.meta.url).href;

// Prints { builds: { single: { kernel, worst, sideModule }, threads: ... },
// identical, digest } for init({ gemmKernel: process.env.GEMM_KERNEL }).
const CHILD = `
import { createHash } from 'node:crypto';
import { init } from 'causal-attention';
import { loadModule, terminateWorkers } from ${JSON.stringify(loaderUrl)};
import { referenceAttention64, storedKv } from ${JSON.stringify(referenceUrl)};
const report = { builds: {}, outputs: {} };
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
  const outputs = [y];
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
      outputs.push(output);
    }
  }
  report.builds[build] = { kernel, worst, build: ca.build, sideModule };
  report.outputs[threads] = outputs.flatMap((o) => Array.from(new Uint32Array(o.buffer, o.byteOffset, o.length)));
  ca.dispose();
}
// Bit-identical for any thread count (each element of C in a fixed order).
report.identical = [2, 3].every((t) => report.outputs[t].every((bits, i) => bits === report.outputs[1][i]));
report.digest = createHash('sha256').update(new Uint32Array(report.outputs[1])).digest('hex');
delete report.outputs;
console.log(JSON.stringify(report));
`;

function runChild(flags, gemmKernel = 'auto') {
  const out = execFileSync(process.execPath, [...flags, '--input-type=module', '-e', CHILD],
    { encoding: 'utf8', timeout: 120_000, env: { ...process.env, GEMM_KERNEL: gemmKernel } });
  return JSON.parse(out.trim().split('\n').pop());
}

describe('the GEMM and decode kernels of the wasm builds', () => {
  it('is the relaxed-SIMD side module where relaxed SIMD validates: within the tolerance, 1/2/3 threads bit-identical', () => {
    const report = runChild(['--experimental-wasm-relaxed-simd']);
    assert.equal(report.identical, true);
    for (const build of ['single', 'threads']) {
      const r = report.builds[build];
      assert.equal(r.build, build);
      // A package built without clang >= 16 has no side module: SIMD128.
      assert.equal(r.kernel, r.sideModule ? 'relaxed-simd' : 'simd128', build);
      assert.ok(r.worst <= 1e-5, `${build}: |y - ref| / (1 + |ref|) = ${r.worst} > 1e-5`);
    }
  });

  it('is the SIMD128 one where it does not (plain Node 20): within the tolerance, 1/2/3 threads bit-identical', () => {
    const report = runChild([]);
    assert.equal(report.identical, true);
    for (const build of ['single', 'threads']) {
      const r = report.builds[build];
      assert.equal(r.kernel, 'simd128', build);
      assert.ok(r.worst <= 1e-5, `${build}: |y - ref| / (1 + |ref|) = ${r.worst} > 1e-5`);
    }
  });

  it("init({ gemmKernel: 'simd128' }) where relaxed SIMD validates: the SIMD128 kernel, plain Node's bits", () => {
    const plain = runChild([]);
    const relaxed = runChild(['--experimental-wasm-relaxed-simd']);
    const forced = runChild(['--experimental-wasm-relaxed-simd'], 'simd128');
    assert.equal(forced.identical, true);
    for (const build of ['single', 'threads']) assert.equal(forced.builds[build].kernel, 'simd128', build);
    assert.equal(forced.digest, plain.digest);
    // The fused multiply-add rounds differently: the option changed something.
    if (relaxed.builds.single.sideModule) assert.notEqual(relaxed.digest, plain.digest);
  });
});
