#!/usr/bin/env node
// The SIMD128 kernels against their portable copies, bit for bit, in npm
// test (`node tests/wasm/run.mjs`, after the wasm build configured
// build/wasm): builds the check programs of this folder into
// build/wasm/tests/ and runs them in this Node.
// - int16_lanes_check: the int8 prefill's lanes kernels against their
//   portable copies and the row kernels; exits 1 on any difference.
// - int8_rows_golden: the int8 cache's kernels against their portable copies
//   (exits 1 on any difference), and its output must be the committed
//   tests/data/int8-rows-golden.json, which the native suite holds the
//   portable kernels to on every target: a SIMD128 kernel that changed its
//   bits without a new golden file fails here.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '../..');
const build = join(root, 'build/wasm');
const golden = 'tests/data/int8-rows-golden.json';

function run(cmd, args) {
  const r = spawnSync(cmd, args, { cwd: root, encoding: 'utf8', maxBuffer: 64 << 20, timeout: 300000 });
  if (r.error) throw new Error(`${cmd} ${args.join(' ')}: ${r.error.message}`);
  return r;
}

if (!existsSync(join(build, 'CMakeCache.txt'))) {
  console.error(`${build} is not configured: run node scripts/build.mjs --wasm first`);
  process.exit(1);
}
const made = run('cmake', ['--build', build, '--target', 'int16_lanes_check', 'int8_rows_golden']);
process.stdout.write(made.stdout);
if (made.status !== 0) {
  process.stderr.write(made.stderr);
  process.exit(1);
}

// --no-experimental-fetch: emcc 3.1.6's glue would fetch() the .wasm path.
const flags = ['--no-experimental-fetch', '--no-concurrent-recompilation'];
let failed = 0;

const lanes = run(process.execPath, [...flags, join(build, 'tests/int16_lanes_check.js')]);
const lanesLines = lanes.stdout.trim().split('\n');
console.log(`int16_lanes_check: ${lanesLines.at(-1)} (exit ${lanes.status})`);
if (lanes.status !== 0) {
  failed += 1;
  process.stdout.write(lanes.stdout + lanes.stderr);
}

const rows = run(process.execPath, [...flags, join(build, 'tests/int8_rows_golden.js')]);
if (rows.status !== 0) {
  failed += 1;
  console.log(`int8_rows_golden: exit ${rows.status}: SIMD128 and portable kernels differ`);
  process.stdout.write(rows.stderr);
} else {
  const committed = readFileSync(join(root, golden), 'utf8');
  if (rows.stdout === committed) {
    const cases = JSON.parse(rows.stdout).cases.length;
    console.log(`int8_rows_golden: ${cases} cases, SIMD128 = portable, output = ${golden}`);
  } else {
    failed += 1;
    const a = rows.stdout.split('\n');
    const b = committed.split('\n');
    const differs = a.findIndex((l, i) => l !== b[i]);
    const line = differs < 0 ? a.length : differs;  // a shorter output: from its end
    console.log(`int8_rows_golden: output differs from ${golden} from line ${line + 1} on ` +
      `(the SIMD128 kernels' bits changed: regenerate it as tests/wasm/int8_rows_golden.cc says, ` +
      `and let the native suite check the portable kernels against it)`);
  }
}
process.exit(failed ? 1 : 0);
