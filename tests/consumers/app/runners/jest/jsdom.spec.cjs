/** @jest-environment jsdom */
// Jest, default configuration, a CommonJS test in jsdom (the "browser" condition).
const { init } = require('causal-attention');
const { CASES, EXPECTED, book } = require('../book.cjs');

test.each(CASES)('init(%j)', async (options, build) => {
  expect(await book(await init(options))).toEqual([build, ...EXPECTED]);
});
