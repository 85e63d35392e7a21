// Vitest: every build and worker mode in the environment the command line
// names (jsdom), with and without server.deps.inline.
import { expect, test } from 'vitest';
import { init } from 'causal-attention';
import runner from '../book.cjs';

test.each(runner.CASES)('init(%j)', async (options, build) => {
  expect(await runner.book(await init(options))).toEqual([build, ...runner.EXPECTED]);
});
