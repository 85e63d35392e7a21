// The bench's own arithmetic and report text (bench/lib/): the hand-assembled
// SIMD-limit kernels compute what they claim (the SIMD128 mul+add loop here;
// the f32x4.relaxed_madd loop in a child with --experimental-wasm-relaxed-simd,
// since plain Node 20 does not validate it), the target lines' verdicts, the
// Learn target against issue 21's "today", and bench/RESULTS.md's
// hand-written parts surviving a re-render. No timing is asserted.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { targetLine } from '../../bench/lib/format.mjs';
import { LEARN_TODAY, learnTargetLine } from '../../bench/lib/learn-steps.mjs';
import { nodesRunLine, renderNodeVersions, replaceNodes } from '../../bench/lib/node-versions.mjs';
import { keepHandWritten, nodesSection } from '../../bench/lib/report.mjs';
import { relaxedFmaValidates, simdKernelBytes } from '../../bench/lib/simd-limit.mjs';
import { nodeResult } from './node-child.mjs';

const simdUrl = new URL('../../bench/lib/simd-limit.mjs', import.meta.url).href;

// Σ over the chains of acc after n steps of acc = acc·0.999 + 0.001 from 0,
// in float32 (each step rounded once after the product and once after the
// sum, as mul then add; a fused step may differ in the last bits).
function expectedSum(chains, n) {
  let acc = 0;
  for (let i = 0; i < n; ++i) acc = Math.fround(Math.fround(acc * Math.fround(0.999)) + Math.fround(0.001));
  return chains * acc;
}

describe('SIMD-limit kernels (bench/lib/simd-limit.mjs)', () => {
  it('the SIMD128 loop computes acc·m + c on every chain', () => {
    for (const chains of [1, 4, 13]) {
      const { kernel } = new WebAssembly.Instance(new WebAssembly.Module(simdKernelBytes(chains))).exports;
      for (const n of [1, 7, 300]) {
        const got = kernel(n);
        assert.ok(Math.abs(got - expectedSum(chains, n)) <= 1e-6 * chains, `${chains} chains, ${n} steps: ${got}`);
      }
    }
  });

  it('the relaxed_madd loop validates only where relaxed SIMD is on, and computes acc·m + c there', async () => {
    assert.equal(relaxedFmaValidates(), WebAssembly.validate(simdKernelBytes(1, { fma: true })));
    const child = `
      import { relaxedFmaValidates, simdKernelBytes } from ${JSON.stringify(simdUrl)};
      const out = { validates: relaxedFmaValidates(), sums: [] };
      for (const chains of [1, 4, 13]) {
        const { kernel } = new WebAssembly.Instance(new WebAssembly.Module(simdKernelBytes(chains, { fma: true }))).exports;
        for (const n of [1, 7, 300]) out.sums.push({ chains, n, got: kernel(n) });
      }
      console.log(JSON.stringify(out));`;
    const out = await nodeResult(['--experimental-wasm-relaxed-simd', '--input-type=module', '-e', child]);
    assert.equal(out.validates, true);
    for (const { chains, n, got } of out.sums) {
      // relaxed_nmadd (the neighbouring opcode) would give c − acc·m: far off.
      assert.ok(Math.abs(got - expectedSum(chains, n)) <= 1e-5 * chains, `${chains} chains, ${n} steps: ${got}`);
    }
  });
});

describe('target lines', () => {
  it('say met or missed with the values, and the issue where given', () => {
    assert.equal(targetLine('x ≥ 2×', true, '2.10×', 21), '- (issue 21) x ≥ 2×: met (2.10×)');
    assert.equal(targetLine('x ≥ 2×', false, '1.90×'), '- x ≥ 2×: missed (1.90×)');
    assert.equal(targetLine('fraction', null, 'Chromium 61%', 21), '- (issue 21) fraction: Chromium 61%');
  });

  it('judge the Learn model on the single build against issue 21\'s today, losses included', () => {
    const row = (engine, build, stepsPerSecond, same = true) => ({
      engine, build, rates: [{ stepsPerSecond, stepsPerCpuSecond: null }], same, lastLoss: 3.4,
    });
    const met = learnTargetLine([row('Node', 'single', 2 * LEARN_TODAY.Node + 1), row('Node', 'threads', 10),
      row('Chromium 156', 'single', 2 * LEARN_TODAY.Chromium)]);
    assert.equal(met.length, 1);
    assert.match(met[0], /^- \(issue 21\) .*: met \(Node single 121\.0 steps\/s = 2\.02×; Chromium 156 single 115\.0 steps\/s = 2\.00×; not judged: Node threads 10\.0/);
    const slow = learnTargetLine([row('Node', 'single', 119), row('Chromium 156', 'single', 200)]);
    assert.match(slow[0], /: missed \(Node single 119\.0 steps\/s = 1\.98×/);
    assert.match(learnTargetLine([row('Node', 'single', 500)])[0], /: missed \(Node single 500\.0 .*; Chromium not measured\)$/);
    const differ = learnTargetLine([row('Node', 'single', 500, false), row('Chromium 156', 'single', 500)]);
    assert.match(differ[0], /: missed \(.*losses DIFFER/);
    assert.deepEqual(learnTargetLine([{ engine: 'Node', build: 'single', error: 'boom' }]), []);
  });
});

describe('bench/RESULTS.md re-rendered (keepHandWritten)', () => {
  const generated = ['# Benchmark results', '', '## Decode (Node v20)', '', 'table', '', '## Native', '', 'n', '',
    '## Reproduce', '', 'sh'].join('\n');
  const previous = ['# Benchmark results', '', '## Decode (Node v18)', '', 'old table', '',
    '<!-- kept -->', '### Many sequences', 'measured by hand', '## A section of its own', 'more', '<!-- /kept -->', '',
    '## Gone', '', '<!-- kept -->', 'orphan', '<!-- /kept -->', '', '## Native', '', 'n', '',
    '<!-- kept -->', 'after native', '<!-- /kept -->', '', '## Reproduce', '', 'sh'].join('\n');

  it('puts each kept part back at the end of the section it followed, or before Reproduce', () => {
    const out = keepHandWritten(generated, previous);
    const lines = out.split('\n');
    const at = (l) => lines.indexOf(l);
    assert.ok(at('table') < at('### Many sequences') && at('### Many sequences') < at('## Native'), out);
    assert.ok(at('more') < at('## Native'));
    // Both end up before Reproduce, in their order in the previous file.
    assert.ok(at('## Native') < at('orphan') && at('orphan') < at('after native') &&
      at('after native') < at('## Reproduce'), out);
    assert.equal(out.match(/<!-- kept -->/g).length, 3);
    assert.ok(!out.includes('old table'));
  });

  it('is stable: rendering again over its own output changes nothing', () => {
    const once = keepHandWritten(generated, previous);
    assert.equal(keepHandWritten(generated, once), once);
  });

  it('leaves a file without kept parts as generated', () => {
    assert.equal(keepHandWritten(generated, ''), generated);
    assert.equal(keepHandWritten(generated, generated), generated);
  });
});

describe('the table per Node version (bench/lib/node-versions.mjs)', () => {
  const row = (medianMs) => ({ status: 'ok', medianMs, runs: 5 });
  const shape = { kind: 'attention', batch: 1, heads: 12, length: 1024, headDim: 64 };
  const decodeShape = { kind: 'decode', batch: 1, model: 'Llama-3-8B', heads: 32, kvHeads: 8, headDim: 128, cacheLength: 4096 };
  const results = (fmaLimit, int8Ms) => ({
    node: 'v24.0.0', v8: '13', gemmKernel: fmaLimit ? 'relaxed-simd' : 'simd128',
    simd: { limit1: 50, limit2: 95, chains: 13 }, fma: { limit: fmaLimit }, bandwidth: { bytes: 1, gbps: 20 },
    attention: [{ shape, rows: { 'ours-1': row(40), 'ours-2': row(21), 'ort-web-1': row(120) } }],
    decode: { shape: decodeShape, bytes: 1, rows: { 'float32-1': row(5), 'bfloat16-1': row(4), 'int8-1': row(int8Ms) } },
  });

  it('judges the relaxed-SIMD targets on the newest Node that has relaxed SIMD', () => {
    // 4·12·64·1024·1025/2 FLOPs in 40 ms = 40.3 GFLOP/s: 81 % of a 50 GFLOP/s FMA limit, 67 % of 60.
    const { text, targets } = renderNodeVersions([
      { label: 'Node 24', results: results(60, 1.9) },
      { label: 'Node 22', unavailable: 'not installed' },
      { label: 'Node 20', results: results(null, 4) },
    ]);
    assert.match(targets[0], /Node 24: float32 attention .* missed \(67% of 60\.0 GFLOP\/s\)/);
    assert.match(targets[1], /decode step ≤ 0\.4× the float32 step: met \(0\.38×/);
    assert.match(text, /\| Node 24 +\| \(1,12,1024,64\) +\| +40\.0 \| +40\.3 \| +81% \| +67% \| +21\.0 \(1\.90×\) \| +120 \(3\.00×\) \|/);
    assert.match(text, /Node 22: not run \(not installed\)/);
    assert.match(text, /\| Node 20 .*n\/a \(relaxed SIMD off\)/);
    const met = renderNodeVersions([{ label: 'Node 24', results: results(50, 2.5) }]).targets;
    assert.match(met[0], /met \(81% of 50\.0/);
    assert.match(met[1], /missed \(0\.50×/);
  });

  it('says so where no Node with relaxed SIMD ran', () => {
    const { targets } = renderNodeVersions([{ label: 'Node 20', results: results(null, 4) }], 'Some CPU');
    assert.equal(targets[0], '- relaxed-SIMD targets: no Node with relaxed SIMD ran (install Node 24: npm ci --prefix tests/clients)');
  });

  it('judges the float32 attention against 60 % of the SIMD128 limit per Node version, naming the CPU', () => {
    // 40.3 GFLOP/s of a 50 GFLOP/s SIMD128 limit: 81 %; in 70 ms: 23.0 GFLOP/s, 46 %.
    const slow = results(null, 4);
    slow.attention = [{ shape, rows: { 'ours-1': row(70), 'ours-2': row(36), 'ort-web-1': row(120) } }];
    const { targets } = renderNodeVersions([
      { label: 'Node 24', results: results(60, 1.9) },
      { label: 'Node 22', unavailable: 'not installed' },
      { label: 'Node 20', results: slow },
    ], 'AMD EPYC (family 25, model 1)');
    const cpuLines = targets.filter((t) => t.includes('SIMD128 limit'));
    assert.equal(cpuLines.length, 2);
    assert.match(cpuLines[0], /^- \(issue 34\) AMD EPYC \(family 25, model 1\), Node 24 \(relaxed-simd kernels\): .* ≥ 60% of the SIMD128 limit: met \(81% at \(1,12,1024,64\) of 50\.0 GFLOP\/s\)$/);
    assert.match(cpuLines[1], /Node 20 \(simd128 kernels\): .*: missed \(46% at \(1,12,1024,64\) of 50\.0 GFLOP\/s\)$/);
  });
});

describe('a --nodes run saved into a full run (node bench/run.mjs --nodes --save)', () => {
  const machine = (model) => ({ cpu: { model }, ours: 'causal-attention 0.1.0 (git abc1234)', node: '20.20.2',
    loadAverage: [0.5, 0.25, 0.125] });
  const run = {
    started: '2026-11-29T10:00:00.000Z', finished: '2026-11-29T10:03:00.000Z', machine: machine('AMD EPYC'),
    loadAtEnd: [1, 1.5, 2], nodes: [{ label: 'Node 24', unavailable: 'not installed' }],
  };

  it('replaces the per-Node section only, and keeps when, where and at what commit it ran', () => {
    const full = { started: 'then', machine: machine('AMD EPYC'), attention: [1], nodes: [{ label: 'old' }] };
    const out = replaceNodes(full, run);
    assert.deepEqual(out.nodes, run.nodes);
    assert.equal(out.started, 'then');
    assert.deepEqual(out.attention, [1]);
    assert.deepEqual(full.nodes, [{ label: 'old' }], 'the full run itself is not changed');
    assert.equal(nodesRunLine(out.nodesRun), 'Measured apart from the full run (`node bench/run.mjs --nodes --save`): ' +
      'started 2026-11-29T10:00:00.000Z, 3.0 min; causal-attention 0.1.0 (git abc1234), driven by Node 20.20.2; ' +
      'load average 0.50 0.25 0.13 at the start, 1.00 1.50 2.00 at the end.');
  });

  it('refuses a run on another CPU model, naming both', () => {
    assert.throws(() => replaceNodes({ machine: machine('Intel Xeon') }, run),
      (e) => e instanceof RangeError && /measured on Intel Xeon, this --nodes run on AMD EPYC: run the full bench/.test(e.message));
  });

  it('the report puts that line under the section\'s heading, and only for a saved run', () => {
    const results = replaceNodes({ machine: machine('AMD EPYC') }, run);
    const saved = nodesSection(results, '## Heading');
    assert.deepEqual(saved.slice(0, 5), ['', '## Heading', '', nodesRunLine(results.nodesRun), '']);
    assert.ok(saved.some((l) => l.includes('Node 24: not run (not installed)')));
    const full = nodesSection({ machine: machine('AMD EPYC'), nodes: run.nodes }, '## Heading');
    assert.ok(!full.some((l) => l.startsWith('Measured apart')));
    assert.deepEqual(nodesSection({ machine: machine('AMD EPYC') }, '## Heading'), []);
  });
});

describe('the engines table (bench/browser/engines.mjs)', () => {
  it('a row per engine: its limits, page and worker times, the 2T/1T ratio; an engine without relaxed SIMD or one skipped says so', async () => {
    const { renderEngineTable } = await import('../../bench/browser/engines.mjs');
    const simd = (fma) => ({ simd128: { limit: 44.8 }, fma: { limit: fma } });
    const text = renderEngineTable([
      { engine: 'Chromium', version: 'Chromium 156', simd: simd(39.3),
        ms: { 'page ours-1': 72.3, 'page ours-2': 36.15, 'worker ours-1': 92.2, 'worker ours-2': 86 } },
      { engine: 'WebKitGTK', version: 'WebKitGTK 2.50.6', simd: simd(null), ms: { 'page ours-1': 111 } },
      { engine: 'Firefox ESR', skipped: 'Debian\'s firefox-esr is not installed' },
    ]);
    const rows = text.split('\n').filter((l) => l.startsWith('| ') && !l.startsWith('| engine'));
    assert.equal(rows.length, 3);
    assert.match(rows[0], /^\| Chromium 156 \| 44\.8 \| 39\.3 \| 72\.3 \| 36\.\d+ \| 92\.2 \| 86\.0 \| 2\.00× \| \d+\.\d \|$/);
    assert.match(rows[1], /^\| WebKitGTK 2\.50\.6 \| 44\.8 \| n\/a \| 111 \| — \| — \| — \| — \| \d+\.\d \|$/);
    assert.match(rows[2], /^\| Firefox ESR \| skipped: Debian's firefox-esr is not installed \|/);
  });
});
