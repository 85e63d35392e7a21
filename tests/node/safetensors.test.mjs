// bindings/models/safetensors.mjs: files built here byte by byte (not by
// the writer) are read back exactly; the writer's F16 and BF16 rounding is
// checked against references written here from the definitions (the
// nearest representable value, ties to the even bit pattern), not from the
// module's bit tricks; and every malformed header is refused with an error
// that names what is wrong.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readSafetensors, writeSafetensors } from '../../bindings/models/safetensors.mjs';
import { randomArray } from './js-reference.mjs';

const enc = new TextEncoder();

/**
 * A safetensors file from a header object (or raw header text) and the
 * data bytes; `length` overrides the header length written.
 */
function rawFile(header, data = new Uint8Array(0), { length, pad = 0 } = {}) {
  const json = enc.encode((typeof header === 'string' ? header : JSON.stringify(header)) + ' '.repeat(pad));
  const out = new Uint8Array(8 + json.length + data.length);
  const view = new DataView(out.buffer);
  const n = length ?? json.length;
  view.setUint32(0, n % 2 ** 32, true);
  view.setUint32(4, Math.floor(n / 2 ** 32), true);
  out.set(json, 8);
  out.set(data, 8 + json.length);
  return out;
}

const bytesOf = (typed) => new Uint8Array(typed.buffer, typed.byteOffset, typed.byteLength);
const bitsOf = (f32) => new Uint32Array(Float32Array.of(f32).buffer)[0];
const fromBits = (u32) => new Float32Array(Uint32Array.of(u32).buffer)[0];

/** float16 bits → value, from the definition (float64 arithmetic). */
function halfValue(h) {
  const sign = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0x1f) return m ? NaN : sign * Infinity;
  if (e === 0) return sign * m * 2 ** -24;
  return sign * (1 + m / 1024) * 2 ** (e - 15);
}

/** Every non-negative finite float16 value, ascending, and the next one up (65536, inf). */
const HALF_UP = Array.from({ length: 0x7c01 }, (_, h) => (h === 0x7c00 ? 65536 : halfValue(h)));

/** float32 → float16 bits by search: the nearest value, ties to the even pattern; past 65520 inf. */
function referenceHalf(x) {
  if (Number.isNaN(x)) return null;
  const sign = x < 0 || Object.is(x, -0) ? 0x8000 : 0;
  const a = Math.abs(x);
  if (a === Infinity) return sign | 0x7c00;
  let lo = 0, hi = 0x7c00; // HALF_UP[lo] <= a < HALF_UP[hi], or a >= 65536
  if (a >= HALF_UP[hi]) return sign | 0x7c00;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (HALF_UP[mid] <= a) lo = mid; else hi = mid;
  }
  const dLo = a - HALF_UP[lo], dHi = HALF_UP[hi] - a;
  const h = dLo < dHi ? lo : dHi < dLo ? hi : (lo % 2 === 0 ? lo : hi);
  return sign | h;
}

/** float32 → bfloat16 bits: of the two bfloat16 values around x, the nearer; ties to even. */
function referenceBfloat16(x) {
  const bits = bitsOf(x);
  const down = bits - (bits % 0x10000); // toward zero (sign-magnitude)
  const up = down + 0x10000;
  // Past the largest finite value, "up" is 2^128 (IEEE rounds as if the exponent went on).
  const upValue = (up & 0x7fffffff) === 0x7f800000 ? Math.sign(x) * 2 ** 128 : fromBits(up);
  const dDown = Math.abs(x - fromBits(down)), dUp = Math.abs(upValue - x);
  const pick = dDown < dUp ? down : dUp < dDown ? up : ((down >>> 16) % 2 === 0 ? down : up);
  return pick >>> 16;
}

/** Round trips `values` through a written file as `dtype`; returns the values read. */
function roundTrip(values, dtype) {
  const file = writeSafetensors({ t: { dtype, shape: [values.length], data: Float32Array.from(values) } });
  const t = readSafetensors(file).tensors.get('t');
  assert.equal(t.dtype, dtype);
  assert.deepEqual(t.shape, [values.length]);
  return t.data;
}

/** Float32 values around the float16 range: random bits, ties, boundaries. */
function halfCases() {
  const out = [0, -0, Infinity, -Infinity, 65504, 65519.99, 65520, -65520, 65536, 1e6, 3.4e38,
    2 ** -24, 2 ** -25, 2 ** -25 * 1.0000001, 2 ** -26, 3 * 2 ** -25, 5 * 2 ** -25, 2 ** -14, 2 ** -14 - 2 ** -25,
    1 + 2 ** -11, 1 + 3 * 2 ** -11, 1 + 2 ** -11 + 2 ** -20, 2049, 2051, 4097, 1e-45, -1e-40];
  let x = 12345;
  for (let i = 0; i < 20000; i++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    const exp = 95 + (x % 56); // 2^-32 … 2^23
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    const mant = i % 3 === 0 ? (x & 0x7fe000) | 0x1000 : x & 0x7fffff; // a third exact ties
    out.push(fromBits(((i & 1) << 31 | exp << 23 | mant) >>> 0));
  }
  return out;
}

describe('readSafetensors: files written byte by byte', () => {
  const f32 = Float32Array.of(1.5, -2, 0, -0, 3.4028234663852886e38, 1e-45, Infinity, -Infinity);
  const header = {
    __metadata__: { format: 'pt', note: 'é' },
    w: { dtype: 'F32', shape: [2, 4], data_offsets: [0, 32] },
    empty: { dtype: 'F32', shape: [0, 3], data_offsets: [32, 32] },
    scalar: { dtype: 'F32', shape: [], data_offsets: [32, 36] },
  };
  const data = new Uint8Array(36);
  data.set(bytesOf(f32));
  data.set(bytesOf(Float32Array.of(7)), 32);

  it('reads F32 values, shapes (0-sized and scalar included) and the metadata', () => {
    const { tensors, metadata } = readSafetensors(rawFile(header, data, { pad: 4 }));
    assert.deepEqual(metadata, { format: 'pt', note: 'é' });
    assert.deepEqual([...tensors.keys()], ['w', 'empty', 'scalar']);
    const w = tensors.get('w');
    assert.deepEqual(w.shape, [2, 4]);
    assert.equal(w.dtype, 'F32');
    assert.deepEqual(Array.from(w.data), Array.from(f32));
    assert.ok(Object.is(w.data[3], -0));
    assert.equal(tensors.get('empty').data.length, 0);
    assert.deepEqual(tensors.get('scalar').shape, []);
    assert.deepEqual(Array.from(tensors.get('scalar').data), [7]);
  });

  it('takes an ArrayBuffer, a Uint8Array at any byteOffset and a Buffer, aligned or not', () => {
    const file = rawFile(header, data); // header of odd length: data at an odd offset
    for (const shift of [0, 1, 2, 3, 4]) {
      const big = new Uint8Array(file.length + 8);
      big.set(file, shift);
      const inputs = [big.subarray(shift, shift + file.length), Buffer.from(big.buffer, shift, file.length)];
      if (shift === 0) inputs.push(file.buffer);
      for (const input of inputs) {
        const w = readSafetensors(input).tensors.get('w');
        assert.deepEqual(Array.from(w.data), Array.from(f32), `shift ${shift}`);
      }
    }
  });

  it('views F32 data at a 4-aligned offset instead of copying it, and copies it otherwise', () => {
    const length = enc.encode(JSON.stringify(header)).length;
    const aligned = rawFile(header, data, { pad: (8 - (length % 8)) % 8 });
    assert.equal(readSafetensors(aligned).tensors.get('w').data.buffer, aligned.buffer);
    const unaligned = rawFile(header, data, { pad: (9 - (length % 8)) % 8 });
    assert.notEqual(readSafetensors(unaligned).tensors.get('w').data.buffer, unaligned.buffer);
  });

  it('decodes all 65 536 float16 patterns exactly (subnormals, ±0, ±inf, NaN)', () => {
    const words = new Uint16Array(65536).map((_, i) => i);
    for (const pad of [0, 1]) { // aligned and unaligned 16-bit data
      const file = rawFile({ h: { dtype: 'F16', shape: [256, 256], data_offsets: [0, 131072] } }, bytesOf(words), { pad });
      const got = readSafetensors(file).tensors.get('h').data;
      for (let h = 0; h < 65536; h++) {
        const want = halfValue(h);
        if (Number.isNaN(want)) assert.ok(Number.isNaN(got[h]), `0x${h.toString(16)}`);
        else assert.ok(Object.is(got[h], want), `0x${h.toString(16)}: ${got[h]} != ${want}`);
      }
    }
  });

  it('decodes bfloat16 as the upper half of float32', () => {
    const words = Uint16Array.from({ length: 4096 }, (_, i) => (i * 40503) & 0xffff);
    words.set([0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc0, 0x0001, 0x807f, 0x7f7f], 0);
    for (const pad of [0, 1]) {
      const file = rawFile({ b: { dtype: 'BF16', shape: [4096], data_offsets: [0, 8192] } }, bytesOf(words), { pad });
      const got = readSafetensors(file).tensors.get('b').data;
      const want = new DataView(new ArrayBuffer(4));
      for (let i = 0; i < words.length; i++) {
        want.setUint16(0, words[i]); // big-endian: the high half
        want.setUint16(2, 0);
        const w = want.getFloat32(0);
        if (Number.isNaN(w)) assert.ok(Number.isNaN(got[i]));
        else assert.ok(Object.is(got[i], w), `0x${words[i].toString(16)}`);
      }
    }
  });

  it('keeps tensors of other dtypes as unsupported, their byte ranges checked', () => {
    const file = rawFile({
      ids: { dtype: 'I64', shape: [3], data_offsets: [0, 24] },
      mask: { dtype: 'BOOL', shape: [2, 2], data_offsets: [24, 28] },
      x: { dtype: 'F32', shape: [1], data_offsets: [28, 32] },
    }, new Uint8Array(32));
    const { tensors } = readSafetensors(file);
    assert.deepEqual(tensors.get('ids'), { dtype: 'I64', shape: [3], unsupported: true });
    assert.deepEqual(tensors.get('mask'), { dtype: 'BOOL', shape: [2, 2], unsupported: true });
    assert.equal(tensors.get('x').data[0], 0);
    assert.throws(() => readSafetensors(rawFile({ ids: { dtype: 'I64', shape: [3], data_offsets: [0, 12] } }, new Uint8Array(12))),
      { name: 'RangeError', message: "tensor 'ids': data_offsets [0, 12] hold 12 bytes, but shape [3] of I64 needs 24" });
  });

  it('allows gaps and empty tensors at the same offset', () => {
    const file = rawFile({
      a: { dtype: 'F32', shape: [1], data_offsets: [4, 8] },
      e1: { dtype: 'F16', shape: [0], data_offsets: [4, 4] },
      e2: { dtype: 'F32', shape: [2, 0], data_offsets: [5, 5] },
    }, new Uint8Array(12));
    assert.equal(readSafetensors(file).tensors.size, 3);
  });
});

describe('writeSafetensors → readSafetensors', () => {
  it('F32 is exact for every value, subnormals and NaN included', () => {
    const values = [0, -0, 1, -1.25, Infinity, -Infinity, NaN, 1e-45, -1.1754942106924411e-38, 3.4028234663852886e38,
      ...randomArray(1000, 7)];
    const got = roundTrip(values, 'F32');
    values.forEach((v, i) => assert.ok(Object.is(got[i], Math.fround(v)), `${i}: ${v}`));
  });

  it('F16 rounds to nearest, ties to even, as the reference search does', () => {
    const values = halfCases();
    const got = roundTrip(values, 'F16');
    let ties = 0;
    values.forEach((v, i) => {
      const x = Math.fround(v);
      const h = referenceHalf(x);
      assert.ok(Object.is(got[i], halfValue(h)), `${x} (0x${bitsOf(x).toString(16)}): got ${got[i]}, want ${halfValue(h)}`);
      if (Math.abs(x) < 65504 && Math.abs(x) >= 2 ** -14 && (bitsOf(x) & 0x1fff) === 0x1000) ties++;
    });
    assert.ok(ties > 3000, `${ties} ties checked`);
    // The boundaries, spelled out.
    assert.deepEqual(Array.from(roundTrip([65519.99, 65520, 2 ** -25, 3 * 2 ** -25, 1 + 2 ** -11, 1 + 3 * 2 ** -11], 'F16')),
      [65504, Infinity, 0, 2 * 2 ** -24, 1, 1 + 4 * 2 ** -11]);
  });

  it('F16 keeps ±0, ±inf and NaN, and every float16 value exactly', () => {
    const got = roundTrip([-0, 0, Infinity, -Infinity, NaN, -NaN], 'F16');
    assert.ok(Object.is(got[0], -0) && Object.is(got[1], 0));
    assert.deepEqual(Array.from(got.subarray(2, 4)), [Infinity, -Infinity]);
    assert.ok(Number.isNaN(got[4]) && Number.isNaN(got[5]));
    const all = Array.from({ length: 65536 }, (_, h) => halfValue(h)).filter((v) => !Number.isNaN(v));
    const back = roundTrip(all, 'F16');
    all.forEach((v, i) => assert.ok(Object.is(back[i], v), String(v)));
  });

  it('BF16 rounds to nearest, ties to even, as the reference does', () => {
    const values = [];
    let x = 99;
    for (let i = 0; i < 20000; i++) {
      x = (Math.imul(x, 1103515245) + 12345) >>> 0;
      const bits = i % 3 === 0 ? ((x & 0xffff0000) | 0x8000) >>> 0 : x; // a third exact ties
      if ((bits & 0x7f800000) !== 0x7f800000) values.push(fromBits(bits));
    }
    values.push(3.4028234663852886e38, -3.4028234663852886e38, 1e-45, 1 + 2 ** -8, 1 + 3 * 2 ** -8, fromBits(0x7f7f7fff),
      fromBits(0x7f7f8000));
    const got = roundTrip(values, 'BF16');
    values.forEach((v, i) => {
      const want = fromBits(referenceBfloat16(v) << 16 >>> 0);
      assert.ok(Object.is(got[i], want), `${v} (0x${bitsOf(v).toString(16)}): got ${got[i]}, want ${want}`);
    });
    assert.deepEqual(Array.from(got.subarray(-7)),
      [Infinity, -Infinity, 0, 1, 1 + 4 * 2 ** -8, fromBits(0x7f7f0000), Infinity]);
  });

  it('BF16 keeps ±0, ±inf, NaN and float32 subnormals that fit', () => {
    const got = roundTrip([-0, 0, Infinity, -Infinity, NaN, 2 ** -133, -(2 ** -127 + 2 ** -133), 2 ** -140 + 2 ** -141], 'BF16');
    assert.ok(Object.is(got[0], -0) && Object.is(got[1], 0));
    assert.deepEqual(Array.from(got.subarray(2, 4)), [Infinity, -Infinity]);
    assert.ok(Number.isNaN(got[4]));
    assert.equal(got[5], 2 ** -133);
    assert.equal(got[6], -(2 ** -127 + 2 ** -133));
    assert.equal(got[7], 0); // 0x00000300: below bfloat16's smallest subnormal (2^-133) by half
  });

  it('writes the metadata, a space-padded header of 8k bytes, and 4-byte tensors first', () => {
    const file = writeSafetensors(new Map([
      ['h', { dtype: 'F16', shape: [3], data: Float32Array.of(1, 2, 3) }],
      ['f', { dtype: 'F32', shape: [1, 2], data: Float32Array.of(4, 5) }],
    ]), { format: 'pt' });
    const n = new DataView(file.buffer).getUint32(0, true);
    assert.equal(n % 8, 0);
    const header = JSON.parse(new TextDecoder().decode(file.subarray(8, 8 + n)));
    assert.deepEqual(header, {
      __metadata__: { format: 'pt' },
      f: { dtype: 'F32', shape: [1, 2], data_offsets: [0, 8] },
      h: { dtype: 'F16', shape: [3], data_offsets: [8, 14] },
    });
    assert.equal(file.length, 8 + n + 14);
    const { tensors, metadata } = readSafetensors(file);
    assert.deepEqual(metadata, { format: 'pt' });
    assert.deepEqual(Array.from(tensors.get('h').data), [1, 2, 3]);
    assert.equal(tensors.get('f').data.buffer, file.buffer); // aligned: a view
  });

  it('refuses what it cannot write, naming the tensor', () => {
    const ok = { dtype: 'F32', shape: [2], data: new Float32Array(2) };
    const cases = [
      [null, TypeError, 'tensors must be an object or a Map of { dtype, shape, data }, got null'],
      [{ a: { ...ok, dtype: 'I64' } }, RangeError, "tensors['a'].dtype must be 'F32', 'F16' or 'BF16', got the string \"I64\""],
      [{ a: { ...ok, shape: [3] } }, RangeError, "tensors['a'].data must have length 3 (shape [3]), got length 2"],
      [{ a: { ...ok, shape: [-2] } }, RangeError, "tensors['a'].shape[0] must be an integer >= 0, got -2"],
      [{ a: { ...ok, data: [0, 0] } }, TypeError, "tensors['a'].data must be a Float32Array, got an Array of length 2"],
      [{ __metadata__: ok }, RangeError, "tensors['__metadata__']: '__metadata__' is the header's metadata, not a tensor name"],
    ];
    for (const [tensors, name, message] of cases) {
      assert.throws(() => writeSafetensors(tensors), { name: name.name, message });
    }
    assert.throws(() => writeSafetensors({ a: ok }, { n: 1 }),
      { name: 'TypeError', message: 'bytes: the header\'s __metadata__["n"] must be a string, got 1' });
  });
});

describe('readSafetensors refuses malformed files, naming what is wrong', () => {
  const good = writeSafetensors({
    'h.0.attn.c_attn.weight': { dtype: 'F32', shape: [3, 4], data: randomArray(12, 3) },
    b: { dtype: 'BF16', shape: [2], data: Float32Array.of(1, 2) },
  });
  const data4 = new Uint8Array(100);
  /** [what, bytes, error name, message (string or RegExp)] */
  const cases = [
    ['not bytes', [1, 2, 3], 'TypeError', 'bytes must be an ArrayBuffer, a Uint8Array or a Buffer, got an Array of length 3'],
    ['a Float32Array', new Float32Array(4), 'TypeError', /got a Float32Array of length 4$/],
    ['under 8 bytes', new Uint8Array(5), 'RangeError', 'bytes must hold a safetensors file: at least 8 bytes (the header length), got 5 bytes'],
    ['a truncated header', good.subarray(0, 30), 'RangeError', /^bytes: the header length \d+ runs past the end of the file \(8 \+ \d+ bytes needed, the file has 30\)$/],
    ['a truncated file', good.subarray(0, good.length - 1), 'RangeError',
      /^tensor 'b': data_offsets \[48, 52\] must be integers with 0 <= begin <= end <= 51 \(the data's length in bytes\)$/],
    ['a header length past 2^32', rawFile({}, data4, { length: 2 ** 32 + 2 }), 'RangeError',
      'bytes: the header length is 4294967298 bytes, more than the 100000000 a safetensors header may have'],
    ['a header length over 100 MB', rawFile({}, data4, { length: 100_000_001 }), 'RangeError', /more than the 100000000/],
    ['a header length past the end', rawFile({}, data4, { length: 200 }), 'RangeError', /header length 200 runs past the end/],
    ['a header that is not UTF-8', (() => { const f = rawFile('{"a":1}'); f[10] = 0xff; return f; })(), 'TypeError',
      'bytes: the 7-byte header is not valid UTF-8'],
    ['a header that is not JSON', rawFile('{"a": '), 'TypeError', /^bytes: the 6-byte header is not valid JSON \(/],
    ['a header that is an array', rawFile('[]'), 'TypeError', 'bytes: the header must be a JSON object, got an Array of length 0'],
    ['a header that is null', rawFile('null'), 'TypeError', 'bytes: the header must be a JSON object, got null'],
    ['metadata that is not an object', rawFile({ __metadata__: 'x' }), 'TypeError',
      'bytes: the header\'s __metadata__ must be an object of strings, got the string "x"'],
    ['metadata that is not strings', rawFile({ __metadata__: { step: 3 } }), 'TypeError',
      'bytes: the header\'s __metadata__["step"] must be a string, got 3'],
    ['an entry that is not an object', rawFile({ w: [1] }), 'TypeError',
      "tensor 'w' must be an object { dtype, shape, data_offsets }, got an Array of length 1"],
    ['a missing dtype', rawFile({ w: { shape: [1], data_offsets: [0, 4] } }, data4), 'TypeError',
      "tensor 'w': dtype must be a string, got undefined"],
    ['an unknown dtype', rawFile({ w: { dtype: 'F17', shape: [1], data_offsets: [0, 4] } }, data4), 'RangeError',
      /^tensor 'w': dtype must be one of BOOL, U8, .*F32, .*F64.*, got the string "F17"$/],
    ['a shape that is not an array', rawFile({ w: { dtype: 'F32', shape: 4, data_offsets: [0, 16] } }, data4), 'TypeError',
      "tensor 'w': shape must be an Array of integers >= 0, got 4"],
    ['a negative shape', rawFile({ w: { dtype: 'F32', shape: [2, -2], data_offsets: [0, 16] } }, data4), 'RangeError',
      "tensor 'w': shape[1] must be an integer >= 0, got -2"],
    ['a fractional shape', rawFile({ w: { dtype: 'F32', shape: [1.5], data_offsets: [0, 6] } }, data4), 'RangeError',
      "tensor 'w': shape[0] must be an integer >= 0, got 1.5"],
    ['a shape of strings', rawFile({ w: { dtype: 'F32', shape: ['2'], data_offsets: [0, 8] } }, data4), 'TypeError',
      "tensor 'w': shape[0] must be an integer >= 0, got the string \"2\""],
    ['a huge shape', rawFile({ w: { dtype: 'F32', shape: [2 ** 30, 2 ** 30, 2 ** 30], data_offsets: [0, 8] } }, data4), 'RangeError',
      "tensor 'w': data_offsets [0, 8] hold 8 bytes, but shape [1073741824, 1073741824, 1073741824] of F32 needs more than 2^53"],
    ['data_offsets of one number', rawFile({ w: { dtype: 'F32', shape: [1], data_offsets: [4] } }, data4), 'TypeError',
      "tensor 'w': data_offsets must be an Array of two integers [begin, end], got an Array of length 1"],
    ['data_offsets missing', rawFile({ w: { dtype: 'F32', shape: [1] } }, data4), 'TypeError',
      "tensor 'w': data_offsets must be an Array of two integers [begin, end], got undefined"],
    ['data_offsets reversed', rawFile({ w: { dtype: 'F32', shape: [1], data_offsets: [8, 4] } }, data4), 'RangeError',
      "tensor 'w': data_offsets [8, 4] must be integers with 0 <= begin <= end <= 100 (the data's length in bytes)"],
    ['data_offsets negative', rawFile({ w: { dtype: 'F32', shape: [1], data_offsets: [-4, 0] } }, data4), 'RangeError',
      /data_offsets \[-4, 0\] must be integers/],
    ['data_offsets fractional', rawFile({ w: { dtype: 'F32', shape: [1], data_offsets: [0.5, 4.5] } }, data4), 'RangeError',
      /data_offsets \[0\.5, 4\.5\] must be integers/],
    ['data_offsets past the data', rawFile({ w: { dtype: 'F32', shape: [2], data_offsets: [96, 104] } }, data4), 'RangeError',
      /data_offsets \[96, 104\] must be integers with 0 <= begin <= end <= 100/],
    ['a byte range that is not shape × dtype', rawFile({ 'h.0.attn.c_attn.weight': { dtype: 'F32', shape: [3, 4], data_offsets: [0, 100] } }, data4),
      'RangeError', "tensor 'h.0.attn.c_attn.weight': data_offsets [0, 100] hold 100 bytes, but shape [3, 4] of F32 needs 48"],
    ['a BF16 byte range of F32 size', rawFile({ w: { dtype: 'BF16', shape: [2], data_offsets: [0, 8] } }, data4), 'RangeError',
      "tensor 'w': data_offsets [0, 8] hold 8 bytes, but shape [2] of BF16 needs 4"],
    ['overlapping tensors', rawFile({
      a: { dtype: 'F32', shape: [4], data_offsets: [0, 16] },
      c: { dtype: 'F32', shape: [2], data_offsets: [40, 48] },
      b: { dtype: 'F32', shape: [4], data_offsets: [12, 28] },
    }, data4), 'RangeError', "tensors 'a' (data_offsets [0, 16]) and 'b' (data_offsets [12, 28]) overlap"],
    ['one tensor inside another', rawFile({
      big: { dtype: 'F32', shape: [8], data_offsets: [0, 32] },
      small: { dtype: 'F16', shape: [2], data_offsets: [8, 12] },
    }, data4), 'RangeError', "tensors 'big' (data_offsets [0, 32]) and 'small' (data_offsets [8, 12]) overlap"],
  ];
  for (const [what, bytes, name, message] of cases) {
    it(what, () => assert.throws(() => readSafetensors(bytes), { name, message }));
  }

  it('the good file these are cut from reads', () => {
    const { tensors } = readSafetensors(good);
    assert.deepEqual(Array.from(tensors.get('b').data), [1, 2]);
    assert.deepEqual(Array.from(tensors.get('h.0.attn.c_attn.weight').data), Array.from(randomArray(12, 3)));
  });
});
