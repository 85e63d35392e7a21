#!/usr/bin/env node
// `npm test`: set-up (system packages, npm ci), native and wasm builds, then
// every suite: native GoogleTest (ctest), Node tests against the built
// package, the TypeScript usage check, and the browser tests.
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
step('Node tests (the built package)');
run(node, ['--test', 'tests/node/'], { cwd: root });
step('TypeScript types');
run(node, ['node_modules/typescript/bin/tsc', '-p', 'tests/types'], { cwd: root });
step('browser tests (headless Chromium)');
run(node, ['--test', 'tests/browser/'], { cwd: root });
step('all suites passed');
