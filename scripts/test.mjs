#!/usr/bin/env node
// `npm test`: set-up (system packages, npm ci), native and wasm builds, then
// every suite: native GoogleTest (ctest), the same under ASan + UBSan, a
// bounded libFuzzer run, Node tests against the built package and of the
// demo page's pure modules, the TypeScript usage check, the API reference
// (TypeDoc), the browser tests, and the consumer tests (the packed package
// installed into apps built by each bundler).
//   FUZZ_SECONDS=60 (default) sets the fuzzing time; 0 skips it.
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { run } from './util.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const node = process.execPath;
const started = Date.now();
const step = (name) => console.log(`\n=== ${name} (${((Date.now() - started) / 1000).toFixed(0)} s)`);

step('set-up');
run(node, ['scripts/setup.mjs', '--for=test'], { cwd: root });
step('build');
run(node, ['scripts/build.mjs', '--native', '--wasm'], { cwd: root });
step('native tests (GoogleTest, every SIMD target)');
run('ctest', ['--test-dir', 'build/native', '--output-on-failure', '-j', '2'], { cwd: root });
step('native tests under AddressSanitizer + UndefinedBehaviorSanitizer');
run(node, ['scripts/build.mjs', '--sanitize'], { cwd: root });
run('ctest', ['--test-dir', 'build/sanitize', '--output-on-failure', '-j', '2'], { cwd: root });
const fuzzSeconds = Number(process.env.FUZZ_SECONDS ?? 60);
if (fuzzSeconds > 0) {
  step(`libFuzzer, ${fuzzSeconds} s (ASan + UBSan)`);
  run(node, ['scripts/build.mjs', '--fuzz'], { cwd: root });
  // New corpus entries go to build/; a crash writes build/fuzz-artifacts/crash-*:
  // copy it into tests/fuzz/corpus/ so the native suite replays it for good.
  for (const dir of ['build/fuzz-corpus', 'build/fuzz-artifacts']) mkdirSync(join(root, dir), { recursive: true });
  run('build/fuzz/attention_fuzz', [`-max_total_time=${fuzzSeconds}`, '-max_len=4096',
    '-artifact_prefix=build/fuzz-artifacts/', '-print_final_stats=1',
    'build/fuzz-corpus', 'tests/fuzz/corpus'], { cwd: root });
}
step('Node tests (the built package)');
run(node, ['--test', 'tests/node/'], { cwd: root });
step('Node tests (the demo page\'s pure modules)');
run(node, ['--test', 'tests/web/'], { cwd: root });
step('TypeScript types');
run(node, ['node_modules/typescript/bin/tsc', '-p', 'tests/types'], { cwd: root });
step('API reference (TypeDoc: every export documented)');
run(node, ['scripts/build.mjs', '--docs'], { cwd: root });
step('browser tests (headless Chromium)');
run(node, ['--test', 'tests/browser/'], { cwd: root });
step('consumer tests (the packed package in Node, TypeScript, Jest, Vitest, Vite, webpack, esbuild, Rollup, Chromium)');
run(node, ['--test', 'tests/consumers/'], { cwd: root });
step('all suites passed');
