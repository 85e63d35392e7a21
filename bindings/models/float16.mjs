// float16 and bfloat16 to and from float32, bit for bit: decoding is exact
// (subnormals, ±0, ±inf and NaN payloads included); encoding rounds to
// nearest, ties to even (as PyTorch's .half() and .bfloat16() round finite
// values).

/** @type {Float32Array | null} */
let f16Table = null;

/**
 * float16 bits → float32 value, for all 65 536 patterns (built on first
 * use, then shared: do not write to it).
 * @returns {Float32Array}
 */
export function halfTable() {
  if (f16Table) return f16Table;
  const table = new Float32Array(65536);
  const bits = new Uint32Array(table.buffer);
  for (let h = 0; h < 65536; h++) {
    const sign = (h & 0x8000) << 16;
    const exp = (h >> 10) & 0x1f;
    let mant = h & 0x3ff;
    if (exp === 0x1f) {
      bits[h] = sign | 0x7f800000 | (mant << 13); // inf, or NaN with its payload
    } else if (exp !== 0) {
      bits[h] = sign | ((exp + 112) << 23) | (mant << 13);
    } else if (mant === 0) {
      bits[h] = sign; // ±0
    } else { // subnormal: normalize (exact in float32)
      let e = 113;
      while (!(mant & 0x400)) { mant <<= 1; e--; }
      bits[h] = sign | (e << 23) | ((mant & 0x3ff) << 13);
    }
  }
  f16Table = table;
  return table;
}

/**
 * float32 bits → float16 bits, rounded to nearest, ties to even; NaN stays
 * NaN (its payload's top bits kept, quiet bit set), overflow gives ±inf.
 * @param {number} x  the float32's bits, as an unsigned integer
 * @returns {number}
 */
export function float32BitsToHalf(x) {
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  const mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 | (mant >>> 13) : 0);
  const e = exp - 112; // the float16 biased exponent
  if (e >= 31) return sign | 0x7c00;
  if (e <= 0) { // a float16 subnormal (or zero): h = m · 2^(exp − 126)
    const shift = 14 - e;
    if (shift > 24) return sign; // below half the smallest subnormal
    const m = mant | 0x800000;
    let h = m >>> shift;
    const rem = m & ((1 << shift) - 1);
    const half = 1 << (shift - 1);
    if (rem > half || (rem === half && (h & 1))) h++; // may carry into the smallest normal
    return sign | h;
  }
  let h = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && (h & 1))) h++; // may carry up to inf
  return sign | h;
}

/**
 * float32 bits → bfloat16 bits (the upper half), rounded to nearest, ties
 * to even; NaN stays NaN (quiet bit set).
 * @param {number} x  the float32's bits, as an unsigned integer
 * @returns {number}
 */
export function float32BitsToBfloat16(x) {
  if ((x & 0x7fffffff) > 0x7f800000) return (x >>> 16) | 0x0040;
  return ((x + 0x7fff + ((x >>> 16) & 1)) >>> 16) & 0xffff;
}
