// The machine and software line: CPU, cores, Node, and every package's
// version read from its own package.json.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);

/** The package.json of an installed package (found from its entry file, as "exports" may hide it). */
export function packageJson(name) {
  let dir = dirname(require.resolve(name));
  for (;;) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      const json = JSON.parse(readFileSync(file, 'utf8'));
      if (json.name === name) return json;
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`no package.json for ${name}`);
    dir = parent;
  }
}

export function cpuInfo() {
  let model = os.cpus()[0]?.model ?? 'unknown';
  let flags = [];
  try {
    const text = readFileSync('/proc/cpuinfo', 'utf8');
    model = /^model name\s*:\s*(.*)$/m.exec(text)?.[1] ?? model;
    const family = /^cpu family\s*:\s*(\d+)/m.exec(text)?.[1];
    const modelNo = /^model\s*:\s*(\d+)/m.exec(text)?.[1];
    if (family) model += ` (family ${family}, model ${modelNo})`;
    const all = new Set((/^flags\s*:\s*(.*)$/m.exec(text)?.[1] ?? '').split(/\s+/));
    flags = ['sse4_2', 'avx2', 'fma', 'avx512f'].filter((f) => all.has(f));
  } catch { /* not Linux */ }
  return { model, cores: os.availableParallelism?.() ?? os.cpus().length, flags };
}

function gitCommit(cwd) {
  try {
    const sha = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd, encoding: 'utf8' }).trim();
    return dirty ? `${sha}+changes` : sha;
  } catch {
    return 'unknown';
  }
}

export function machineInfo(root) {
  const cpu = cpuInfo();
  const ours = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const versions = {};
  for (const name of ['onnxruntime-web', 'onnxruntime-node', '@tensorflow/tfjs-core',
    '@tensorflow/tfjs-backend-wasm', 'ruvector-attention-wasm']) {
    try {
      versions[name] = packageJson(name).version;
    } catch (e) {
      versions[name] = `missing (${e.message})`;
    }
  }
  return {
    cpu,
    node: process.version,
    v8: process.versions.v8,
    os: `${os.type()} ${os.release()}`,
    loadAverage: os.loadavg(),
    ours: `${ours.name} ${ours.version} (git ${gitCommit(root)})`,
    versions,
  };
}

export function machineLines(m) {
  return [
    `Machine: ${m.cpu.model}, ${m.cpu.cores} cores (${m.cpu.flags.join(', ')}); ${m.os}; ` +
      `load average at start ${m.loadAverage.map((x) => x.toFixed(2)).join(' ')}`,
    `Node ${m.node} (V8 ${m.v8}); ${m.ours}; ` +
      Object.entries(m.versions).map(([k, v]) => `${k} ${v}`).join(', '),
  ];
}
