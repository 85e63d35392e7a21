// The relaxed-SIMD builds (the GEMM microkernel's mul + add as one
// f32x4.relaxed_madd): the loader picks them where the engine validates
// relaxed SIMD. Node 20 does so only with --experimental-wasm-relaxed-simd,
// so a child process with that flag runs the package's Linear and the
// module on both builds against a JS double-precision reference, with the
// same tolerance as the native tests. Chromium runs them in tests/browser/.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const dist = dirname(fileURLToPath(import.meta.resolve('causal-attention')));
const built = existsSync(join(dist, 'wasm', 'causal_attention_relaxed.wasm'));

const CHILD = `
import { init } from 'causal-attention';
import { loadModule, relaxedSimdAvailable, terminateWorkers } from ${JSON.stringify(join(dist, 'loader.mjs'))};
const report = { available: relaxedSimdAvailable(), builds: {} };
for (const build of ['single', 'threads']) {
  const mod = await loadModule(build, 2);
  const relaxed = mod.relaxedSimd;
  terminateWorkers(mod);
  const ca = await init({ build, threads: 2 });
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
  report.builds[build] = { relaxed, worst, build: ca.build };
  ca.dispose();
}
console.log(JSON.stringify(report));
`;

describe('relaxed-SIMD builds', { skip: !built && 'built without clang >= 16 (no relaxed variant in dist/)' }, () => {
  it('load where relaxed SIMD validates and match the reference (Linear, both builds)', () => {
    const out = execFileSync(process.execPath, ['--experimental-wasm-relaxed-simd', '--input-type=module', '-e', CHILD],
      { encoding: 'utf8', timeout: 120_000 });
    const report = JSON.parse(out.trim().split('\n').pop());
    assert.equal(report.available, true);
    for (const build of ['single', 'threads']) {
      const r = report.builds[build];
      assert.equal(r.build, build);
      assert.equal(r.relaxed, true, `${build}: the relaxed variant loaded`);
      assert.ok(r.worst <= 1e-5, `${build}: |y - ref| / (1 + |ref|) = ${r.worst} > 1e-5`);
    }
  });

  it('stay unused where relaxed SIMD does not validate (plain Node 20)', async () => {
    const { loadModule, relaxedSimdAvailable, terminateWorkers } = await import(join(dist, 'loader.mjs'));
    if (relaxedSimdAvailable()) return; // a Node with relaxed SIMD on by default
    const mod = await loadModule('single', 1);
    assert.equal(mod.relaxedSimd, false);
    terminateWorkers(mod);
  });
});
