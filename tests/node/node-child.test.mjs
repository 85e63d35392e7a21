// The Node-child helper of the suites (node-child.mjs): a child that prints
// its result and then hangs keeps its result; one that never prints it, or
// fails, fails.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { nodeResult } from './node-child.mjs';

describe('nodeResult', () => {
  it('returns the last line of a child that exits', async () => {
    assert.deepEqual(await nodeResult(['-e', 'console.log("x"); console.log(JSON.stringify({ a: 1 }))']), { a: 1 });
  });
  it('keeps the result of a child that hangs after printing it', async () => {
    const t = performance.now();
    const r = await nodeResult(['-e', 'console.log(JSON.stringify([2])); setInterval(() => {}, 1000)'], { exitGrace: 300 });
    assert.deepEqual(r, [2]);
    assert.ok(performance.now() - t < 5000);
    // The deadline coming within the grace keeps the result too.
    assert.deepEqual(await nodeResult(['-e', 'console.log("[3]"); setInterval(() => {}, 1000)'],
      { timeout: 1500, exitGrace: 60_000 }), [3]);
  });
  it('fails a child that hangs before its result, one that exits non-zero, and one without a JSON line', async () => {
    await assert.rejects(nodeResult(['-e', 'setInterval(() => {}, 1000)'], { timeout: 500 }), /no result after 500 ms/);
    await assert.rejects(nodeResult(['-e', 'console.log("[1]"); process.exit(3)']), /exited with 3/);
    await assert.rejects(nodeResult(['-e', 'console.log("not json")']), /no JSON result line/);
  });
});
