// No call in the package spreads an array of a user-chosen size into its
// arguments (`Math.max(...rows)`, `push(...x)`, `String.fromCharCode(...x)`):
// every element becomes an argument, and past ~100 000 of them the call
// throws "Maximum call stack size exceeded" instead of answering. The spreads
// left are over arrays whose size the package bounds; each is listed here
// with that bound, and a new one fails this test until it is looked at.
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '../..');

/** `file: call` → why the spread array is small. */
const BOUNDED = new Map([
  ['bindings/nn/linear.mjs: product(...dims', 'a shape: checkShape allows at most 8 dimensions'],
  ['bindings/nn/linear.mjs: product(...dims.slice', 'a shape: checkShape allows at most 8 dimensions'],
  ['bindings/nn/module.mjs: product(...dims', 'a parameter\'s shape, as its module registered it'],
  ['bindings/nn/embedding.mjs: product(...dims', 'a shape: checkShape allows at most 8 dimensions'],
  ['bindings/nn/attention-layer.mjs: product(...dims', 'a shape: checkShape allows at most 3 dimensions'],
  ['bindings/nn/containers.mjs: product(...rows', "a shape's leading dimensions: at most 8"],
  ['bindings/nn/language-model.mjs: product(...dims', 'token ids\' shape: checkShape allows at most 2 dimensions'],
  ['bindings/nn/norm.mjs: product(...dims', 'a shape: checkShape allows at most 8 dimensions'],
  ['bindings/nn/norm.mjs: product(...dims.slice', 'a shape: checkShape allows at most 8 dimensions'],
  ['bindings/nn/norm.mjs: product(...checkShape', 'a shape: checkShape allows at most 8 dimensions'],
  ['bindings/runtime.mjs: product(...dims', 'a shape: checkShape allows at most 8 dimensions'],
  ['bindings/runtime.mjs: product(...shape', 'a shape: checkShape allows at most 8 dimensions'],
  ['bindings/runtime.mjs: engine.adamWUpdate(...args', "AdamW's fixed argument list"],
  ['bindings/api/attention-options.mjs: product(...dims', 'a shape: checkShape allows at most 8 dimensions'],
  ['bindings/platform-web.mjs: String.fromCharCode(...head', 'the first 8 bytes of a response'],
  ['bindings/remote/remote-host.mjs: new fn(...values', "a constructor call's arguments, as the caller wrote them"],
  ['web/app.mjs: .replaceChildren(...chips', "the pipeline's token chips: tokenize keeps at most MAX_TOKENS (1024)"],
  ['web/app.mjs: select.replaceChildren(...Array.from', 'one option per head of the pipeline (a few)'],
  ['web/widgets/heatmap-overlay.mjs: tip.replaceChildren(...lines.map', "a tooltip's few lines"],
  ['web/learn/model/trainer.mjs: problems.push(...checkVariant', 'the problems one settings check finds (a few)'],
  ['web/learn/views/icl-view.mjs: .replaceChildren(...rows', "one row per probe token (the Learn settings' LIMITS bound the tokens) or at most TABLE_ROWS (60)"],
  ['web/model/model.mjs: box.replaceChildren(...ids.map', 'the real-model text\'s last MAX_TOKENS (48) tokens'],
  ['web/model/model.mjs: .replaceChildren(...best.map', 'the TOP (10) predictions'],
  ['web/model/model.mjs: .replaceChildren(...rows', 'the 8 best-scoring heads'],
  ['web/learn/views/scrub.mjs: body.replaceChildren(...summary.map', 'one row per kept checkpoint: at most KEEP[1] (65)'],
  ['web/learn/views/scrub.mjs: tr.append(...cells', "one checkpoint row's few cells"],
]);

/** The JS files of the package (bindings/) and of the demo page (web/), relative to the root. */
const files = ['bindings', 'web'].flatMap((dir) => readdirSync(join(root, dir), { recursive: true })
  .filter((f) => f.endsWith('.mjs')).map((f) => `${dir}/${f.split('\\').join('/')}`));

/**
 * The top-level arguments of the parenthesised list opening at `open`, and
 * the index of its closing parenthesis. Strings and template literals are
 * skipped whole (their `${}` parts are not calls of interest here).
 */
function argumentsAt(code, open) {
  const args = [];
  let depth = 0;
  let start = open + 1;
  for (let i = open; i < code.length; i++) {
    const c = code[i];
    if (c === "'" || c === '"' || c === '`') {
      for (i++; i < code.length && code[i] !== c; i++) if (code[i] === '\\') i++;
    } else if (c === '(' || c === '[' || c === '{') {
      depth++;
    } else if (c === ')' || c === ']' || c === '}') {
      if (--depth === 0) return { args: [...args, code.slice(start, i)], close: i };
    } else if (c === ',' && depth === 1) {
      args.push(code.slice(start, i));
      start = i + 1;
    }
  }
  return { args, close: code.length };
}

/**
 * Each call with a spread argument, as `file: callee(...array`; parameter
 * lists (followed by `=>` or `{`) are not calls. Comments are left out.
 */
function spreadCalls(file) {
  const code = readFileSync(join(root, file), 'utf8').replace(/\/\*[\s\S]*?\*\/|(?<![:'"`])\/\/.*$/gm, '');
  const found = [];
  for (const m of code.matchAll(/((?:new\s+)?[\w$.]+)\(/g)) {
    const open = m.index + m[0].length - 1;
    const { args, close } = argumentsAt(code, open);
    const after = code.slice(close + 1).trimStart();
    if (after.startsWith('=>') || after.startsWith('{')) continue;
    for (const a of args) {
      const spread = a.trim().match(/^\.\.\.([\w$.#]+)/);
      if (spread) found.push(`${file}: ${m[1]}(...${spread[1]}`);
    }
  }
  return found;
}

describe('no spread of a user-sized array into a call', () => {
  const calls = files.flatMap(spreadCalls);

  it('finds the spreads it looks for (the check can fail)', () => {
    assert.ok(calls.some((c) => c.startsWith('bindings/platform-web.mjs: String.fromCharCode(...head')), calls.join('\n'));
  });

  it('every spread in a call is over an array the package bounds', () => {
    const unknown = calls.filter((c) => !BOUNDED.has(c));
    assert.deepEqual(unknown, [], 'spreads of arrays whose size a user may choose: loop over them instead');
  });

  it('the list names no spread that is gone', () => {
    const stale = [...BOUNDED.keys()].filter((k) => !calls.includes(k));
    assert.deepEqual(stale, []);
  });
});
