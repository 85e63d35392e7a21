// The safetensors format (Hugging Face's checkpoint files): an 8-byte
// little-endian header length N, N bytes of JSON naming each tensor's dtype,
// shape and byte range [begin, end) within the data that follows. Reading
// checks every entry before decoding any (offsets inside the file, shape ×
// dtype size equal to the range, ranges not overlapping) and decodes F32,
// F16 and BF16 to Float32Array; writing makes such files (tests, exports).

import { describe } from '../api/validate.mjs';

/** Bytes per value of the dtypes a checkpoint may hold; decoded: F32, F16, BF16. */
const SIZES = { F64: 8, F32: 4, F16: 2, BF16: 2, I64: 8, I32: 4, I16: 2, I8: 1, U8: 1, BOOL: 1, U16: 2, U32: 4, U64: 8 };
const DECODED = ['F32', 'F16', 'BF16'];
const MAX_HEADER = 100 * 2 ** 20;

/**
 * @typedef {{ dtype: string, shape: number[], data: Float32Array | null }} SafetensorsTensor
 *   data: null for a dtype that is not decoded (I64, U8, ...)
 * @typedef {{ tensors: Map<string, SafetensorsTensor>, metadata: Record<string, string> }} Safetensors
 */

/**
 * The file's bytes as a Uint8Array view.
 * @param {unknown} bytes
 * @param {string} name
 * @returns {Uint8Array}
 */
export function toBytes(bytes, name) {
  if (bytes instanceof ArrayBuffer) return new Uint8Array(bytes);
  if (bytes instanceof Uint8Array) return bytes;
  throw new TypeError(`${name} must be an ArrayBuffer or a Uint8Array (a Node Buffer), got ${describe(bytes)}`);
}

/**
 * Reads a .safetensors file: every tensor's dtype and shape, F32 / F16 /
 * BF16 data decoded to float32 (other dtypes: data null). A malformed file is
 * a RangeError naming the tensor and what is wrong.
 * @param {ArrayBuffer | Uint8Array} bytes
 * @param {string} [file]  the file's name, for messages
 * @returns {Safetensors}
 */
export function readSafetensors(bytes, file = 'safetensors') {
  const u8 = toBytes(bytes, file);
  const view = new DataView(u8.buffer, u8.byteOffset, u8.byteLength);
  if (u8.length < 8) throw new RangeError(`${file}: a safetensors file starts with 8 bytes of header length, got ${u8.length} bytes`);
  const headerLength = Number(view.getBigUint64(0, true));
  if (headerLength > MAX_HEADER || 8 + headerLength > u8.length) {
    throw new RangeError(`${file}: header length ${headerLength} does not fit the file's ${u8.length} bytes ` +
      '(not a safetensors file, or a truncated one)');
  }
  let header;
  try {
    header = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(u8.subarray(8, 8 + headerLength)));
  } catch (e) {
    throw new RangeError(`${file}: the header is not valid JSON (${/** @type {Error} */ (e).message})`);
  }
  if (header === null || typeof header !== 'object' || Array.isArray(header)) {
    throw new RangeError(`${file}: the header must be a JSON object of tensors, got ${describe(header)}`);
  }
  const dataStart = 8 + headerLength;
  const dataLength = u8.length - dataStart;
  /** @type {[string, { dtype: string, shape: number[], begin: number, end: number }][]} */
  const entries = [];
  for (const [name, entry] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    const where = `${file}: tensor '${name}'`;
    if (entry === null || typeof entry !== 'object') throw new RangeError(`${where} must be an object, got ${describe(entry)}`);
    const { dtype, shape, data_offsets: offsets } = entry;
    if (typeof dtype !== 'string' || !(dtype in SIZES)) {
      throw new RangeError(`${where}: unknown dtype ${describe(dtype)} (known: ${Object.keys(SIZES).join(', ')})`);
    }
    if (!Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
      throw new RangeError(`${where}: shape must be an array of non-negative integers, got ${JSON.stringify(shape)}`);
    }
    if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every((d) => Number.isSafeInteger(d) && d >= 0)
      || offsets[0] > offsets[1] || offsets[1] > dataLength) {
      throw new RangeError(`${where}: data_offsets ${JSON.stringify(offsets)} must be [begin, end] with ` +
        `0 ≤ begin ≤ end ≤ ${dataLength} (the data's bytes)`);
    }
    const count = shape.reduce((a, b) => a * b, 1);
    const need = count * SIZES[/** @type {keyof typeof SIZES} */ (dtype)];
    if (offsets[1] - offsets[0] !== need) {
      throw new RangeError(`${where}: data_offsets [${offsets.join(', ')}] hold ${offsets[1] - offsets[0]} bytes, ` +
        `but shape [${shape.join(', ')}] of ${dtype} needs ${need}`);
    }
    entries.push([name, { dtype, shape, begin: offsets[0], end: offsets[1] }]);
  }
  const sorted = entries.slice().sort((a, b) => a[1].begin - b[1].begin);
  for (let i = 1; i < sorted.length; i++) {
    if (sorted[i][1].begin < sorted[i - 1][1].end) {
      throw new RangeError(`${file}: tensors '${sorted[i - 1][0]}' and '${sorted[i][0]}' overlap ` +
        `(bytes ${sorted[i][1].begin}..${sorted[i - 1][1].end})`);
    }
  }
  /** @type {Map<string, SafetensorsTensor>} */
  const tensors = new Map();
  for (const [name, e] of entries) {
    const data = DECODED.includes(e.dtype) ? decode(u8, dataStart + e.begin, dataStart + e.end, e.dtype) : null;
    tensors.set(name, { dtype: e.dtype, shape: e.shape, data });
  }
  const metadata = header.__metadata__ && typeof header.__metadata__ === 'object' ? header.__metadata__ : {};
  return { tensors, metadata };
}

const F16_EXP = new Float32Array(64);
for (let e = 0; e < 31; e++) F16_EXP[e] = 2 ** (e - 15);

/**
 * Little-endian F32 / F16 / BF16 bytes [begin, end) → float32.
 * @param {Uint8Array} u8
 * @param {number} begin
 * @param {number} end
 * @param {string} dtype
 * @returns {Float32Array}
 */
function decode(u8, begin, end, dtype) {
  const abs = u8.byteOffset + begin;
  if (dtype === 'F32') {
    const n = (end - begin) / 4;
    return abs % 4 === 0 ? new Float32Array(u8.buffer, abs, n).slice()
      : new Float32Array(u8.buffer.slice(abs, abs + n * 4));
  }
  const n = (end - begin) / 2;
  const halves = abs % 2 === 0 ? new Uint16Array(u8.buffer, abs, n) : new Uint16Array(u8.buffer.slice(abs, abs + n * 2));
  const out = new Float32Array(n);
  if (dtype === 'BF16') {
    const bits = new Uint32Array(out.buffer);
    for (let i = 0; i < n; i++) bits[i] = halves[i] << 16;
    return out;
  }
  for (let i = 0; i < n; i++) {
    const h = halves[i];
    const sign = h & 0x8000 ? -1 : 1;
    const e = (h >> 10) & 31;
    const m = h & 1023;
    if (e === 0) out[i] = sign * m * 2 ** -24;
    else if (e === 31) out[i] = m ? NaN : sign * Infinity;
    else out[i] = sign * F16_EXP[e] * (1 + m / 1024);
  }
  return out;
}

/**
 * float32 → the dtype's bits, rounded to nearest even.
 * @param {Float32Array} data
 * @param {'F16' | 'BF16'} dtype
 * @returns {Uint16Array}
 */
function encodeHalves(data, dtype) {
  const out = new Uint16Array(data.length);
  const bits = new Uint32Array(data.buffer, data.byteOffset, data.length);
  for (let i = 0; i < data.length; i++) {
    const x = data[i];
    if (dtype === 'BF16') {
      const b = bits[i];
      out[i] = Number.isNaN(x) ? 0x7fc0 : (b + 0x7fff + ((b >>> 16) & 1)) >>> 16;
      continue;
    }
    const sign = x < 0 || Object.is(x, -0) ? 0x8000 : 0;
    const a = Math.abs(x);
    if (Number.isNaN(x)) out[i] = 0x7e00;
    else if (a >= 65520) out[i] = sign | 0x7c00;
    else if (a < 2 ** -14) out[i] = sign | roundEven(a * 2 ** 24);
    else {
      const e = Math.floor(Math.log2(a));
      const exp = a >= 2 ** (e + 1) ? e + 1 : a < 2 ** e ? e - 1 : e;
      const m = roundEven((a / 2 ** exp - 1) * 1024);
      out[i] = sign | (m === 1024 ? ((exp + 16) << 10) : ((exp + 15) << 10) | m);
    }
  }
  return out;
}

/** @param {number} x */
function roundEven(x) {
  const f = Math.floor(x);
  const r = x - f;
  return r > 0.5 || (r === 0.5 && f % 2 === 1) ? f + 1 : f;
}

/**
 * Writes a .safetensors file (tensors in the given order, 8-byte aligned
 * header as Hugging Face writes it).
 * @param {Record<string, { dtype?: 'F32' | 'F16' | 'BF16', shape: number[], data: Float32Array }>} tensors
 * @param {Record<string, string>} [metadata]
 * @returns {Uint8Array}
 */
export function writeSafetensors(tensors, metadata) {
  /** @type {Record<string, unknown>} */
  const header = metadata ? { __metadata__: metadata } : {};
  /** @type {Uint8Array[]} */
  const parts = [];
  let offset = 0;
  for (const [name, t] of Object.entries(tensors)) {
    const dtype = t.dtype ?? 'F32';
    const bytes = dtype === 'F32' ? new Uint8Array(t.data.slice().buffer)
      : new Uint8Array(encodeHalves(t.data, dtype).buffer);
    header[name] = { dtype, shape: t.shape, data_offsets: [offset, offset + bytes.length] };
    parts.push(bytes);
    offset += bytes.length;
  }
  const json = JSON.stringify(header);
  const length = new TextEncoder().encode(json).length;
  const head = new TextEncoder().encode(json + ' '.repeat((8 - ((8 + length) % 8)) % 8));
  const out = new Uint8Array(8 + head.length + offset);
  new DataView(out.buffer).setBigUint64(0, BigInt(head.length), true);
  out.set(head, 8);
  let at = 8 + head.length;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
