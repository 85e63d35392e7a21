// The README's JavaScript examples run as written against the built package
// and print the book's numbers.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '../..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');
const blocks = [...readme.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1])
  .filter((code) => code.includes("from 'causal-attention'"));

/** Runs a block as an ES module inside the repository (self-reference). */
function run(code) {
  return execFileSync(process.execPath, ['--input-type=module', '-e', code],
    { cwd: root, encoding: 'utf8', timeout: 60000 });
}

/** Every number printed, to 4 decimals, joined by commas. */
const numbers = (text) => (text.match(/-?\d+\.\d+(e-?\d+)?/g) ?? [])
  .map((x) => Number(x).toFixed(4)).join(',');

describe('README examples', () => {
  it('has the examples this test expects', () => {
    assert.ok(blocks.length >= 3, `found ${blocks.length} runnable blocks`);
  });

  it('the quick attention example runs and reports its build', () => {
    const out = run(blocks.find((b) => b.includes('ca.attention(')));
    assert.match(out, /^(single|threads) \d+ WASM$/m);
  });

  it('the generation example: cached tokens equal one full forward, a resident cache decodes', () => {
    const out = run(blocks.find((b) => b.includes('ca.createKVCache(')));
    assert.deepEqual(out.trim().split('\n'), ['10', 'true', '100 128']);
  });

  it("the book's modules example prints the book's numbers", () => {
    const out = numbers(run(blocks.find((b) => b.includes('new ca.CausalAttention('))));
    const causal = '-0.4519,0.2216,-0.5874,0.0058,-0.6300,-0.0632,-0.5675,-0.0843,-0.5526,-0.0981,-0.5299,-0.1081';
    const mha = '0.3190,0.4858,0.2943,0.3897,0.2856,0.3593,0.2693,0.3873,0.2639,0.3928,0.2575,0.4028';
    assert.ok(out.includes(`${causal},${causal}`), out);
    assert.ok(out.includes(`${mha},${mha}`), out);
    assert.ok(out.includes('-0.4519,0.2216,0.4772,0.1063'), out);
  });
});
