// The GEMM side modules (CMakeLists.txt, src/matmul_relaxed.cc): each build
// instantiates the relaxed-SIMD kernel (the microkernel's mul + add as one
// f32x4.relaxed_madd) where the engine validates it, else the SIMD128 one;
// Module.gemmKernel says which. Node 20 validates relaxed SIMD only with
// --experimental-wasm-relaxed-simd, so a child process with that flag runs
// the package's Linear on both builds against a JS double-precision
// reference (the native tests' tolerance) and checks 1, 2 and 3 threads give
// the same bits; Chromium runs the relaxed kernel in tests/browser/.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

const dist = dirname(fileURLToPath(import.meta.resolve('causal-attention')));
const loaderUrl = pathToFileURL(join(dist, 'loader.mjs')).href;

// Prints { builds: { single: { kernel, worst }, threads: ... }, identical }.
const CHILD = `
import { init } from 'causal-attention';
import { loadModule, terminateWorkers } from ${JSON.stringify(loaderUrl)};
const report = { builds: {}, outputs: {} };
for (const [build, threads] of [['single', 1], ['threads', 2], ['threads', 3]]) {
  const ca = await init({ build, threads });
  const mod = await loadModule(build, 2); // the same files, for Module.gemmKernel
  const kernel = mod.gemmKernel ?? 'inside the module';
  terminateWorkers(mod);
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
  report.builds[build] = { kernel, worst, build: ca.build };
  report.outputs[threads] = Array.from(new Uint32Array(y.buffer, y.byteOffset, y.length));
  ca.dispose();
}
// Bit-identical for any thread count (each element of C in a fixed order).
report.identical = [2, 3].every((t) => report.outputs[t].every((bits, i) => bits === report.outputs[1][i]));
delete report.outputs;
console.log(JSON.stringify(report));
`;

function runChild(flags) {
  const out = execFileSync(process.execPath, [...flags, '--input-type=module', '-e', CHILD],
    { encoding: 'utf8', timeout: 120_000 });
  return JSON.parse(out.trim().split('\n').pop());
}

describe('the GEMM kernel of the wasm builds', () => {
  it('is the relaxed-SIMD side module where relaxed SIMD validates: within the tolerance, 1/2/3 threads bit-identical', () => {
    const report = runChild(['--experimental-wasm-relaxed-simd']);
    assert.equal(report.identical, true);
    for (const build of ['single', 'threads']) {
      const r = report.builds[build];
      assert.equal(r.build, build);
      // A package built without clang >= 16 has the kernel inside the module.
      if (r.kernel !== 'inside the module') assert.equal(r.kernel, 'relaxed-simd', build);
      assert.ok(r.worst <= 1e-5, `${build}: |y - ref| / (1 + |ref|) = ${r.worst} > 1e-5`);
    }
  });

  it('is the SIMD128 one where it does not (plain Node 20): within the tolerance, 1/2/3 threads bit-identical', () => {
    const report = runChild([]);
    assert.equal(report.identical, true);
    for (const build of ['single', 'threads']) {
      const r = report.builds[build];
      if (r.kernel !== 'inside the module') assert.equal(r.kernel, 'simd128', build);
      assert.ok(r.worst <= 1e-5, `${build}: |y - ref| / (1 + |ref|) = ${r.worst} > 1e-5`);
    }
  });
});
