#!/usr/bin/env node
// The type check of the package's JavaScript (bindings/tsconfig.json, the
// repository's TypeScript with checkJs):
//  (a) every .mjs/.cjs in bindings/ against its own JSDoc and the types of
//      what it calls (strict; internal contracts in bindings/engine/*.d.ts
//      and bindings/wasm/*.d.ts);
//  (b) tests/types/conformance/*.mts: the entries (index.mjs, node.mjs,
//      index.cjs) export what bindings/index.d.ts declares, with its
//      signatures, on the types inferred from the code.
// Exits 1 on any error outside NOT_YET_CHECKED.
//   node scripts/typecheck.mjs        the check
//   node scripts/typecheck.mjs --all  the same with NOT_YET_CHECKED included
// Node built-ins only.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

// Files whose errors are not reported yet (`--all` lists their errors): none
// now; a file added here must have errors, and its line goes once it has
// none. New files are checked from the start.
/** @type {string[]} */
const NOT_YET_CHECKED = [];

const all = process.argv.includes('--all');
const tsc = join(root, 'node_modules/typescript/bin/tsc');
const r = spawnSync(process.execPath, [tsc, '-p', 'bindings/tsconfig.json', '--pretty', 'false'],
  { cwd: root, encoding: 'utf8' });
if (r.error) {
  console.error(`could not run tsc: ${r.error.message}`);
  process.exit(1);
}

// tsc prints `file(line,col): error TSn: message`, continued on indented lines.
const errors = [];
for (const line of `${r.stdout}${r.stderr}`.split('\n')) {
  const m = /^(.+?)\(\d+,\d+\): error TS\d+:/.exec(line);
  if (m) errors.push({ file: m[1], text: line });
  else if (/^\s+\S/.test(line) && errors.length) errors.at(-1).text += `\n${line}`;
  else if (line.trim()) errors.push({ file: null, text: line }); // a config or CLI error
}
if (r.status !== 0 && errors.length === 0) {
  console.error(`tsc exited with ${r.status ?? r.signal} and printed no error`);
  process.exit(1);
}

const skipped = all ? [] : NOT_YET_CHECKED;
const reported = errors.filter((e) => !skipped.includes(e.file));
const problems = [];
for (const file of skipped) {
  if (!existsSync(join(root, file))) problems.push(`${file} is in NOT_YET_CHECKED but does not exist: delete its line`);
  else if (!errors.some((e) => e.file === file)) problems.push(`${file} now type-checks: delete its line in NOT_YET_CHECKED`);
}

for (const e of reported) console.error(e.text);
for (const p of problems) console.error(p);
const files = new Set(reported.map((e) => e.file));
if (reported.length) console.error(`\n${reported.length} type errors in ${files.size} files`);
if (skipped.length) console.log(`not yet checked (scripts/typecheck.mjs NOT_YET_CHECKED): ${skipped.join(', ')}`);
if (reported.length || problems.length) process.exit(1);
console.log('type check passed: bindings/ (checkJs, strict) and tests/types/conformance/ against index.d.ts');
