// The safetensors file format (Hugging Face's checkpoints), read and written
// in plain JavaScript: an 8-byte little-endian header length N, N bytes of
// UTF-8 JSON { name: { dtype, shape, data_offsets: [begin, end] },
// "__metadata__"?: { string: string } }, then the data, the offsets counted
// from its start. F32, F16 and BF16 tensors are decoded to Float32Arrays;
// the other dtypes are checked like them and kept as { unsupported: true }
// (their values are not read), so that a caller can skip them by name.
// Every check runs before the first tensor is decoded; each error is a
// TypeError (wrong kind of value) or RangeError (right kind, wrong value)
// naming the tensor or the part of the header that is wrong.
import { describe } from '../api/validate.mjs';
import { float32BitsToBfloat16, float32BitsToHalf, halfTable } from './float16.mjs';

/** @typedef {'F32' | 'F16' | 'BF16'} FloatDtype */
/**
 * A decoded tensor. `data` may share memory with the bytes read (F32 data
 * at a 4-aligned offset is a view, not a copy).
 * @typedef {{ dtype: FloatDtype, shape: number[], data: Float32Array }} FloatTensor
 */
/**
 * A tensor of a dtype that is not decoded (its byte range was checked).
 * @typedef {{ dtype: string, shape: number[], unsupported: true }} UnsupportedTensor
 */
/** @typedef {FloatTensor | UnsupportedTensor} SafetensorsTensor */
/**
 * @typedef {{ tensors: Map<string, SafetensorsTensor>, metadata: Record<string, string> }} SafetensorsFile
 */
/** @typedef {{ dtype: FloatDtype, shape: readonly number[], data: Float32Array }} TensorToWrite */

/** Bytes per element of every dtype the format names (sub-byte ones excluded). */
const DTYPE_SIZES = /** @type {Record<string, number>} */ ({
  BOOL: 1, U8: 1, I8: 1, F8_E5M2: 1, F8_E4M3: 1, F8_E8M0: 1,
  I16: 2, U16: 2, F16: 2, BF16: 2,
  I32: 4, U32: 4, F32: 4,
  I64: 8, U64: 8, F64: 8, C64: 8,
});
const FLOAT_DTYPES = ['F32', 'F16', 'BF16'];

/** The largest header read, in bytes (the reference implementation's limit). */
export const MAX_HEADER_BYTES = 100_000_000;

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/**
 * @param {number[]} shape
 * @returns {number}  the element count (Infinity past 2^53)
 */
function product(shape) {
  let n = 1;
  for (const d of shape) n *= d;
  return Number.isSafeInteger(n) ? n : Infinity;
}

const showShape = (/** @type {readonly number[]} */ shape) => `[${shape.join(', ')}]`;

/**
 * A shape: an Array of safe integers >= 0.
 * @param {string} name  how errors name it
 * @param {unknown} shape
 * @returns {number[]}
 */
function checkShape(name, shape) {
  if (!Array.isArray(shape)) {
    throw new TypeError(`${name} must be an Array of integers >= 0, got ${describe(shape)}`);
  }
  for (let i = 0; i < shape.length; i++) {
    const d = shape[i];
    if (typeof d !== 'number') {
      throw new TypeError(`${name}[${i}] must be an integer >= 0, got ${describe(d)}`);
    }
    if (!Number.isSafeInteger(d) || d < 0) {
      throw new RangeError(`${name}[${i}] must be an integer >= 0, got ${describe(d)}`);
    }
  }
  return shape.slice();
}

/**
 * @param {unknown} bytes
 * @returns {Uint8Array}
 */
function toBytes(bytes) {
  if (bytes instanceof Uint8Array) return bytes; // Node's Buffer included
  if (bytes instanceof ArrayBuffer) return new Uint8Array(bytes);
  if (typeof SharedArrayBuffer !== 'undefined' && bytes instanceof SharedArrayBuffer) return new Uint8Array(bytes);
  throw new TypeError(`bytes must be an ArrayBuffer, a Uint8Array or a Buffer, got ${describe(bytes)}`);
}

/**
 * The header's JSON object, checked to be one.
 * @param {Uint8Array} u8
 * @returns {{ header: Record<string, unknown>, dataStart: number }}
 */
function readHeader(u8) {
  if (u8.length < 8) {
    throw new RangeError(`bytes must hold a safetensors file: at least 8 bytes (the header length), got ${u8.length} bytes`);
  }
  const view = new DataView(u8.buffer, u8.byteOffset, 8);
  const low = view.getUint32(0, true);
  const high = view.getUint32(4, true);
  const length = high * 2 ** 32 + low;
  if (length > MAX_HEADER_BYTES) {
    throw new RangeError(`bytes: the header length is ${length} bytes, more than the ${MAX_HEADER_BYTES} a safetensors header may have`);
  }
  if (8 + length > u8.length) {
    throw new RangeError(`bytes: the header length ${length} runs past the end of the file (8 + ${length} bytes needed, the file has ${u8.length})`);
  }
  let text;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(u8.subarray(8, 8 + length));
  } catch {
    throw new TypeError(`bytes: the ${length}-byte header is not valid UTF-8`);
  }
  let header;
  try {
    header = JSON.parse(text);
  } catch (e) {
    throw new TypeError(`bytes: the ${length}-byte header is not valid JSON (${e.message})`);
  }
  if (header === null || typeof header !== 'object' || Array.isArray(header)) {
    throw new TypeError(`bytes: the header must be a JSON object, got ${describe(header)}`);
  }
  return { header, dataStart: 8 + length };
}

/**
 * @param {unknown} value
 * @returns {Record<string, string>}
 */
function checkMetadata(value) {
  if (value === undefined) return {};
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new TypeError(`bytes: the header's __metadata__ must be an object of strings, got ${describe(value)}`);
  }
  /** @type {Record<string, string>} */
  const out = {};
  for (const [key, v] of Object.entries(value)) {
    if (typeof v !== 'string') {
      throw new TypeError(`bytes: the header's __metadata__[${JSON.stringify(key)}] must be a string, got ${describe(v)}`);
    }
    out[key] = v;
  }
  return out;
}

/**
 * One header entry, checked against the data's length.
 * @param {string} name
 * @param {unknown} entry
 * @param {number} dataLength
 * @returns {{ name: string, dtype: string, shape: number[], begin: number, end: number }}
 */
function checkEntry(name, entry, dataLength) {
  const what = `tensor '${name}'`;
  if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) {
    throw new TypeError(`${what} must be an object { dtype, shape, data_offsets }, got ${describe(entry)}`);
  }
  const { dtype, shape: rawShape, data_offsets: offsets } = /** @type {Record<string, unknown>} */ (entry);
  if (typeof dtype !== 'string') {
    throw new TypeError(`${what}: dtype must be a string, got ${describe(dtype)}`);
  }
  const size = Object.hasOwn(DTYPE_SIZES, dtype) ? DTYPE_SIZES[dtype] : 0;
  if (!size) {
    throw new RangeError(`${what}: dtype must be one of ${Object.keys(DTYPE_SIZES).join(', ')}, got ${describe(dtype)}`);
  }
  const shape = checkShape(`${what}: shape`, rawShape);
  if (!Array.isArray(offsets) || offsets.length !== 2 ||
      typeof offsets[0] !== 'number' || typeof offsets[1] !== 'number') {
    throw new TypeError(`${what}: data_offsets must be an Array of two integers [begin, end], got ${describe(offsets)}`);
  }
  const [begin, end] = offsets;
  if (!Number.isSafeInteger(begin) || !Number.isSafeInteger(end) || begin < 0 || begin > end || end > dataLength) {
    throw new RangeError(`${what}: data_offsets [${begin}, ${end}] must be integers with ` +
      `0 <= begin <= end <= ${dataLength} (the data's length in bytes)`);
  }
  const needed = product(shape) * size;
  if (end - begin !== needed) {
    const count = Number.isFinite(needed) ? String(needed) : 'more than 2^53';
    throw new RangeError(`${what}: data_offsets [${begin}, ${end}] hold ${end - begin} bytes, ` +
      `but shape ${showShape(shape)} of ${dtype} needs ${count}`);
  }
  return { name, dtype, shape, begin, end };
}


/**
 * A copy of u8[begin, begin + length) in a new ArrayBuffer (not
 * u8.slice: a Buffer's slice is a view).
 * @param {Uint8Array} u8
 * @param {number} begin
 * @param {number} length
 */
function copyBytes(u8, begin, length) {
  const out = new Uint8Array(length);
  out.set(u8.subarray(begin, begin + length));
  return out.buffer;
}

/**
 * 16-bit words at u8[begin, begin + 2n), as a Uint16Array (a view when
 * aligned, else a copy).
 * @param {Uint8Array} u8
 * @param {number} begin
 * @param {number} n
 */
function words16(u8, begin, n) {
  const at = u8.byteOffset + begin;
  if (at % 2 === 0) return new Uint16Array(u8.buffer, at, n);
  return new Uint16Array(copyBytes(u8, begin, 2 * n));
}

/**
 * @param {Uint8Array} u8
 * @param {string} dtype  F32, F16 or BF16
 * @param {number} begin  absolute, in u8
 * @param {number} n  elements
 * @returns {Float32Array}
 */
function decode(u8, dtype, begin, n) {
  if (!LITTLE_ENDIAN) {
    const view = new DataView(u8.buffer, u8.byteOffset + begin, n * (dtype === 'F32' ? 4 : 2));
    const out = new Float32Array(n);
    const table = halfTable();
    for (let i = 0; i < n; i++) {
      if (dtype === 'F32') out[i] = view.getFloat32(4 * i, true);
      else if (dtype === 'F16') out[i] = table[view.getUint16(2 * i, true)];
      else out[i] = new Float32Array(new Uint32Array([view.getUint16(2 * i, true) << 16]).buffer)[0];
    }
    return out;
  }
  if (dtype === 'F32') {
    const at = u8.byteOffset + begin;
    if (at % 4 === 0) return new Float32Array(u8.buffer, at, n);
    return new Float32Array(copyBytes(u8, begin, 4 * n));
  }
  const src = words16(u8, begin, n);
  const out = new Float32Array(n);
  if (dtype === 'F16') {
    const table = halfTable();
    for (let i = 0; i < n; i++) out[i] = table[src[i]];
  } else {
    const bits = new Uint32Array(out.buffer);
    for (let i = 0; i < n; i++) bits[i] = src[i] << 16;
  }
  return out;
}

/**
 * Reads a safetensors file. F32, F16 and BF16 tensors come back as
 * Float32Arrays (F32 ones at a 4-aligned offset share memory with `bytes`);
 * tensors of other dtypes as { dtype, shape, unsupported: true }.
 * @param {ArrayBuffer | SharedArrayBuffer | Uint8Array} bytes  the file; a Node Buffer is a Uint8Array
 * @returns {SafetensorsFile}
 */
export function readSafetensors(bytes) {
  const u8 = toBytes(bytes);
  const { header, dataStart } = readHeader(u8);
  const dataLength = u8.length - dataStart;
  const metadata = checkMetadata(header.__metadata__);
  const entries = Object.entries(header)
    .filter(([name]) => name !== '__metadata__')
    .map(([name, entry]) => checkEntry(name, entry, dataLength));

  const ranges = entries.filter((e) => e.end > e.begin).sort((a, b) => a.begin - b.begin || a.end - b.end);
  for (let i = 1; i < ranges.length; i++) {
    const a = ranges[i - 1], b = ranges[i];
    if (b.begin < a.end) {
      throw new RangeError(`tensors '${a.name}' (data_offsets [${a.begin}, ${a.end}]) and ` +
        `'${b.name}' (data_offsets [${b.begin}, ${b.end}]) overlap`);
    }
  }

  /** @type {Map<string, SafetensorsTensor>} */
  const tensors = new Map();
  for (const { name, dtype, shape, begin, end } of entries) {
    if (FLOAT_DTYPES.includes(dtype)) {
      const data = decode(u8, dtype, dataStart + begin, (end - begin) / DTYPE_SIZES[dtype]);
      tensors.set(name, { dtype: /** @type {FloatDtype} */ (dtype), shape, data });
    } else {
      tensors.set(name, { dtype, shape, unsupported: true });
    }
  }
  return { tensors, metadata };
}

/**
 * Writes tensors as a safetensors file. The header is padded with spaces
 * to a multiple of 8 bytes, and the tensors are laid out F32 first (each in
 * the order given), so every tensor starts aligned to its element size.
 * F16 and BF16 are rounded to nearest, ties to even.
 * @param {Record<string, TensorToWrite> | Map<string, TensorToWrite>} tensors
 * @param {Record<string, string>} [metadata]  the header's __metadata__
 * @returns {Uint8Array}
 */
export function writeSafetensors(tensors, metadata) {
  if (tensors === null || typeof tensors !== 'object' || Array.isArray(tensors)) {
    throw new TypeError(`tensors must be an object or a Map of { dtype, shape, data }, got ${describe(tensors)}`);
  }
  const list = (tensors instanceof Map ? Array.from(tensors) : Object.entries(tensors)).map(([name, t], index) => {
    const what = `tensors['${name}']`;
    if (name === '__metadata__') throw new RangeError(`${what}: '__metadata__' is the header's metadata, not a tensor name`);
    if (t === null || typeof t !== 'object') throw new TypeError(`${what} must be an object { dtype, shape, data }, got ${describe(t)}`);
    // F32 unless said otherwise.
    const dtype = t.dtype ?? 'F32';
    if (!FLOAT_DTYPES.includes(dtype)) {
      throw new RangeError(`${what}.dtype must be 'F32', 'F16' or 'BF16', got ${describe(t.dtype)}`);
    }
    const shape = checkShape(`${what}.shape`, t.shape);
    if (!(t.data instanceof Float32Array)) throw new TypeError(`${what}.data must be a Float32Array, got ${describe(t.data)}`);
    if (t.data.length !== product(shape)) {
      throw new RangeError(`${what}.data must have length ${product(shape)} (shape ${showShape(shape)}), got length ${t.data.length}`);
    }
    return { name, dtype, shape, data: t.data, index };
  });
  if (metadata !== undefined) checkMetadata(metadata);
  list.sort((a, b) => DTYPE_SIZES[b.dtype] - DTYPE_SIZES[a.dtype] || a.index - b.index);

  /** @type {Record<string, unknown>} */
  const header = {};
  if (metadata !== undefined) header.__metadata__ = metadata;
  let offset = 0;
  for (const t of list) {
    const bytes = t.data.length * DTYPE_SIZES[t.dtype];
    header[t.name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  const json = new TextEncoder().encode(JSON.stringify(header));
  const headerLength = Math.ceil(json.length / 8) * 8;
  const out = new Uint8Array(8 + headerLength + offset);
  const view = new DataView(out.buffer);
  view.setUint32(0, headerLength % 2 ** 32, true);
  view.setUint32(4, Math.floor(headerLength / 2 ** 32), true);
  out.set(json, 8);
  out.fill(0x20, 8 + json.length, 8 + headerLength);

  let at = 8 + headerLength;
  for (const { dtype, data } of list) {
    if (dtype === 'F32') {
      if (LITTLE_ENDIAN) out.set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), at);
      else for (let i = 0; i < data.length; i++) view.setFloat32(at + 4 * i, data[i], true);
    } else {
      const bits = new Uint32Array(data.slice().buffer);
      const round = dtype === 'F16' ? float32BitsToHalf : float32BitsToBfloat16;
      if (LITTLE_ENDIAN) { // `at` is even: the 4-byte tensors come first
        const words = new Uint16Array(out.buffer, at, bits.length);
        for (let i = 0; i < bits.length; i++) words[i] = round(bits[i]);
      } else {
        for (let i = 0; i < bits.length; i++) view.setUint16(at + 2 * i, round(bits[i]), true);
      }
    }
    at += data.length * DTYPE_SIZES[dtype];
  }
  return out;
}
