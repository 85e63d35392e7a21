// Worker mode's wire format, both sides' (remote.mjs the page's,
// remote-host.mjs the worker's): the tags of a value on the wire, a whole
// value as its root plus a table of the containers it reaches (so cycles,
// shared containers and any depth cross), symbols, errors, the messages.

// Wire tags, both directions.
export const VALUE = 0; // structured clone copies it as is
export const ARRAY = 1; // an Array: a row of the message's container table, items encoded
export const OBJECT = 2; // a plain object: a row of the table, [key, value] pairs encoded
export const HANDLE = 3; // an object that stays in the worker: { id, n (times sent), s (snapshot), f (callable) }
export const WRITE_BACK = 4; // (worker → page) the caller's argument array number n, new contents v
export const REF = 5; // a container: { i }, its row in the message's table
export const SYMBOL = 6; // a symbol: { v (description), g (Symbol.for key, or undefined) }

/**
 * A value on the wire (both directions; `id`: a handle's number in the
 * worker, `n`: times the worker sent it, `s`: its snapshot, `f`: callable;
 * a VALUE's `n`: the number of the caller's typed array, for WRITE_BACK).
 * @typedef {{ t: typeof VALUE, v: unknown, n?: number }
 *   | { t: typeof REF, i: number }
 *   | { t: typeof SYMBOL, v: string | undefined, g: string | undefined }
 *   | { t: typeof HANDLE, id: number, n?: number, s?: Record<string, unknown>, f?: boolean }
 *   | { t: typeof WRITE_BACK, n: number, v: ArrayBufferView }} Wire
 */

/**
 * A row of a message's container table: an Array's items, or a plain
 * object's [key, value] pairs.
 * @typedef {{ t: typeof ARRAY, v: Wire[] } | { t: typeof OBJECT, v: [string, Wire][] }} Row
 */

/**
 * A whole value: its root and the table of the containers it reaches.
 * @typedef {{ r: Wire, c: Row[] }} Graph
 */

/**
 * Page → worker. `h`: the handle the path starts from (0: the runtime).
 * @typedef {{ op: 'init', id: number, options: object }
 *   | { op: 'get' | 'call' | 'new', id: number, h: number, path: string[], args?: Graph }
 *   | { op: 'release', h: number, n: number | undefined }} Request
 */

/**
 * Worker → page: 'hello' once started, then one reply per request.
 * @typedef {{ op: 'hello', id?: undefined }
 *   | { op?: undefined, id: number, ok: true, value: Graph, snapshots?: Record<number, Record<string, unknown>> }
 *   | { op?: undefined, id: number, ok: false, error: { name: string, message: string, stack?: string },
 *       snapshots?: Record<number, Record<string, unknown>> }} Reply
 */

export const DISPOSED_MESSAGE = 'this causal-attention runtime has been disposed; call init() for a new one';

/**
 * Plain data objects cross as copies; any other object stays behind a handle.
 * @param {object} x
 */
export function isPlainObject(x) {
  const proto = Object.getPrototypeOf(x);
  return proto === Object.prototype || proto === null;
}

/**
 * Values structured clone copies with their meaning intact.
 * @param {unknown} x
 */
export function isCloneable(x) {
  if (x === null || (typeof x !== 'object' && typeof x !== 'function')) return typeof x !== 'symbol';
  return ArrayBuffer.isView(x) || x instanceof ArrayBuffer || x instanceof Date || x instanceof RegExp;
}

/**
 * A cloneable value as it can be posted: a view of a detached buffer (which
 * postMessage refuses with a DataCloneError) becomes an empty one of its
 * type, as the engine sees it locally (length 0); likewise a detached buffer.
 * @param {unknown} x
 */
export function postable(x) {
  if (ArrayBuffer.isView(x) && x.buffer.byteLength === 0 && x.byteLength === 0) {
    return new /** @type {new (length: number) => ArrayBufferView} */ (x.constructor)(0);
  }
  if (x instanceof ArrayBuffer && x.byteLength === 0) return new ArrayBuffer(0);
  return x;
}

/**
 * A symbol on the wire: a fresh one with its description (registered ones stay registered).
 * @param {symbol} x
 * @returns {Wire}
 */
export const symbolToWire = (x) => ({ t: SYMBOL, v: x.description, g: Symbol.keyFor(x) });
/** @param {{ v: string | undefined, g: string | undefined }} wire */
export const symbolFromWire = ({ v, g }) => (g !== undefined ? Symbol.for(g) : Symbol(v));

/**
 * Encodes `root` for postMessage: every Array and plain object becomes one
 * row of the table and is referred to by its row, so shared and circular
 * containers arrive shared and circular, and any depth crosses (structured
 * clone recurses and overflows the stack near 10 000 levels; this loop keeps
 * its own stack). `leaf(x, where)` encodes anything else, or returns
 * undefined for a container; `where()` gives the keys from the root to the
 * value, for an error message.
 * @param {unknown} root
 * @param {(x: unknown, where: () => (string | number)[]) => Wire | undefined} leaf
 * @returns {Graph}
 */
export function encodeGraph(root, leaf) {
  /** @type {Row[]} */
  const table = [];
  /** @type {Map<object, number>} */
  const rows = new Map(); // container → its row number
  /** @typedef {{ parent: Place, key: string | number } | null} Place */
  /** @type {[any, Row, Place][]} */
  const work = [];
  const where = (/** @type {Place} */ place) => () => {
    const keys = [];
    for (let p = place; p; p = p.parent) keys.unshift(p.key);
    return keys;
  };
  /**
   * @param {unknown} x
   * @param {Place} place
   * @returns {Wire}
   */
  const ref = (x, place) => {
    const row = typeof x === 'object' && x !== null ? rows.get(x) : undefined;
    if (row !== undefined) return { t: REF, i: row };
    const wire = leaf(x, where(place));
    if (wire !== undefined) return wire;
    /** @type {Row} */
    const added = Array.isArray(x) ? { t: ARRAY, v: new Array(x.length) } : { t: OBJECT, v: [] };
    rows.set(/** @type {object} */ (x), table.length);
    table.push(added);
    work.push([x, added, place]);
    return { t: REF, i: table.length - 1 };
  };
  const r = ref(root, null);
  for (let item = work.pop(); item; item = work.pop()) {
    const [x, row, place] = item;
    if (row.t === ARRAY) {
      for (let i = 0; i < x.length; i++) row.v[i] = ref(x[i], { parent: place, key: i });
    } else {
      for (const [k, y] of Object.entries(x)) row.v.push([k, ref(y, { parent: place, key: k })]);
    }
  }
  return { r, c: table };
}

/**
 * Whether encodeGraph encodes `x` as a container (an Array or a plain object).
 * @param {unknown} x
 */
export const isContainer = (x) => Array.isArray(x) || (typeof x === 'object' && x !== null && isPlainObject(x));

/**
 * The other way: the containers built first, then filled; `leaf(wire)` decodes the rest.
 * @param {Graph} graph
 * @param {(wire: Exclude<Wire, { t: typeof REF }>) => unknown} leaf
 * @returns {unknown}
 */
export function decodeGraph({ r, c }, leaf) {
  /** @type {any[]} */
  const made = c.map((row) => (row.t === ARRAY ? new Array(row.v.length) : {}));
  const get = (/** @type {Wire} */ wire) => (wire.t === REF ? made[wire.i] : leaf(wire));
  c.forEach((row, i) => {
    const x = made[i];
    if (row.t === ARRAY) {
      row.v.forEach((w, j) => { x[j] = get(w); });
    } else {
      // defineProperty, not assignment: an own '__proto__' key stays a key.
      for (const [k, w] of row.v) Object.defineProperty(x, k, { value: get(w), writable: true, enumerable: true, configurable: true });
    }
  });
  return get(r);
}

/** @type {Record<string, ErrorConstructor | undefined>} */
const ERRORS = { Error, TypeError, RangeError, SyntaxError, ReferenceError, EvalError, URIError };

/** @param {unknown} error */
export function errorToWire(error) {
  if (error instanceof Error) return { name: error.name, message: error.message, stack: error.stack };
  return { name: 'Error', message: String(error) };
}

/** @param {{ name: string, message: string }} error */
export function errorFromWire({ name, message }) {
  const error = new (ERRORS[name] ?? Error)(message);
  if (!ERRORS[name]) error.name = name;
  return error;
}

/**
 * `ca.attention`, `layer.W_query.forward`: a path for error messages.
 * @param {string[]} path
 */
export function describePath(path) {
  return path.length ? path.join('.') : 'the handle';
}
