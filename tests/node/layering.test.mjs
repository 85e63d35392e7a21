// The source tree's shape: bindings/'s rooms depend downward only (wasm/'s
// glue types ← engine/ ← api/ ← nn/ ← runtime, remote/, the entries), by
// value imports and type imports alike, so each room can be read and
// changed knowing only the rooms below it; and no source file is long
// enough that its roles blur (600 lines).
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '../..');
const bindings = join(root, 'bindings');
const MAX_LINES = 600;

/** A file's room: its folder under bindings/ ('.' for the entries). */
const room = (/** @type {string} */ file) => dirname(file);

/**
 * The relative specifiers a file names: static and dynamic imports,
 * re-exports, JSDoc `import('…')` types and `@import … from '…'`, and a
 * .d.ts's `import type`. Comments are kept: JSDoc types live there.
 * @param {string} code
 */
function specifiers(code) {
  const found = new Set();
  for (const [, spec] of code.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)['"](\.{1,2}\/[^'"]+)['"]/gm)) {
    found.add(spec);
  }
  return found;
}

/** room → rooms it imports from → one file-level edge that shows it. */
function roomGraph() {
  /** @type {Map<string, Map<string, string>>} */
  const graph = new Map();
  for (const file of readdirSync(bindings, { recursive: true, encoding: 'utf8' })) {
    if (!/\.(?:mjs|cjs|d\.ts|d\.mts)$/.test(file)) continue;
    const from = room(file);
    if (!graph.has(from)) graph.set(from, new Map());
    for (const spec of specifiers(readFileSync(join(bindings, file), 'utf8'))) {
      const to = room(normalize(join(from, spec)));
      if (to !== from) graph.get(from)?.set(to, `${file} imports ${spec}`);
    }
  }
  return graph;
}

/**
 * A cycle among the rooms, as the edges that close it, or null.
 * @param {Map<string, Map<string, string>>} graph
 */
function findCycle(graph) {
  const state = new Map(); // room → 'open' | 'done'
  /** @type {string[]} */
  const path = [];
  /** @param {string} r @returns {string[] | null} */
  const visit = (r) => {
    if (state.get(r) === 'done') return null;
    if (state.get(r) === 'open') {
      const start = path.indexOf(r);
      const loop = [...path.slice(start), r];
      return loop.slice(1).map((to, i) => /** @type {string} */ (graph.get(loop[i])?.get(to)));
    }
    state.set(r, 'open');
    path.push(r);
    for (const to of graph.get(r)?.keys() ?? []) {
      const cycle = visit(to);
      if (cycle) return cycle;
    }
    path.pop();
    state.set(r, 'done');
    return null;
  };
  for (const r of graph.keys()) {
    const cycle = visit(r);
    if (cycle) return cycle;
  }
  return null;
}

describe('bindings/ rooms', () => {
  it('sees the edges it checks (the check can fail)', () => {
    const graph = roomGraph();
    for (const r of ['engine', 'api', 'nn', 'remote', '.']) assert.ok(graph.has(r), r);
    assert.ok(graph.get('api')?.has('engine'), 'api/ imports engine/');
    assert.ok(graph.get('nn')?.has('api'), 'nn/ imports api/');
    assert.ok(graph.get('.')?.has('nn'), 'the entries import nn/');
    assert.deepEqual(findCycle(new Map([['a', new Map([['b', 'a→b']])], ['b', new Map([['a', 'b→a']])]])),
      ['a→b', 'b→a']);
  });

  it('depend downward only: no cycle among the rooms, value or type imports', () => {
    assert.equal(findCycle(roomGraph())?.join('; ') ?? null, null);
  });
});

describe(`no source file over ${MAX_LINES} lines`, () => {
  for (const top of ['src', 'bindings', 'web', 'bench']) {
    it(`${top}/`, () => {
      const long = [];
      for (const file of readdirSync(join(root, top), { recursive: true, encoding: 'utf8' })) {
        if (!/\.(?:mjs|cjs|js|mts|ts|cc|h|html|css)$/.test(file) || file.includes('node_modules')) continue;
        const lines = readFileSync(join(root, top, file), 'utf8').split('\n').length - 1;
        if (lines > MAX_LINES) long.push(`${top}/${file}: ${lines}`);
      }
      assert.deepEqual(long, []);
    });
  }
});
