// The README's and the guides' JavaScript examples run as written against the
// built package and print the book's numbers; the README's links and images
// work on the npm registry page (absolute URLs into the repository, or
// anchors), the guides' relative links reach files that exist, and the README
// stays a front door.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '../..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const guides = readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).sort()
  .map((f) => ({ path: `docs/${f}`, text: readFileSync(join(root, 'docs', f), 'utf8') }));
/** Every ```js block that imports the package, in order. */
const runnable = (text) => [...text.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1])
  .filter((code) => code.includes("from 'causal-attention'"));
const readmeBlocks = runnable(readme);
// The README's first, then the guides': a marker names one example wherever it lives.
const blocks = [...readmeBlocks, ...guides.flatMap((g) => runnable(g.text))];

const ran = new Set();
/** Runs a block as an ES module inside the repository (self-reference). */
function run(code) {
  ran.add(code);
  return execFileSync(process.execPath, ['--input-type=module', '-e', code],
    { cwd: root, encoding: 'utf8', timeout: 60000 });
}

/** Every number printed, to 4 decimals, joined by commas. */
const numbers = (text) => (text.match(/-?\d+\.\d+(e-?\d+)?/g) ?? [])
  .map((x) => Number(x).toFixed(4)).join(',');

const block = (marker) => {
  const found = blocks.find((b) => b.includes(marker));
  assert.ok(found, `an example with ${marker} in the README or docs/`);
  return found;
};

describe('README examples', () => {
  it('has the examples this test expects', () => {
    assert.ok(readmeBlocks.length >= 5, `found ${readmeBlocks.length} runnable blocks in the README`);
    assert.ok(blocks.length >= 12, `found ${blocks.length} runnable blocks in all`);
  });

  it('the README\'s generation example continues the prompt through the module\'s cache', () => {
    assert.equal(run(block('{ useCache: true });           // the prompt')).trim(), '7 64');
  });

  it("runs the masks example: a sink takes part of a row's weight, every option returns its output", () => {
    assert.equal(numbers(run(block('sliding_window W'))), '0.7735');
  });

  it('runs the returnScores example: its printed scores are the ones in its comments', () => {
    const code = block("returnScores: stage");
    const printed = run(code).trim();
    const promised = code.split('\n').filter((l) => /^\/\/ (scaled|softcapped|masked) /.test(l)).map((l) => l.slice(3)).join('\n');
    assert.equal(printed, promised);
    assert.match(printed, /^masked 0\.98 1\.85 -Infinity 1\.85 3\.05 3\.62$/m);
  });

  it('opens with npm install and a short example that prints the book\'s context vectors', () => {
    const intro = readme.slice(0, readme.indexOf('\n## '));
    assert.match(intro, /```sh\nnpm install causal-attention\n```/);
    const example = readmeBlocks[0];
    assert.ok(intro.includes(example), 'the first example is in the opening');
    assert.ok(example.trim().split('\n').length <= 6, 'a few lines');
    assert.ok(numbers(run(example)).startsWith('-0.4519,0.2216,-0.5874,0.0058'));
  });

  it('the quick attention example runs and reports its build', () => {
    const out = run(block('ca.attention('));
    assert.match(out, /^(single|threads) \d+ WASM$/m);
  });

  it('the headMask example: the heads\' shares add up, a [batch, heads] mask acts per sequence', () => {
    assert.deepEqual(run(block('headMask: new Float32Array([1, 0])')).trim().split('\n'), ['true', 'true true']);
  });

  it('the sequences example: ragged lengths, a fork, a window cache that outlasts its capacity', () => {
    const out = run(block('copySequence('));
    assert.deepEqual(out.trim().split('\n'), ['6 3 10 10 384', '7 3 7', '1000 8']);
  });

  it('the generation example: cached tokens equal one full forward, a resident cache decodes', () => {
    const out = run(block('ca.createKVCache('));
    assert.deepEqual(out.trim().split('\n'), ['10', 'true', '100 128', '1048576 327680']);
  });

  it("the book's modules example prints the book's numbers", () => {
    const out = numbers(run(block('new ca.MultiHeadAttentionWrapper(')));
    const causal = '-0.4519,0.2216,-0.5874,0.0058,-0.6300,-0.0632,-0.5675,-0.0843,-0.5526,-0.0981,-0.5299,-0.1081';
    const mha = '0.3190,0.4858,0.2943,0.3897,0.2856,0.3593,0.2693,0.3873,0.2639,0.3928,0.2575,0.4028';
    assert.ok(out.includes(`${causal},${causal}`), out);
    assert.ok(out.includes(`${mha},${mha}`), out);
    assert.ok(out.includes('-0.4519,0.2216,0.4772,0.1063'), out);
  });

  it('the training example learns its toy task: the printed loss falls from chance', () => {
    const out = run(block('new ca.optim.AdamW('));
    const losses = [...out.matchAll(/^step (\d+) loss (\d+\.\d+)$/gm)].map((m) => [Number(m[1]), Number(m[2])]);
    assert.deepEqual(losses.map(([step]) => step), [0, 50, 100, 150, 200], out);
    assert.ok(Math.abs(losses[0][1] - Math.log(8)) < 0.2, `starts near chance (log 8): ${out}`);
    assert.ok(losses[4][1] < losses[0][1] / 20, `ends far below it: ${out}`);
  });

  it('the optimizer state example resumes training bit for bit', () => {
    assert.equal(run(block('optimizer.stateDict()')).trim(), '1 true');
  });

  it('the worker mode example runs and prints what its comment says', () => {
    assert.match(run(block('init({ worker: true })')), /^threads true 12 36$/m);
  });

  it('the Run GPT-2 example loads a GPT-2 checkpoint and continues the prompt', async () => {
    // A small random checkpoint with GPT-2's names, layouts and vocabulary stands in for the hub's files.
    const { writeSafetensors } = await import('../../bindings/models/safetensors.mjs');
    const dir = join(root, 'build/readme-gpt2');
    mkdirSync(dir, { recursive: true });
    const [V, E, P] = [50257, 8, 32];
    let seed = 1;
    const rand = (n) => Float32Array.from({ length: n }, () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32) - 0.5);
    const tensors = { 'wte.weight': { shape: [V, E], data: rand(V * E) }, 'wpe.weight': { shape: [P, E], data: rand(P * E) },
      'ln_f.weight': { shape: [E], data: rand(E) }, 'ln_f.bias': { shape: [E], data: rand(E) } };
    for (const [name, shape] of [['ln_1.weight', [E]], ['ln_1.bias', [E]], ['attn.c_attn.weight', [E, 3 * E]],
      ['attn.c_attn.bias', [3 * E]], ['attn.c_proj.weight', [E, E]], ['attn.c_proj.bias', [E]], ['ln_2.weight', [E]],
      ['ln_2.bias', [E]], ['mlp.c_fc.weight', [E, 4 * E]], ['mlp.c_fc.bias', [4 * E]], ['mlp.c_proj.weight', [4 * E, E]],
      ['mlp.c_proj.bias', [E]]]) tensors[`h.0.${name}`] = { shape, data: rand(shape.reduce((a, b) => a * b)) };
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ model_type: 'gpt2', vocab_size: V, n_positions: P, n_embd: E, n_head: 2, n_layer: 1 }));
    writeFileSync(join(dir, 'model.safetensors'), writeSafetensors(tensors));
    const code = block("ca.loadPretrained({");
    ran.add(code);
    const out = run(code.replaceAll("'gpt2/", "'build/readme-gpt2/"));
    assert.ok(out.startsWith('Every effort moves you') && out.trim().length > 'Every effort moves you'.length, out);
  });

  it('the models guide: the book\'s parameter count and names; a GPTModel that learns', () => {
    const out = run(block('model.numParameters().toLocaleString'));
    assert.match(out, /^163,009,536$/m);
    assert.match(out, /'tok_emb.weight', 'pos_emb.weight'|'tok_emb.weight',\s+'pos_emb.weight'/);
    assert.equal(run(block('learn to continue 1 2 3')).trim(), 'true');
  });

  it('every other example in the README and the guides runs', () => {
    const rest = [...new Set(blocks)].filter((code) => !ran.has(code));
    for (const code of rest) run(code);
  });
});

describe('README links', () => {
  const links = [...readme.matchAll(/!?\[[^\]]*\]\(([^)\s]+)\)/g)].map((m) => m[1]);
  const repository = pkg.repository.url.replace(/^git\+/, '').replace(/\.git$/, '');

  it('are absolute or anchors to its own headings (relative paths break on the registry page)', () => {
    const slugs = [...readme.matchAll(/^#+ (.*)$/gm)]
      .map((m) => m[1].toLowerCase().replace(/[^\w\s-]/g, '').trim().replace(/\s+/g, '-'));
    assert.ok(links.length > 5);
    for (const link of links) {
      if (link.startsWith('#')) assert.ok(slugs.includes(link.slice(1)), `${link} is a heading`);
      else assert.match(link, /^https:\/\//, link);
    }
  });

  it('into the repository use package.json\'s repository (one place to change it)', () => {
    const ours = links.filter((l) => /github(usercontent)?\.com\/[^/]+\/causal-attention\b/.test(l));
    assert.ok(ours.length >= 2);
    const raw = repository.replace('https://github.com/', 'https://raw.githubusercontent.com/');
    for (const link of ours) assert.ok(link.startsWith(repository) || link.startsWith(raw), link);
    assert.equal(pkg.homepage, `${repository}#readme`);
    assert.equal(pkg.bugs.url, `${repository}/issues`);
  });
});

describe('README size and the guides\' links', () => {
  const repository = pkg.repository.url.replace(/^git\+/, '').replace(/\.git$/, '');
  /** GitHub's anchors for a Markdown file's headings (outside code blocks). */
  const slugs = (text) => [...text.replace(/```[\s\S]*?```/g, '').matchAll(/^#+ (.*)$/gm)]
    .map((m) => m[1].toLowerCase().replace(/[^\w\s-]/g, '').trim().replace(/\s+/g, '-'));
  const linksOf = (text) => [...text.replace(/```[\s\S]*?```/g, '').matchAll(/!?\[[^\]]*\]\(([^)\s]+)\)/g)]
    .map((m) => m[1]);

  it('the README is a front door: at most 300 lines', () => {
    const lines = readme.split('\n').length - (readme.endsWith('\n') ? 1 : 0);
    assert.ok(lines <= 300, `README.md has ${lines} lines`);
  });

  it('the README\'s links into the repository name files that exist', () => {
    const prefixes = [`${repository}/blob/main/`, `${repository.replace('https://github.com/', 'https://raw.githubusercontent.com/')}/main/`];
    let checked = 0;
    for (const link of linksOf(readme)) {
      const prefix = prefixes.find((p) => link.startsWith(p));
      if (!prefix) continue;
      const path = link.slice(prefix.length).split('#')[0];
      assert.ok(existsSync(join(root, path)), `${link}: ${path} exists`);
      checked++;
    }
    assert.ok(checked >= 10, `checked ${checked}`);
  });

  it('every relative link in docs/*.md, CHANGELOG.md and bench/README.md points to an existing file (and heading)', () => {
    const files = [...guides, ...['CHANGELOG.md', 'bench/README.md']
      .map((path) => ({ path, text: readFileSync(join(root, path), 'utf8') }))];
    let checked = 0;
    for (const { path, text } of files) {
      for (const link of linksOf(text)) {
        if (/^(https?:|mailto:)/.test(link)) continue;
        const [file, anchor] = link.split('#');
        const target = join(root, dirname(path), file);
        assert.ok(existsSync(target), `${path}: ${link} points to a file that exists`);
        if (anchor && (!file || target.endsWith('.md'))) {
          assert.ok(slugs(file ? readFileSync(target, 'utf8') : text).includes(anchor), `${path}: ${link} names a heading`);
        }
        checked++;
      }
    }
    assert.ok(checked >= 10, `checked ${checked}`);
  });

  it('the tarball ships the README but not docs/ (package.json "files")', () => {
    assert.deepEqual([...pkg.files].sort(), ['LICENSE', 'README.md', 'THIRD_PARTY_NOTICES.md', 'dist/']);
  });
});
