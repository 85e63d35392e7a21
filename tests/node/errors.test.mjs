// Bad input: every case throws a TypeError or RangeError whose message names
// the argument and shows the expected and the actual value, and afterwards
// the same runtime still computes a correct result.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { init } from 'causal-attention';
import { maxRelativeError, randomArray, referenceAttention } from './js-reference.mjs';

const shape = { batch: 1, heads: 2, queryLength: 3, headDim: 4 };
const good = () => ({
  q: randomArray(24, 1), k: randomArray(24, 2), v: randomArray(24, 3),
});
const expected = (() => {
  const { q, k, v } = good();
  return referenceAttention(q, k, v, shape).output;
})();

// [description, (ca, q, k, v) => call, ErrorType, message pattern]
const cases = [
  ['q is an Array', (ca, q, k, v) => ca.attention(Array.from(q), k, v, shape), TypeError, /^q must be a Float32Array, got an Array of length 24$/],
  ['k is a Float64Array', (ca, q, k, v) => ca.attention(q, new Float64Array(24), v, shape), TypeError, /^k must be a Float32Array, got a Float64Array of length 24$/],
  ['v is null', (ca, q, k) => ca.attention(q, k, null, shape), TypeError, /^v must be a Float32Array, got null$/],
  ['q is a string', (ca, q, k, v) => ca.attention('q', k, v, shape), TypeError, /^q must be a Float32Array, got the string "q"$/],
  ['q too short', (ca, q, k, v) => ca.attention(q.subarray(1), k, v, shape), RangeError, /^q must have length 24 \(batch 1 × heads 2 × queryLength 3 × headDim 4\), got length 23$/],
  ['k too long', (ca, q, k, v) => ca.attention(q, new Float32Array(25), v, shape), RangeError, /^k must have length 24 .*got length 25$/],
  ['v does not match valueDim', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, valueDim: 5 }), RangeError, /^v must have length 30 \(.*valueDim 5\), got length 24$/],
  ['options missing', (ca, q, k, v) => ca.attention(q, k, v), TypeError, /^options must be an object/],
  ['options is a number', (ca, q, k, v) => ca.attention(q, k, v, 3), TypeError, /^options must be an options object, got 3$/],
  ['batch missing', (ca, q, k, v) => ca.attention(q, k, v, { heads: 2, queryLength: 3, headDim: 4 }), TypeError, /^options.batch must be an integer >= 1, got undefined$/],
  ['batch zero', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, batch: 0 }), RangeError, /^options.batch must be an integer >= 1, got 0$/],
  ['heads negative', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, heads: -2 }), RangeError, /^options.heads must be an integer >= 1, got -2$/],
  ['queryLength fractional', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, queryLength: 2.5 }), RangeError, /^options.queryLength must be an integer >= 1, got 2.5$/],
  ['headDim NaN', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, headDim: NaN }), RangeError, /^options.headDim must be an integer >= 1, got NaN$/],
  ['keyLength Infinity', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, keyLength: Infinity }), RangeError, /^options.keyLength must be an integer >= 1, got Infinity$/],
  ['valueDim a string', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, valueDim: '4' }), TypeError, /^options.valueDim must be an integer >= 1, got the string "4"$/],
  ['dropout 1', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, dropout: 1 }), RangeError, /^options.dropout must be a number in \[0, 1\), got 1$/],
  ['dropout negative', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, dropout: -0.1 }), RangeError, /^options.dropout must be a number in \[0, 1\), got -0.1$/],
  ['dropout NaN', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, dropout: NaN }), RangeError, /^options.dropout .*got NaN$/],
  ['dropout a string', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, dropout: '0.1' }), TypeError, /^options.dropout must be a number in \[0, 1\), got the string "0.1"$/],
  ['scale Infinity', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, scale: Infinity }), RangeError, /^options.scale must be a finite number, got Infinity$/],
  ['scale NaN', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, scale: NaN }), RangeError, /^options.scale must be a finite number, got NaN$/],
  ['scale beyond float32', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, scale: 1e39 }), RangeError, /^options.scale must fit a float32, got 1e\+39$/],
  ['causal unknown string', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, causal: 'top-right' }), RangeError, /^options.causal must be one of false, true, 'top-left', 'bottom-right', got the string "top-right"$/],
  ['causal a number', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, causal: 1 }), TypeError, /^options.causal must be one of .*got 1$/],
  ['maskStrategy unknown', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, maskStrategy: 'zero' }), RangeError, /^options.maskStrategy must be one of 'neg-inf', 'renormalize', got the string "zero"$/],
  ['training not boolean', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, training: 1 }), TypeError, /^options.training must be true or false, got 1$/],
  ['returnWeights not boolean', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, returnWeights: 'yes' }), TypeError, /^options.returnWeights must be true or false, got the string "yes"$/],
  ['seed negative', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, seed: -1 }), RangeError, /^options.seed must be in \[0, 2\^64\), got -1$/],
  ['seed fractional', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, seed: 1.5 }), RangeError, /^options.seed must be an integer .*got 1.5$/],
  ['seed BigInt too large', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, seed: 1n << 64n }), RangeError, /^options.seed must be in \[0, 2\^64\), got 18446744073709551616n$/],
  ['seed a string', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, seed: '7' }), TypeError, /^options.seed must be an integer or a BigInt, got the string "7"$/],
  ['unknown option (typo)', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, head: 2 }), TypeError, /^options has an unknown option 'head'; known options: batch, heads, /],
  ['out of the wrong length', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, out: new Float32Array(5) }), RangeError, /^options.out must have length 24 .*got length 5$/],
  ['out of the wrong type', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, out: [] }), TypeError, /^options.out must be a Float32Array, got an Array of length 0$/],
  ['weightsOut without returnWeights', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, weightsOut: new Float32Array(18) }), TypeError, /^options.weightsOut is only used with returnWeights: true$/],
  ['tensors beyond a wasm32 heap', (ca) => {
    // Small inputs, but 30000² weights (3.35 GiB): rejected before any
    // allocation.
    const s = { batch: 1, heads: 1, queryLength: 30000, keyLength: 30000, headDim: 1, returnWeights: true };
    const t = new Float32Array(30000);
    return ca.attention(t, t, t, s);
  }, RangeError, /^attention needs 3\.35 GiB of wasm memory for its tensors; a wasm32 module holds at most 2\.00 GiB$/],
  ['attentionReference with a bad tensor', (ca, q, k) => ca.attentionReference(q, k, new Int32Array(24), shape), TypeError, /^v must be a Float32Array, got an Int32Array of length 24$/],
  ['manualSeed with a string', (ca) => ca.manualSeed('x'), TypeError, /^seed must be an integer or a BigInt, got the string "x"$/],
];

describe('bad input to attention', async () => {
  const ca = await init({ build: 'single' });
  for (const [what, call, ErrorType, pattern] of cases) {
    it(`${what}: ${ErrorType.name}`, () => {
      const { q, k, v } = good();
      assert.throws(() => call(ca, q, k, v), (error) => {
        assert.equal(error.constructor, ErrorType, `${error.constructor.name}: ${error.message}`);
        assert.match(error.message, pattern);
        return true;
      });
      // The same runtime keeps working, and correctly.
      const { output } = ca.attention(q, k, v, shape);
      assert.ok(maxRelativeError(output, expected) <= 1e-5);
    });
  }
});

describe('bad input to init', () => {
  it('rejects unknown builds, thread counts and options', async () => {
    await assert.rejects(init({ build: 'gpu' }), RangeError);
    await assert.rejects(init({ threads: 0 }), /init options.threads must be an integer >= 1, got 0/);
    await assert.rejects(init({ threads: 17 }), /at most 16, got 17/);
    await assert.rejects(init({ thread: 2 }), /unknown option 'thread'/);
    await assert.rejects(init('single'), TypeError);
  });
});

describe('dispose', () => {
  it('stops the runtime; later calls throw; init gives a fresh one', async () => {
    const ca = await init({ build: 'threads', threads: 2 });
    const { q, k, v } = good();
    ca.dispose();
    ca.dispose(); // harmless
    assert.throws(() => ca.attention(q, k, v, shape), /has been disposed/);
    const again = await init({ build: 'threads', threads: 2 });
    assert.notEqual(again, ca);
    assert.ok(maxRelativeError(again.attention(q, k, v, shape).output, expected) <= 1e-5);
  });
});
