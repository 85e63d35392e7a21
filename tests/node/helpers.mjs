// Helpers shared by the Node suites (node --test runs only *.test.mjs): the
// plain-JS pieces their references are built from.
import { randomArray } from './js-reference.mjs';

/**
 * y = x · wᵀ + b in float64: x [rows, inF], w [outF, inF] row-major (as
 * nn.Linear), b [outF] or null/undefined. Returns a Float64Array [rows, outF].
 */
export function linearJs(x, rows, inF, outF, w, b) {
  const y = new Float64Array(rows * outF);
  for (let r = 0; r < rows; r++) {
    for (let o = 0; o < outF; o++) {
      let acc = b ? b[o] : 0;
      for (let i = 0; i < inF; i++) acc += x[r * inF + i] * w[o * inF + i];
      y[r * outF + o] = acc;
    }
  }
  return y;
}

/**
 * Random inputs of one attention call: q [batch, heads, queryLength,
 * headDim], k and v with kvHeads heads (default heads) over keyLength
 * (default queryLength) keys, v of valueDim (default headDim), and a
 * gradOutput dO shaped as the output.
 */
export function problem(o, seed = 1) {
  const tk = o.keyLength ?? o.queryLength;
  const kvH = o.kvHeads ?? o.heads;
  const dv = o.valueDim ?? o.headDim;
  return {
    q: randomArray(o.batch * o.heads * o.queryLength * o.headDim, seed),
    k: randomArray(o.batch * kvH * tk * o.headDim, seed + 1),
    v: randomArray(o.batch * kvH * tk * dv, seed + 2),
    dO: randomArray(o.batch * o.heads * o.queryLength * dv, seed + 3),
  };
}

/**
 * The golden files' inputs (tests/data/int8-*-golden.json): x <- 1664525 x +
 * 1013904223 (mod 2^32); each call gives (a 24-bit integer - 2^23) · 2^-23,
 * exact in float32 (tests/native/kv/int8_rows_cases.h's Lcg).
 * @param {number} seed
 */
export function lcg(seed) {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return ((state >>> 8) - 2 ** 23) * 2 ** -23;
  };
}

/** A Float32Array's bits as 8 hex digits per value (the golden files' form). */
export const hex = (/** @type {Float32Array} */ a) =>
  Array.from(new Uint32Array(a.buffer, a.byteOffset, a.length), (b) => b.toString(16).padStart(8, '0')).join('');
