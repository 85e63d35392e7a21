#!/usr/bin/env node
// Builds what the tests and the package need:
//   node scripts/build.mjs [--native] [--wasm] [--sanitize] [--fuzz] [--docs]
//                          [--no-benchmarks] [--no-dist] [--dist]
//   (default: --native --wasm)
// native:   build/native (library, GoogleTest suite, Google Benchmark; not
//           the benchmark with --no-benchmarks, as `npm test` asks)
// sanitize: build/sanitize (clang, ASan + UBSan): the GoogleTest suite and
//           the libFuzzer target, on one core library built once
// fuzz:     the libFuzzer target alone, in the same tree
// docs:     build/api, the API reference from bindings/index.d.ts (TypeDoc,
//           tools/api-docs; fails when an export is undocumented)
// wasm:   build/wasm (two Emscripten modules), then dist/ (the npm package):
//         dist/**/*.mjs from bindings/ (same tree), dist/index.cjs (node.mjs
//         bundled as CommonJS by esbuild), index.d.mts + index.d.cts from
//         bindings/index.d.ts, dist/wasm/* from the build (glue and pthread
//         worker through scripts/patch-glue.mjs). --no-dist builds the wasm
//         alone (it needs no npm package), --dist assembles dist/ from it (esbuild
//         comes from npm ci): npm test runs the first beside npm ci.
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { patchGlue, patchPthreadWorker } from './patch-glue.mjs';
import { has, run } from './util.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = new Set(process.argv.slice(2));
const all = !['--native', '--wasm', '--sanitize', '--fuzz', '--docs', '--dist'].some((a) => args.has(a));
const jobs = String(Math.max(1, cpus().length));
// Ninja where installed: it compiles a target's objects while the libraries
// it links are still building (make waits for them), which keeps both cores
// of a small machine busy.
const generator = has('ninja') ? 'Ninja' : 'Unix Makefiles';

/** Configures `dir` (afresh if it was made by another generator or compiler) and builds `targets`. */
function cmakeBuild(dir, options, targets = []) {
  const cache = join(root, dir, 'CMakeCache.txt');
  if (existsSync(cache)) {
    const entry = (name) => readFileSync(cache, 'utf8').match(new RegExp(`^${name}:\\w+=(.*)$`, 'm'))?.[1];
    const compiler = options.find((o) => o.startsWith('-DCMAKE_CXX_COMPILER='))?.slice(21);
    if (entry('CMAKE_GENERATOR') !== generator ||
        (compiler && basename(entry('CMAKE_CXX_COMPILER') ?? '') !== basename(compiler))) {
      rmSync(join(root, dir), { recursive: true, force: true });
    }
  }
  run('cmake', ['-G', generator, '-S', '.', '-B', dir, ...options], { cwd: root });
  run('cmake', ['--build', dir, '-j', jobs, ...targets.flatMap((t) => ['--target', t])], { cwd: root });
}

export function buildNative({ benchmarks = true } = {}) {
  cmakeBuild('build/native', ['-DCMAKE_BUILD_TYPE=Release', `-DCA_BENCHMARKS=${benchmarks ? 'ON' : 'OFF'}`]);
}

// The sanitized tests and the fuzz target in one tree: libFuzzer needs
// clang's coverage instrumentation, and the tests can run on the same
// instrumented core instead of a second ASan + UBSan build of it. -O1 and
// line tables are OSS-Fuzz's flags for sanitizer builds: reports keep file
// and line, and a TU compiles faster than at -O2 -g.
const SANITIZE = ['-DCMAKE_BUILD_TYPE=RelWithDebInfo', '-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only -DNDEBUG',
  '-DCA_SANITIZE=ON', '-DCA_FUZZ=ON', '-DCMAKE_CXX_COMPILER=clang++'];

export function buildWasm({ dist = true } = {}) {
  cmakeBuild('build/wasm', [
    '-DCMAKE_TOOLCHAIN_FILE=/usr/share/emscripten/cmake/Modules/Platform/Emscripten.cmake',
    // emcc's JS optimiser needs acorn from Debian's node modules.
    '-DCMAKE_CXX_LINKER_LAUNCHER=env;NODE_PATH=/usr/share/nodejs',
  ]);
  if (dist) assembleDist();
}

export function buildDocs() {
  run(process.execPath, ['node_modules/typedoc/bin/typedoc', '--options', 'typedoc.json'],
    { cwd: join(root, 'tools/api-docs') });
}

function assembleDist() {
  const dist = join(root, 'dist');
  rmSync(dist, { recursive: true, force: true });
  mkdirSync(join(dist, 'wasm'), { recursive: true });
  // bindings/ as it is laid out (entries at the top, engine/, nn/, remote/):
  // every .mjs at the same relative path, so the imports stay as written.
  for (const f of readdirSync(join(root, 'bindings'), { recursive: true })) {
    if (/\.mjs$/.test(f)) cpSync(join(root, 'bindings', f), join(dist, f));
  }
  // The types entry, as ESM types for `import` and CJS types for `require`,
  // and the parts it re-exports (`export * from './nn/layers.js'`) at their
  // own paths, as they are: CommonJS-format .d.ts files of types only, which
  // both copies import by those .js specifiers.
  const types = join(root, 'bindings/index.d.ts');
  for (const ext of ['d.mts', 'd.cts']) cpSync(types, join(dist, `index.${ext}`));
  for (const [, part] of readFileSync(types, 'utf8').matchAll(/^export \* from '\.\/(.+)\.js';$/gm)) {
    cpSync(join(root, 'bindings', `${part}.d.ts`), join(dist, `${part}.d.ts`));
  }
  const wasm = join(root, 'build/wasm');
  for (const [name, threads] of [['causal_attention', false], ['causal_attention_threads', true]]) {
    cpSync(join(wasm, `${name}.wasm`), join(dist, 'wasm', `${name}.wasm`));
    const glue = patchGlue(readFileSync(join(wasm, `${name}.mjs`), 'utf8'), { name, threads });
    writeFileSync(join(dist, 'wasm', `${name}.mjs`), glue);
    if (threads) {
      const worker = readFileSync(join(wasm, `${name}.worker.js`), 'utf8');
      writeFileSync(join(dist, 'wasm', `${name}.worker.mjs`), patchPthreadWorker(worker, { name, glue }));
    }
  }
  bundleCommonJs(dist);
}

/**
 * dist/index.cjs, the `require` entry: node.mjs and everything it imports
 * (the glue included) as one CommonJS file next to it, so that require()
 * never needs import(): Jest runs CommonJS tests in a VM context where
 * import() needs --experimental-vm-modules. The workers it starts are the
 * ES modules of dist/ (worker_threads load them outside any VM context).
 * import.meta.url, which platform-node.mjs and the glue read, is this
 * file's URL: the same folder as node.mjs.
 */
function bundleCommonJs(dist) {
  // Loaded here, not at the top: the native and wasm builds need no npm package.
  const { buildSync } = createRequire(import.meta.url)('esbuild');
  buildSync({
    entryPoints: [join(dist, 'node.mjs')], outfile: join(dist, 'index.cjs'), bundle: true, format: 'cjs',
    platform: 'node', target: 'node20', logLevel: 'warning', legalComments: 'inline',
    define: { 'import.meta.url': '__importMetaUrl' },
    banner: {
      js: '// causal-attention\'s CommonJS entry: dist/node.mjs and its imports, bundled by esbuild ' +
        '(scripts/build.mjs). Types: index.d.cts.\n' +
        '\'use strict\';\nconst __importMetaUrl = require(\'node:url\').pathToFileURL(__filename).href;',
    },
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (all || args.has('--native')) buildNative({ benchmarks: !args.has('--no-benchmarks') });
  if (args.has('--sanitize')) cmakeBuild('build/sanitize', SANITIZE);
  else if (args.has('--fuzz')) cmakeBuild('build/sanitize', SANITIZE, ['attention_fuzz']);
  if (all || args.has('--wasm')) buildWasm({ dist: !args.has('--no-dist') });
  else if (args.has('--dist')) assembleDist();
  if (args.has('--docs')) buildDocs();
}
