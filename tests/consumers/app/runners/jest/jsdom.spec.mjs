/** @jest-environment jsdom */
// Jest, default configuration, an ES module test in jsdom (Jest runs those
// with node --experimental-vm-modules, as its docs say).
import { init } from 'causal-attention';
import runner from '../book.cjs';

test.each(runner.CASES)('init(%j)', async (options, build) => {
  expect(await runner.book(await init(options))).toEqual([build, ...runner.EXPECTED]);
});
