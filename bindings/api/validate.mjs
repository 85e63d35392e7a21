// Argument checks shared by every public function. Each throws a TypeError
// (wrong kind of value) or RangeError (right kind, wrong value) whose message
// names the argument and gives the expected and the actual value. Nothing
// here touches wasm: callers validate everything before the first wasm call.


/**
 * A short description of any value for error messages.
 * @param {unknown} value
 * @returns {string}
 */
export function describe(value) {
  if (value === null) return 'null';
  if (value === undefined) return 'undefined';
  if (typeof value === 'string') {
    const s = value.length > 40 ? `${value.slice(0, 40)}…` : value;
    return `the string ${JSON.stringify(s)}`;
  }
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'number') return Object.is(value, -0) ? '-0' : String(value);
  if (typeof value === 'boolean' || typeof value === 'symbol') return String(value);
  if (typeof value === 'function') return 'a function';
  if (Array.isArray(value)) return `an Array of length ${value.length}`;
  if (ArrayBuffer.isView(value)) {
    const length = /** @type {{ length?: number }} */ (value).length ?? value.byteLength;
    return `${article(value.constructor.name)} of length ${length}`;
  }
  const name = value.constructor?.name;
  return name && name !== 'Object' ? article(name) : 'an object';
}

// 'an Int32Array', 'a Uint8Array' (said "you-int").
const article = (/** @type {string} */ noun) => `${/^(?:[AEIO]|U(?!int))/i.test(noun) ? 'an' : 'a'} ${noun}`;

/**
 * @param {string} name
 * @param {unknown} value
 * @returns {Float32Array}
 */
function checkFloat32Array(name, value) {
  if (!(value instanceof Float32Array)) {
    throw new TypeError(`${name} must be a Float32Array, got ${describe(value)}`);
  }
  return value;
}

/**
 * A Float32Array of exactly `length` elements; `how` explains the length.
 * @param {string} name
 * @param {unknown} value
 * @param {number} length
 * @param {string} how
 * @returns {Float32Array}
 */
export function checkTensor(name, value, length, how) {
  const tensor = checkFloat32Array(name, value);
  checkCount(name, length, how);
  if (tensor.length !== length) {
    throw new RangeError(
      `${name} must have length ${length} (${how}), got length ${tensor.length}`);
  }
  return tensor;
}

/**
 * A length that product() could not give exactly (Infinity: more than
 * 2^53 elements) is named by its sizes, not as a number no array has.
 * @param {string} name
 * @param {number} length
 * @param {string} how  the sizes it is the product of
 */
export function checkCount(name, length, how) {
  if (!Number.isSafeInteger(length)) {
    throw new RangeError(`${name} would need ${how} elements, more than 2^53: no array can be that long`);
  }
}

/**
 * Class or token indices: an Int32Array, a Uint32Array or an Array of
 * integers, each in [0, count) or equal to `allowed` (e.g. an ignore
 * index). Returns them as a new Int32Array.
 * @param {string} name
 * @param {unknown} value
 * @param {number} count
 * @param {number} [allowed]
 * @returns {Int32Array}
 */
export function checkIndices(name, value, count, allowed) {
  const ok = value instanceof Int32Array || value instanceof Uint32Array || Array.isArray(value);
  if (!ok) {
    throw new TypeError(`${name} must be an Int32Array, a Uint32Array or an Array of integers, got ${describe(value)}`);
  }
  const ids = new Int32Array(value.length);
  for (let i = 0; i < value.length; i++) {
    const id = value[i];
    if (!Number.isInteger(id) || ((id < 0 || id >= count) && id !== allowed)) {
      const also = allowed === undefined ? '' : ` (or ${allowed})`;
      const Err = typeof id === 'number' ? RangeError : TypeError;
      throw new Err(`${name}[${i}] must be an integer in [0, ${count})${also}, got ${describe(id)}`);
    }
    ids[i] = id;
  }
  return ids;
}

/**
 * An integer >= min (safe integer range).
 * @param {string} name
 * @param {unknown} value
 * @returns {number}
 */
export function checkInteger(name, value, min = 1) {
  if (typeof value !== 'number') {
    throw new TypeError(`${name} must be an integer >= ${min}, got ${describe(value)}`);
  }
  if (!Number.isSafeInteger(value) || value < min) {
    throw new RangeError(`${name} must be an integer >= ${min}, got ${describe(value)}`);
  }
  return value;
}

/**
 * @param {string} name
 * @param {unknown} value
 * @returns {boolean}
 */
export function checkBoolean(name, value) {
  if (typeof value !== 'boolean') {
    throw new TypeError(`${name} must be true or false, got ${describe(value)}`);
  }
  return value;
}

/**
 * @param {string} name
 * @param {unknown} value
 * @returns {number}
 */
export function checkFinite(name, value) {
  if (typeof value !== 'number') {
    throw new TypeError(`${name} must be a finite number, got ${describe(value)}`);
  }
  if (!Number.isFinite(value)) {
    throw new RangeError(`${name} must be a finite number, got ${describe(value)}`);
  }
  return value;
}

/**
 * Dropout probability in [0, 1).
 * @param {string} name
 * @param {unknown} value
 * @returns {number}
 */
export function checkProbability(name, value) {
  if (typeof value !== 'number') {
    throw new TypeError(`${name} must be a number in [0, 1), got ${describe(value)}`);
  }
  if (!(value >= 0 && value < 1)) {
    throw new RangeError(`${name} must be a number in [0, 1), got ${describe(value)}`);
  }
  return value;
}

/**
 * One of a fixed set of values (compared with ===).
 * @template T
 * @param {string} name
 * @param {unknown} value
 * @param {readonly T[]} allowed
 * @returns {T}
 */
export function checkOneOf(name, value, allowed) {
  if (!allowed.includes(/** @type {T} */ (value))) {
    const list = allowed.map((a) => (typeof a === 'string' ? `'${a}'` : String(a))).join(', ');
    const Err = allowed.some((a) => typeof a === typeof value) ? RangeError : TypeError;
    throw new Err(`${name} must be one of ${list}, got ${describe(value)}`);
  }
  return /** @type {T} */ (value);
}

const TWO_64 = 1n << 64n;

/**
 * A seed: a non-negative safe integer or a BigInt below 2^64. Returns the
 * two 32-bit halves as numbers, [lo, hi].
 * @param {string} name
 * @param {unknown} value
 * @returns {[number, number]}
 */
export function checkSeed(name, value) {
  let big;
  if (typeof value === 'bigint') {
    big = value;
  } else if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) {
      throw new RangeError(
        `${name} must be an integer in [0, 2^53) or a BigInt in [0, 2^64), got ${describe(value)}`);
    }
    big = BigInt(value);
  } else {
    throw new TypeError(
      `${name} must be an integer or a BigInt, got ${describe(value)}`);
  }
  if (big < 0n || big >= TWO_64) {
    throw new RangeError(`${name} must be in [0, 2^64), got ${describe(value)}`);
  }
  return [Number(big & 0xffffffffn), Number(big >> 32n)];
}

/**
 * Rejects option names outside `known` (typos would otherwise be ignored).
 * Returns the options, `{}` for undefined; their values are still unchecked.
 * @template {object} T
 * @param {string} name
 * @param {T | undefined} options
 * @param {readonly string[]} known
 * @returns {Partial<T>}
 */
export function checkOptionNames(name, options, known) {
  if (options === undefined) return {};
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new TypeError(`${name} must be an options object, got ${describe(options)}`);
  }
  for (const key of Object.keys(options)) {
    if (!known.includes(key)) {
      throw new TypeError(
        `${name} has an unknown option '${key}'; known options: ${known.join(', ')}`);
    }
  }
  return options;
}

/**
 * A shape: an Array of minDims..maxDims integers >= 1.
 * @param {string} name
 * @param {unknown} shape
 * @param {number} minDims
 * @param {number} maxDims
 * @returns {number[]}
 */
export function checkShape(name, shape, minDims, maxDims) {
  if (!Array.isArray(shape)) {
    throw new TypeError(`${name} must be an Array of ${minDims}–${maxDims} integers, got ${describe(shape)}`);
  }
  if (shape.length < minDims || shape.length > maxDims) {
    throw new RangeError(`${name} must have ${minDims === maxDims ? minDims : `${minDims} to ${maxDims}`} dimensions, got ${shape.length}`);
  }
  shape.forEach((d, i) => checkInteger(`${name}[${i}]`, d));
  return shape;
}

/**
 * Two output arrays must not share memory: each is written whole, and the
 * second write would replace what the first holds.
 * @param {string} nameA
 * @param {ArrayBufferView} a
 * @param {string} nameB
 * @param {ArrayBufferView} b
 */
export function checkDisjoint(nameA, a, nameB, b) {
  if (a.buffer !== b.buffer) return;
  const aEnd = a.byteOffset + a.byteLength;
  const bEnd = b.byteOffset + b.byteLength;
  if (a.byteOffset < bEnd && b.byteOffset < aEnd) {
    throw new RangeError(`${nameA} and ${nameB} must not share memory: ${nameA} covers bytes ` +
      `[${a.byteOffset}, ${aEnd}) and ${nameB} bytes [${b.byteOffset}, ${bEnd}) of the same buffer`);
  }
}

/**
 * Grouped-query attention: heads must be a multiple of kvHeads (query head h
 * reads KV head ⌊h / (heads / kvHeads)⌋). `rule` starts the message.
 * @param {string} rule
 * @param {number} heads
 * @param {number} kvHeads
 */
export function checkKvGroups(rule, heads, kvHeads) {
  if (heads % kvHeads !== 0) {
    throw new RangeError(`${rule}, got heads ${heads} and kvHeads ${kvHeads}`);
  }
}

/**
 * A head mask (Hugging Face's head_mask): a Float32Array [heads] or
 * [batch, heads] of finite factors, one per head's output. Returns a copy
 * (a module keeps it for its backward), or null when left out.
 * @param {string} name
 * @param {unknown} value
 * @param {number} batch
 * @param {number} heads
 * @returns {Float32Array | null}
 */
export function checkHeadMask(name, value, batch, heads) {
  if (value === undefined || value === null) return null;
  const mask = checkFloat32Array(name, value);
  if (mask.length !== heads && mask.length !== batch * heads) {
    throw new RangeError(`${name} must have length ${heads} ([heads]) or ${batch * heads} ` +
      `([batch ${batch}, heads ${heads}]), got length ${mask.length}`);
  }
  const bad = mask.findIndex((f) => !Number.isFinite(f));
  if (bad >= 0) throw new RangeError(`${name}[${bad}] must be finite, got ${mask[bad]}`);
  return mask.slice();
}

/**
 * A softcap: a finite number > 0 that stays so as a float32.
 * @param {string} name
 * @param {unknown} value
 * @returns {number}
 */
export function checkSoftcap(name, value) {
  if (typeof value !== 'number') {
    throw new TypeError(`${name} must be a finite number > 0, got ${describe(value)}`);
  }
  if (!(value > 0 && Number.isFinite(Math.fround(value)) && Math.fround(value) > 0)) {
    throw new RangeError(`${name} must be a finite number > 0 (a float32), got ${describe(value)}`);
  }
  return value;
}
