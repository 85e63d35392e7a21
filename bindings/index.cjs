// The package's CommonJS entry (`require('causal-attention')`): the engine is
// an ES module, loaded on the first init() with a dynamic import, which
// CommonJS can do in every Node version the package supports. Types:
// index.d.cts. Everything index.mjs exports is here (tests/node/cjs.test.mjs).
'use strict';

/**
 * node.mjs's init (see index.d.ts).
 * @param {import('./index.d.ts').InitOptions} [options]
 * @returns {ReturnType<typeof import('./node.mjs').init>}
 */
exports.init = function init(options) {
  return import('./node.mjs').then((m) => m.init(options));
};
