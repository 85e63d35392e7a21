#!/usr/bin/env node
// Builds what the tests and the package need:
//   node scripts/build.mjs [--native] [--wasm] [--sanitize] [--fuzz] [--docs]
//   (default: --native --wasm)
// native:   build/native (library, GoogleTest suite, Google Benchmark)
// sanitize: build/sanitize (the GoogleTest suite under ASan + UBSan)
// fuzz:     build/fuzz (the libFuzzer target, clang, ASan + UBSan)
// docs:     build/api, the API reference from bindings/index.d.ts (TypeDoc,
//           tools/api-docs; fails when an export is undocumented)
// wasm:   build/wasm (two Emscripten modules), then dist/ (the npm package):
//         dist/**/*.mjs from bindings/ (same tree), dist/index.cjs (node.mjs
//         bundled as CommonJS by esbuild), index.d.mts + index.d.cts from
//         bindings/index.d.ts, dist/wasm/* from the build (glue and pthread
//         worker through scripts/patch-glue.mjs).
import { cpSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSync } from 'esbuild';
import { patchGlue, patchPthreadWorker } from './patch-glue.mjs';
import { run } from './util.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = new Set(process.argv.slice(2));
const all = !['--native', '--wasm', '--sanitize', '--fuzz', '--docs'].some((a) => args.has(a));
const jobs = String(Math.max(1, cpus().length));

export function buildNative(dir = 'build/native', extra = ['-DCMAKE_BUILD_TYPE=Release']) {
  run('cmake', ['-S', '.', '-B', dir, ...extra], { cwd: root });
  run('cmake', ['--build', dir, '-j', jobs], { cwd: root });
}

export function buildWasm() {
  run('cmake', [
    '-S', '.', '-B', 'build/wasm',
    '-DCMAKE_TOOLCHAIN_FILE=/usr/share/emscripten/cmake/Modules/Platform/Emscripten.cmake',
    // emcc's JS optimiser needs acorn from Debian's node modules.
    '-DCMAKE_CXX_LINKER_LAUNCHER=env;NODE_PATH=/usr/share/nodejs',
  ], { cwd: root });
  run('cmake', ['--build', 'build/wasm', '-j', jobs], { cwd: root });
  assembleDist();
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
  if (all || args.has('--native')) buildNative();
  if (args.has('--sanitize')) {
    buildNative('build/sanitize', ['-DCMAKE_BUILD_TYPE=RelWithDebInfo', '-DCA_SANITIZE=ON']);
  }
  if (args.has('--fuzz')) {
    buildNative('build/fuzz', ['-DCMAKE_BUILD_TYPE=RelWithDebInfo', '-DCA_FUZZ=ON',
      '-DCMAKE_CXX_COMPILER=clang++']);
  }
  if (all || args.has('--wasm')) buildWasm();
  if (args.has('--docs')) buildDocs();
}
