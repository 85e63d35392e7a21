#!/usr/bin/env node
// `npm test` and `npm run test:deep`: set-up (system packages, npm ci), the
// builds, then the suites, on two lanes of a small graph; a table of times
// closes the run.
//   node scripts/test.mjs          (npm test) the wasm build and dist/, the
//     native Release build and its GoogleTest suite on every SIMD target,
//     Node tests against the built package and of the demo page's pure
//     modules, the TypeScript usage check, the API reference (TypeDoc), the
//     browser tests and the consumer tests (the packed package installed into
//     apps built by each bundler).
//   node scripts/test.mjs --deep   (npm run test:deep) the checks that take
//     longest: the ASan + UBSan build, the GoogleTest suite under it, and a
//     bounded libFuzzer run. .ci/run runs both, then the clients.
//   FUZZ_SECONDS=60 (default) sets the fuzzing time; 0 skips it.
//
// The lanes keep a 2-core machine busy without slowing each other where it
// matters (the Node suites run two test files at a time: node --test runs
// one at a time otherwise):
// - the JS lane: npm ci and the wasm build side by side, then the suites
//   that need dist/ one after the other;
// - the native lane: the Release build → ctest (the deep run: the sanitizer
//   build, which also links the libFuzzer target → ctest under ASan +
//   UBSan), at nice 10 while a suite of the JS lane runs, so it takes mostly
//   the CPU they leave, and at normal priority when it runs alone (renice of
//   its process groups; as root only).
// The fuzzer runs at normal priority once its target is built: its budget is
// seconds of wall time, so it must have a core to itself.
// Each suite's output goes to build/test-logs/<suite>.log and is printed
// whole when the suite ends; a failed suite fails the run (the suites that
// need it are skipped).
import { spawn, spawnSync } from 'node:child_process';
import { createWriteStream, mkdirSync, readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const node = process.execPath;
const logs = join(root, 'build/test-logs');
const started = Date.now();
const startLoad = loadavg().map((l) => l.toFixed(2)).join(' ');
const seconds = (t = Date.now()) => (t - started) / 1000;
const fuzzSeconds = Number(process.env.FUZZ_SECONDS ?? 60);

// `node --test` with TurboFan compiling on the main thread (node --test hands
// its flags to each test file's process): Node 20 can deadlock as a process
// ends while a background TurboFan job waits for a garbage collection only
// the exiting main thread could run (docs/testing.md: how it was found, how
// often, what it costs).
const nodeTest = ['--no-concurrent-recompilation', '--test'];

/** The suites: name → { needs (must pass), after (must end), nice, steps, state, ... }. */
const suites = new Map();

/**
 * Declares a suite. `steps`: [cmd, args] pairs run one after the other in
 * the repository root. `needs`: suites it uses the output of (skipped if one
 * of them failed); `after`: suites it only waits for (ordering, CPU).
 */
function suite(name, { needs = [], after = [], nice = false, steps }) {
  suites.set(name, { name, needs, after, nice, steps, state: 'waiting' });
}

const deep = process.argv.includes('--deep');
// npm test runs the browser suite in Chromium; Firefox ESR and WebKitGTK run
// the engine tests in npm run test:clients (.ci/run runs both), which keeps
// npm test within its 10 minutes on 2 cores. BROWSER_ENGINES set by the caller wins.
if (!deep) process.env.BROWSER_ENGINES ??= 'chromium';

if (deep) {
  suite('set-up: system packages', {
    steps: [[node, ['scripts/setup.mjs', '--for=deep', '--only=system']]],
  });
  suite('build: ASan + UBSan (tests and fuzz target)', {
    needs: ['set-up: system packages'],
    steps: [[node, ['scripts/build.mjs', '--sanitize']]],
  });
  suite('native tests under AddressSanitizer + UndefinedBehaviorSanitizer', {
    needs: ['build: ASan + UBSan (tests and fuzz target)'], nice: true,
    steps: [['ctest', ['--test-dir', 'build/sanitize', '--output-on-failure', '-j', '2']]],
  });
  if (fuzzSeconds > 0) {
    // New corpus entries go to build/; a crash writes build/fuzz-artifacts/crash-*:
    // copy it into tests/fuzz/corpus/ so the native suite replays it for good.
    for (const dir of ['build/fuzz-corpus', 'build/fuzz-artifacts']) mkdirSync(join(root, dir), { recursive: true });
    suite(`libFuzzer, ${fuzzSeconds} s (ASan + UBSan)`, {
      needs: ['build: ASan + UBSan (tests and fuzz target)'],
      steps: [['build/sanitize/attention_fuzz', [`-max_total_time=${fuzzSeconds}`, '-max_len=4096',
        '-artifact_prefix=build/fuzz-artifacts/', '-print_final_stats=1',
        'build/fuzz-corpus', 'tests/fuzz/corpus']]],
    });
  }
} else {
  suite('set-up: system packages', {
    steps: [[node, ['scripts/setup.mjs', '--for=test', '--only=system']]],
  });
  suite('set-up: npm ci', {
    needs: ['set-up: system packages'],
    steps: [[node, ['scripts/setup.mjs', '--for=test', '--only=npm']]],
  });
  // The wasm beside npm ci; dist/ once esbuild (its CommonJS bundle) is installed.
  suite('build: wasm', {
    needs: ['set-up: system packages'],
    steps: [[node, ['scripts/build.mjs', '--wasm', '--no-dist']]],
  });
  suite('build: wasm + dist/', {
    needs: ['set-up: npm ci', 'build: wasm'],
    steps: [[node, ['scripts/build.mjs', '--dist']]],
  });
  // The check programs of tests/wasm/ (tests/wasm/run.mjs): a few seconds.
  suite('wasm SIMD128 kernels against their portable copies (bit for bit)', {
    needs: ['build: wasm'], after: ['build: wasm + dist/'],  // not two ninjas in build/wasm
    steps: [[node, ['tests/wasm/run.mjs']]],
  });
  suite('build: native (Release)', {
    needs: ['set-up: system packages'], after: ['build: wasm'], nice: true,
    steps: [[node, ['scripts/build.mjs', '--native', '--no-benchmarks']]],
  });
  suite('native tests (GoogleTest, every SIMD target)', {
    needs: ['build: native (Release)'], nice: true,
    steps: [['ctest', ['--test-dir', 'build/native', '--output-on-failure', '-j', '2']]],
  });
  suite('API reference (TypeDoc: every export documented)', {
    needs: ['set-up: npm ci'], after: ['build: wasm + dist/'],
    steps: [[node, ['scripts/build.mjs', '--docs']]],
  });
  suite('Node tests (the built package)', {
    needs: ['set-up: npm ci', 'build: wasm + dist/'], after: ['API reference (TypeDoc: every export documented)'],
    steps: [[node, [...nodeTest, '--test-concurrency=2', 'tests/node/']]],
  });
  suite('Node tests (the demo page\'s pure modules)', {
    needs: ['set-up: npm ci', 'build: wasm + dist/'], after: ['Node tests (the built package)'],
    steps: [[node, [...nodeTest, '--test-concurrency=2', 'tests/web/']]],
  });
  suite('TypeScript types', {
    needs: ['set-up: npm ci', 'build: wasm + dist/'], after: ['Node tests (the demo page\'s pure modules)'],
    // The usage file against the declarations, then the package's JS against
    // itself and against them (checkJs; scripts/typecheck.mjs).
    steps: [[node, ['node_modules/typescript/bin/tsc', '-p', 'tests/types']], [node, ['scripts/typecheck.mjs']]],
  });
  suite('browser tests (headless Chromium; Firefox ESR and WebKitGTK in test:clients)', {
    needs: ['set-up: npm ci', 'build: wasm + dist/', 'API reference (TypeDoc: every export documented)'],
    after: ['TypeScript types'],
    steps: [[node, [...nodeTest, 'tests/browser/']]],
  });
  suite('consumer tests (the packed package in Node, TypeScript, Jest, Vitest, Vite, webpack, esbuild, Rollup, Chromium)', {
    needs: ['set-up: npm ci', 'build: wasm + dist/'], after: ['browser tests (headless Chromium; Firefox ESR and WebKitGTK in test:clients)'],
    steps: [[node, [...nodeTest, 'tests/consumers/']]],
  });
}

/** Process groups of the native lane's running steps, and their nice value now. */
const niceGroups = new Set();
let niceness = 10;

/** Nice 10 for the native lane while another suite runs, 0 when it runs alone. */
function setNiceness() {
  const want = [...suites.values()].some((s) => s.state === 'running' && !s.nice) ? 10 : 0;
  if (want === niceness) return;
  niceness = want;
  for (const pgid of niceGroups) spawnSync('renice', ['-n', String(want), '-g', String(pgid)], { stdio: 'ignore' });
}

/**
 * Runs one step; resolves to { status, cpu } (its processes' user + system
 * seconds, which the load of a shared machine changes less than wall time),
 * its output going to `out`.
 */
function runStep([cmd, args], nice, out, cpuFile) {
  out.write(`\n$ ${cmd} ${args.join(' ')}\n`);
  // sh's `times` gives the CPU time of the step's whole process tree.
  const timed = ['sh', ['-c', '"$@"; s=$?; times > "$0"; exit $s', cpuFile, cmd, ...args]];
  const [file, argv] = nice ? ['nice', ['-n', String(niceness), timed[0], ...timed[1]]] : timed;
  return new Promise((resolve) => {
    // The native lane's steps get a process group each, reniced as a whole.
    const child = spawn(file, argv, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], detached: nice });
    if (nice) niceGroups.add(child.pid);
    child.stdout.on('data', (b) => out.write(b));
    child.stderr.on('data', (b) => out.write(b));
    child.on('error', (e) => { out.write(`could not run ${cmd}: ${e.message}\n`); resolve({ status: 1, cpu: 0 }); });
    child.on('close', (code, signal) => {
      niceGroups.delete(child.pid);
      if (code !== 0) out.write(`${cmd} exited with ${code ?? signal}\n`);
      resolve({ status: code === 0 ? 0 : 1, cpu: childCpu(cpuFile) });
    });
  });
}

/** Seconds of CPU in the children line of `times` ("1m2.5s 0m0.3s"); 0 if it is missing. */
function childCpu(file) {
  try {
    const line = readFileSync(file, 'utf8').trim().split('\n')[1];
    return line.split(/\s+/).reduce((sum, t) => {
      const [, m, sec] = t.match(/^(\d+)m([\d.]+)s$/);
      return sum + 60 * Number(m) + Number(sec);
    }, 0);
  } catch {
    return 0;
  }
}

/** Runs a suite's steps, stopping at the first that fails; prints its output when it ends. */
async function runSuite(s) {
  s.state = 'running';
  setNiceness();
  s.start = seconds();
  console.log(`--- started at ${s.start.toFixed(0)} s: ${s.name}`);
  const file = join(logs, `${s.name.replace(/[^\w+]+/g, '-').replace(/^-|-$/g, '')}.log`);
  const chunks = [];
  const log = createWriteStream(file);
  const out = { write: (b) => { chunks.push(Buffer.from(b)); log.write(b); } };
  let status = 0;
  s.cpu = 0;
  for (const step of s.steps) {
    const r = await runStep(step, s.nice, out, file.replace(/\.log$/, '.times'));
    s.cpu += r.cpu;
    status = r.status;
    if (status !== 0) break;
  }
  await new Promise((done) => log.end(done));
  s.end = seconds();
  s.state = status === 0 ? 'passed' : 'failed';
  setNiceness();
  console.log(`\n=== ${s.name}: ${s.state} (${s.start.toFixed(0)} → ${s.end.toFixed(0)} s, ` +
    `${(s.end - s.start).toFixed(0)} s, CPU ${s.cpu.toFixed(0)} s; log ${file.slice(root.length + 1)})`);
  process.stdout.write(Buffer.concat(chunks));
  if (s.state === 'failed') console.log(`\n=== FAILED: ${s.name} (its output above)`);
}

/** Starts every suite whose dependencies are settled; resolves when all are. */
function schedule() {
  for (const s of suites.values()) {
    for (const d of [...s.needs, ...s.after]) if (!suites.has(d)) throw new Error(`${s.name}: unknown suite ${d}`);
  }
  return new Promise((resolve) => {
    const tick = () => {
      // Again while a pass skips a suite: one declared earlier may wait on it.
      for (let skipped = true; skipped;) {
        skipped = false;
        for (const s of suites.values()) {
          if (s.state !== 'waiting') continue;
          const deps = [...s.needs, ...s.after].map((d) => suites.get(d).state);
          if (deps.some((d) => d === 'waiting' || d === 'running')) continue;
          if (s.needs.some((d) => suites.get(d).state !== 'passed')) {
            s.state = 'skipped';
            skipped = true;
            console.log(`--- skipped: ${s.name} (needs ${s.needs.filter((d) => suites.get(d).state !== 'passed').join(', ')})`);
            continue;
          }
          runSuite(s).then(tick);
        }
      }
      if ([...suites.values()].every((s) => s.state !== 'waiting' && s.state !== 'running')) resolve();
    };
    tick();
  });
}

// Detached process groups do not get the terminal's Ctrl-C: pass it on.
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    for (const pgid of niceGroups) try { process.kill(-pgid, signal); } catch { /* gone already */ }
    process.exit(130);
  });
}

mkdirSync(logs, { recursive: true });
const heartbeat = setInterval(() => {
  const running = [...suites.values()].filter((s) => s.state === 'running');
  console.log(`--- at ${seconds().toFixed(0)} s, running: ` +
    running.map((s) => `${s.name} (${(seconds() - s.start).toFixed(0)} s)`).join('; '));
}, 60_000);
await schedule();
clearInterval(heartbeat);

const head = ['suite', 'start s', 'seconds', 'CPU s', 'result'];
const rows = [...suites.values()].map((s) => [s.name,
  s.start === undefined ? '' : s.start.toFixed(0), s.end === undefined ? '' : (s.end - s.start).toFixed(0),
  s.cpu === undefined ? '' : s.cpu.toFixed(0), s.state]);
const widths = head.map((h, k) => Math.max(h.length, ...rows.map((r) => r[k].length)));
const line = (r) => r.map((c, k) => (k === 0 || k === 4 ? c.padEnd(widths[k]) : c.padStart(widths[k]))).join('  ').trimEnd();
console.log(`\n${line(head)}\n${widths.map((w) => '-'.repeat(w)).join('  ')}`);
for (const r of rows) console.log(line(r));
const cpu = [...suites.values()].reduce((sum, s) => sum + (s.cpu ?? 0), 0);
const failed = [...suites.values()].filter((s) => s.state !== 'passed');
console.log(`\ntotal ${seconds().toFixed(0)} s, CPU ${cpu.toFixed(0)} s, on ${cpus().length} cores (load average at the start ${startLoad}, ` +
  `at the end ${loadavg().map((l) => l.toFixed(2)).join(' ')}): ` +
  `${failed.length ? `${failed.length} suite(s) not passed` : 'all suites passed'}`);
process.exit(failed.length ? 1 : 0);
