#!/usr/bin/env node
// Installs what the build, tests, demo and benchmark need on a fresh Debian 12
// machine with Node 20, then `npm ci` when node_modules is missing or stale.
//   node scripts/setup.mjs [--for=test|deep|start|bench] [--only=system|npm]
// As root, missing system packages are installed with apt-get; otherwise
// the script lists them and exits 1. Node built-ins only (runs before npm ci).
// --only does one half (scripts/test.mjs runs npm ci beside the wasm build).
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { has, run } from './util.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const purpose = (process.argv.find((a) => a.startsWith('--for=')) ?? '--for=test').slice(6);
const only = process.argv.find((a) => a.startsWith('--only='))?.slice(7);
if (only !== undefined && only !== 'system' && only !== 'npm') {
  console.error(`--only must be system or npm, got ${only}`);
  process.exit(1);
}

// [what, Debian package, check]
const requirements = [
  ['CMake', 'cmake', () => has('cmake')],
  ['Ninja (scripts/build.mjs: both cores busy)', 'ninja-build', () => has('ninja')],
  ['a C++17 compiler', 'g++', () => has('g++')],
  ['Emscripten (emcc)', 'emscripten', () => has('emcc')],
  ['Highway headers and library', 'libhwy-dev', () => existsSync('/usr/include/hwy/highway.h')],
  ['GoogleTest', 'libgtest-dev', () => existsSync('/usr/include/gtest/gtest.h')],
  ['Google Benchmark', 'libbenchmark-dev', () => existsSync('/usr/include/benchmark/benchmark.h')],
  // The wasm builds' GEMM side modules, SIMD128 and relaxed SIMD
  // (CMakeLists.txt): a clang newer than Emscripten 3.1.6's, and its wasm-ld.
  ['clang 19 (GEMM side modules)', 'clang-19', () => has('clang++-19')],
  ['wasm-ld 19 (GEMM side modules)', 'lld-19', () => has('wasm-ld-19')],
];
if (purpose === 'deep') {
  requirements.push(
    ['clang (libFuzzer build)', 'clang', () => has('clang++')],
    ['libFuzzer and sanitizer runtimes', 'libclang-rt-14-dev',
      () => existsSync('/usr/lib/llvm-14/lib/clang') && hasFuzzerRuntime()],
  );
}
if (purpose === 'test' || purpose === 'bench') {
  requirements.push(['Chromium (browser tests)', 'chromium', () => existsSync('/usr/bin/chromium')]);
}
if (purpose === 'test') {
  requirements.push(
    ['Firefox ESR (browser tests in every engine)', 'firefox-esr', () => existsSync('/usr/bin/firefox-esr')],
    // MiniBrowser comes with libwebkit2gtk-4.1-0, a dependency of the driver.
    ['WebKitGTK\'s WebKitWebDriver and MiniBrowser (browser tests in every engine)', 'webkit2gtk-driver',
      () => existsSync('/usr/bin/WebKitWebDriver')],
    ['Xvfb (MiniBrowser has no headless mode)', 'xvfb', () => existsSync('/usr/bin/Xvfb')],
  );
}

function hasFuzzerRuntime() {
  const base = '/usr/lib/llvm-14/lib/clang';
  return readdirSync(base).some((v) => existsSync(join(base, v, 'lib/linux/libclang_rt.fuzzer-x86_64.a')));
}

const missing = only === 'npm' ? [] : requirements.filter(([, , ok]) => !ok());
if (missing.length) {
  const packages = [...new Set(missing.map(([, pkg]) => pkg))];
  if (process.getuid?.() === 0) {
    console.log(`Installing ${packages.join(' ')} with apt-get`);
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    run('apt-get', ['update'], { env });
    run('apt-get', ['install', '-y', ...packages], { env });
  } else {
    console.error('Missing system packages:');
    for (const [what, pkg] of missing) console.error(`  ${pkg.padEnd(18)} ${what}`);
    console.error(`Install them (Debian 12): sudo apt-get install -y ${packages.join(' ')}`);
    process.exit(1);
  }
}

// npm ci when the lockfile changed since the last install.
const lock = readFileSync(join(root, 'package-lock.json'));
const digest = createHash('sha256').update(lock).digest('hex');
const stamp = join(root, 'node_modules', '.causal-attention-lock');
if (only !== 'system' && (!existsSync(stamp) || readFileSync(stamp, 'utf8') !== digest)) {
  // onnxruntime-node (a benchmark peer) would fetch CUDA providers from
  // nuget.org; its CPU binding ships in the package (.npmrc says the same).
  const env = { ...process.env, ONNXRUNTIME_NODE_INSTALL: 'skip' };
  run('npm', ['ci', '--no-audit', '--no-fund'], { cwd: root, env });
  writeFileSync(stamp, digest);
}
