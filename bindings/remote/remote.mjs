// Worker mode, the page's side: init({ worker: true }) starts a dedicated
// worker (worker.mjs in browsers, worker-node.mjs in Node) that runs the
// engine with init(), and returns a proxy of the same API whose calls return
// promises, so the calling thread never blocks on wasm. The protocol knows no
// method names: it forwards property reads, calls and `new` by path, so any
// API the runtime grows works through it unchanged (onnxruntime-web's
// env.wasm.proxy is the same idea for one fixed API).
//
// What crosses, and how (README "Worker mode" says the same for users):
// - Calls: `ca.attention(q, k, v, opts)`, `layer.forward(x, shape)`,
//   `ca.manualSeed(1)` return promises. `new ca.CausalAttention(...)` returns
//   a promise of the module.
// - Objects the worker creates or returns that are not plain data (module
//   instances, caches, the runtime itself, functions) stay in the worker; the
//   page gets a handle: a proxy whose methods return promises. The same
//   object always comes back as the same handle (`await layer.eval() === layer`).
//   A handle's primitive properties (numbers, strings, booleans) read
//   synchronously from a snapshot taken after every call made through it;
//   other properties are awaited: `await layer.W_query.weight`.
//   Assigning a property throws a TypeError: call a method instead.
// - Data (numbers, strings, plain objects and arrays, typed arrays) is
//   copied. Arguments are copied (the caller keeps its arrays); results are
//   copied in the worker and the copies transferred, so the page pays no copy.
//   An argument array the worker returns (an `out` option) is written back
//   into the caller's array, which the result then holds.
// - Errors arrive as the same class (TypeError, RangeError, ...) with the
//   same message.
// - `await ca.dispose()` disposes the runtime in the worker and terminates
//   the worker; every later call rejects. `ca[Symbol.dispose]()` terminates
//   at once. Handles the page no longer references are released in the
//   worker (FinalizationRegistry).

import { currentPlatform } from '../engine/loader.mjs';

// Wire tags, both directions.
export const VALUE = 0; // structured clone copies it as is
export const ARRAY = 1; // an Array: a row of the message's container table, items encoded
export const OBJECT = 2; // a plain object: a row of the table, [key, value] pairs encoded
export const HANDLE = 3; // an object that stays in the worker: { id, n (times sent), s (snapshot), f (callable) }
export const WRITE_BACK = 4; // (worker → page) the caller's argument array number n, new contents v
export const REF = 5; // a container: { i }, its row in the message's table
export const SYMBOL = 6; // a symbol: { v (description), g (Symbol.for key, or undefined) }

export const DISPOSED_MESSAGE = 'this causal-attention runtime has been disposed; call init() for a new one';

/** Plain data objects cross as copies; any other object stays behind a handle. */
export function isPlainObject(x) {
  const proto = Object.getPrototypeOf(x);
  return proto === Object.prototype || proto === null;
}

/** Values structured clone copies with their meaning intact. */
export function isCloneable(x) {
  if (x === null || (typeof x !== 'object' && typeof x !== 'function')) return typeof x !== 'symbol';
  return ArrayBuffer.isView(x) || x instanceof ArrayBuffer || x instanceof Date || x instanceof RegExp;
}

/**
 * A cloneable value as it can be posted: a view of a detached buffer (which
 * postMessage refuses with a DataCloneError) becomes an empty one of its
 * type, as the engine sees it locally (length 0); likewise a detached buffer.
 */
export function postable(x) {
  if (ArrayBuffer.isView(x) && x.buffer.byteLength === 0 && x.byteLength === 0) return new x.constructor(0);
  if (x instanceof ArrayBuffer && x.byteLength === 0) return new ArrayBuffer(0);
  return x;
}

/** A symbol on the wire: a fresh one with its description (registered ones stay registered). */
export const symbolToWire = (x) => ({ t: SYMBOL, v: x.description, g: Symbol.keyFor(x) });
export const symbolFromWire = ({ v, g }) => (g !== undefined ? Symbol.for(g) : Symbol(v));

/**
 * Encodes `root` for postMessage as { r: wire, c: table }: every Array and
 * plain object becomes one row of the table and is referred to by its row,
 * so shared and circular containers arrive shared and circular, and any
 * depth crosses (structured clone recurses and overflows the stack near
 * 10 000 levels; this loop keeps its own stack). `leaf(x, where)` encodes
 * anything else, or returns undefined for a container; `where()` gives the
 * keys from the root to the value, for an error message.
 */
export function encodeGraph(root, leaf) {
  const table = [];
  const rows = new Map(); // container → its row number
  const work = [];
  const where = (place) => () => {
    const keys = [];
    for (let p = place; p; p = p.parent) keys.unshift(p.key);
    return keys;
  };
  const ref = (x, place) => {
    if (typeof x === 'object' && x !== null && rows.has(x)) return { t: REF, i: rows.get(x) };
    const wire = leaf(x, where(place));
    if (wire !== undefined) return wire;
    const row = Array.isArray(x) ? { t: ARRAY, v: new Array(x.length) } : { t: OBJECT, v: [] };
    rows.set(x, table.length);
    table.push(row);
    work.push([x, row, place]);
    return { t: REF, i: table.length - 1 };
  };
  const r = ref(root, null);
  while (work.length) {
    const [x, row, place] = work.pop();
    if (row.t === ARRAY) {
      for (let i = 0; i < x.length; i++) row.v[i] = ref(x[i], { parent: place, key: i });
    } else {
      for (const [k, y] of Object.entries(x)) row.v.push([k, ref(y, { parent: place, key: k })]);
    }
  }
  return { r, c: table };
}

/** Whether encodeGraph encodes `x` as a container (an Array or a plain object). */
export const isContainer = (x) => Array.isArray(x) || (typeof x === 'object' && x !== null && isPlainObject(x));

/** The other way: the containers built first, then filled; `leaf(wire)` decodes the rest. */
export function decodeGraph({ r, c }, leaf) {
  const made = c.map((row) => (row.t === ARRAY ? new Array(row.v.length) : {}));
  const get = (wire) => (wire.t === REF ? made[wire.i] : leaf(wire));
  for (let i = 0; i < c.length; i++) {
    const { t, v } = c[i];
    const x = made[i];
    if (t === ARRAY) {
      for (let j = 0; j < v.length; j++) x[j] = get(v[j]);
    } else {
      // defineProperty, not assignment: an own '__proto__' key stays a key.
      for (const [k, w] of v) Object.defineProperty(x, k, { value: get(w), writable: true, enumerable: true, configurable: true });
    }
  }
  return get(r);
}

const ERRORS = { Error, TypeError, RangeError, SyntaxError, ReferenceError, EvalError, URIError };

export function errorToWire(error) {
  if (error instanceof Error) return { name: error.name, message: error.message, stack: error.stack };
  return { name: 'Error', message: String(error) };
}

function errorFromWire({ name, message }) {
  const error = new (ERRORS[name] ?? Error)(message);
  if (!ERRORS[name]) error.name = name;
  return error;
}

// Names that JS itself or common libraries read on any object and may call
// (JSON.stringify's toJSON, string coercion's toString and valueOf,
// Object.prototype's methods, the old util.inspect convention, jest's
// asymmetricMatch, React's $$typeof, DOM checks' nodeType): on a handle they
// answer as on a plain object (or function), here, and never start a remote
// call, which nobody would await and whose rejection would be unhandled.
const CONVENTIONAL = new Set([
  ...Object.getOwnPropertyNames(Object.prototype), 'toJSON', 'inspect', 'asymmetricMatch', '$$typeof', 'nodeType',
]);

const remotes = new Map();
const allHandles = new WeakSet(); // every runtime's handles: one from another runtime is refused by name
const unawaited = new WeakSet(); // property proxies (`layer.W_query` before await)

/** init({ worker: true, ... }): one worker per resolved options, shared like init()'s runtimes. */
export function initRemote(options) {
  const key = `${options.build}:${options.threads}:${options.gemmKernel}`;
  if (!remotes.has(key)) {
    const promise = connect(currentPlatform(), options, () => remotes.delete(key));
    remotes.set(key, promise);
    promise.catch(() => remotes.delete(key));
  }
  return remotes.get(key);
}

async function connect(platform, options, forget) {
  platform.check?.();
  const port = platform.apiWorker();
  const pending = new Map(); // request id → { resolve, reject, arrays }
  let nextId = 1;
  let closed = null; // the Error every call rejects with once the worker is gone
  let hello;
  const started = new Promise((resolve) => { hello = resolve; });

  // Handles: id → WeakRef(proxy); the count of times the worker sent each
  // id goes back with a release, so a handle in flight is never released.
  const live = new Map();
  const sentCount = new Map();
  const snapshots = new Map(); // id → primitive properties (read synchronously)
  const proxies = new WeakMap(); // proxy → id
  const registry = new FinalizationRegistry((id) => {
    if (live.get(id)?.deref() !== undefined || closed) return;
    live.delete(id);
    snapshots.delete(id);
    port.post({ op: 'release', h: id, n: sentCount.get(id) });
    sentCount.delete(id);
  });

  const keepAlive = () => (pending.size ? port.ref?.() : port.unref?.());

  function close(error) {
    if (closed) return;
    closed = error;
    forget();
    port.terminate();
    for (const { reject } of pending.values()) reject(error);
    pending.clear();
  }

  port.onMessage((message) => {
    if (message?.op === 'hello') {
      hello();
      return;
    }
    const request = pending.get(message?.id);
    if (!request) return;
    pending.delete(message.id);
    keepAlive();
    if (message.snapshots) {
      for (const [id, snapshot] of Object.entries(message.snapshots)) updateSnapshot(Number(id), snapshot);
    }
    if (message.ok) request.resolve(decode(message.value, request.arrays));
    else request.reject(errorFromWire(message.error));
  });
  let failWith;
  const failed = new Promise((_, reject) => { failWith = reject; });
  failed.catch(() => {});
  port.onError((reason) => {
    const error = new Error(`causal-attention: the worker ${port.where} failed: ${reason}. It ships in ` +
      'the package\'s dist/ (worker.mjs): a bundler emits it; without one serve ' +
      'node_modules/causal-attention/dist/ as static files (Content-Type text/javascript), allowed by ' +
      'the page\'s Content-Security-Policy (worker-src)');
    failWith(error);
    close(error);
  });

  function send(message, arrays = []) {
    if (closed) return Promise.reject(closed);
    const id = nextId++;
    return new Promise((resolve, reject) => {
      pending.set(id, { resolve, reject, arrays });
      keepAlive();
      try {
        port.post({ ...message, id });
      } catch (error) {
        pending.delete(id);
        keepAlive();
        reject(error);
      }
    });
  }

  // Page → worker: copies of data; handles by id; nothing else. A table of
  // containers (encodeGraph), so circular and deep arguments arrive as they
  // are and the engine answers as it does locally.
  function encodeArgs(args, arrays, path) {
    const describe = (keys) => `${describePath(path)}: argument ${keys[0] + 1}` +
      keys.slice(1).map((k) => (typeof k === 'number' ? `[${k}]` : `.${k}`)).join('');
    return encodeGraph(args, (value, where) => {
      if (proxies.has(value)) return { t: HANDLE, id: proxies.get(value) };
      if (isCloneable(value)) {
        if (!ArrayBuffer.isView(value)) return { t: VALUE, v: postable(value) };
        arrays.push(value);
        return { t: VALUE, v: postable(value), n: arrays.length - 1 };
      }
      if (typeof value === 'symbol') return symbolToWire(value);
      if (isContainer(value) && !allHandles.has(value)) return undefined;
      const what = allHandles.has(value)
        ? 'a handle of another worker-mode runtime (objects stay in the worker that made them)'
        : unawaited.has(value) ? 'a property of a worker object that was not awaited (await it first)'
          : typeof value === 'function' ? 'a function' : 'an instance of a class';
      throw new TypeError(`worker mode: ${describe(where())} cannot be sent to the worker (${what}): pass ` +
        'numbers, strings, typed arrays, plain objects and arrays of them, or objects this runtime returned');
    });
  }

  // Worker → page.
  function decode(wire, arrays) {
    return decodeGraph(wire, (leaf) => {
      switch (leaf.t) {
        case VALUE: return leaf.v;
        case SYMBOL: return symbolFromWire(leaf);
        case WRITE_BACK: {
          const target = arrays[leaf.n];
          target.set(leaf.v);
          return target;
        }
        default: return handle(leaf);
      }
    });
  }

  function updateSnapshot(id, snapshot) {
    if (live.has(id)) snapshots.set(id, snapshot);
  }

  function handle({ id, n, s, f }) {
    sentCount.set(id, n);
    const existing = live.get(id)?.deref();
    if (existing) {
      snapshots.set(id, s);
      return existing;
    }
    snapshots.set(id, s);
    const proxy = handleProxy(id, f);
    live.set(id, new WeakRef(proxy));
    proxies.set(proxy, id);
    allHandles.add(proxy);
    if (id !== 0) registry.register(proxy, id);
    return proxy;
  }

  function request(op, h, path, args) {
    if (closed) return Promise.reject(closed);
    const arrays = [];
    let wireArgs;
    try {
      wireArgs = args && encodeArgs(args, arrays, path);
    } catch (error) {
      return Promise.reject(error);
    }
    return send({ op, h, path, args: wireArgs }, arrays);
  }

  async function dispose() {
    if (closed) return;
    try {
      await request('call', 0, ['dispose'], []);
    } finally {
      close(new TypeError(DISPOSED_MESSAGE));
    }
  }

  const assignError = (key) => new TypeError(`worker mode: ${String(key)} cannot be assigned from the ` +
    'calling thread (the object lives in the worker); call one of its methods instead');

  function handleProxy(id, callable) {
    // A plain object (or function) underneath: what the conventional names
    // read when they are not forwarded.
    const target = callable ? function remote() {} : {};
    return new Proxy(target, {
      get(t, key, receiver) {
        if (key === 'then') return undefined; // a handle is not a promise
        if (id === 0 && key === 'dispose') return dispose;
        if (id === 0 && key === Symbol.asyncDispose) return dispose;
        if (id === 0 && key === Symbol.dispose) return () => close(new TypeError(DISPOSED_MESSAGE));
        if (key === Symbol.toStringTag) return 'causal-attention worker handle';
        if (typeof key === 'symbol') return undefined;
        const snapshot = snapshots.get(id);
        if (snapshot && Object.hasOwn(snapshot, key)) return snapshot[key];
        if (CONVENTIONAL.has(key)) return Reflect.get(t, key, receiver);
        return pathProxy(id, [key]);
      },
      has: (t, key) => (typeof key === 'string' && Object.hasOwn(snapshots.get(id) ?? {}, key)) ||
        Reflect.has(t, key),
      ownKeys: () => [...Object.keys(snapshots.get(id) ?? {}), ...(callable ? ['prototype'] : [])],
      getOwnPropertyDescriptor: (t, key) => {
        const snapshot = snapshots.get(id) ?? {};
        if (typeof key === 'string' && Object.hasOwn(snapshot, key)) {
          return { value: snapshot[key], enumerable: true, configurable: true, writable: false };
        }
        return Reflect.getOwnPropertyDescriptor(t, key);
      },
      set(_, key) { throw assignError(key); },
      defineProperty(_, key) { throw assignError(key); },
      deleteProperty(_, key) { throw assignError(key); },
      apply: (_, __, args) => request('call', id, [], args),
      construct: (_, args) => request('new', id, [], args),
    });
  }

  function pathProxy(id, path) {
    const proxy = new Proxy(function remote() {}, {
      get(t, key, receiver) {
        if (key === 'then') {
          // Awaiting a property reads it (a copy, or a handle).
          return (resolve, reject) => request('get', id, path).then(resolve, reject);
        }
        if (typeof key === 'symbol') return undefined;
        if (CONVENTIONAL.has(key)) return Reflect.get(t, key, receiver);
        return pathProxy(id, [...path, key]);
      },
      set(_, key) { throw assignError(key); },
      apply: (_, __, args) => request('call', id, path, args),
      construct: (_, args) => request('new', id, path, args),
    });
    unawaited.add(proxy);
    return proxy;
  }

  const { timeout } = options;
  let timer;
  const timedOut = new Promise((_, reject) => {
    if (Number.isFinite(timeout)) {
      timer = setTimeout(() => reject(new Error(`causal-attention: the worker ${port.where} did not start ` +
        `within ${timeout} ms. Check that it is served (the browser's network panel shows it) or raise ` +
        'init({ timeout })')), timeout);
    }
  });
  try {
    await Promise.race([started, timedOut, failed]);
    clearTimeout(timer);
    // The engine has its own bound (the same timeout) and always answers;
    // this one covers a worker that stops answering altogether.
    const again = new Promise((_, reject) => {
      if (Number.isFinite(timeout)) {
        timer = setTimeout(() => reject(new Error(`causal-attention: the worker ${port.where} loaded but ` +
          `did not answer within ${timeout} ms`)), timeout + 1000);
      }
    });
    return await Promise.race([
      send({ op: 'init', options: { build: options.build, threads: options.threads, timeout, gemmKernel: options.gemmKernel } }),
      again, failed]);
  } catch (error) {
    close(error);
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

/** `ca.attention`, `layer.W_query.forward`: a path for error messages. */
export function describePath(path) {
  return path.length ? path.join('.') : 'the handle';
}
