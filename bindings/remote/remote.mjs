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
export const ARRAY = 1; // an Array, items encoded
export const OBJECT = 2; // a plain object, values encoded
export const HANDLE = 3; // an object that stays in the worker: { id, n (times sent), s (snapshot), f (callable) }
export const WRITE_BACK = 4; // (worker → page) the caller's argument array number n, new contents v

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

/** Arrays and plain objects, their items encoded by `f`; null for anything else. */
export function encodeContainer(value, f) {
  if (Array.isArray(value)) return { t: ARRAY, v: value.map((x, i) => f(x, i)) };
  if (typeof value === 'object' && isPlainObject(value)) {
    return { t: OBJECT, v: Object.fromEntries(Object.entries(value).map(([k, x]) => [k, f(x, k)])) };
  }
  return null;
}

/** The other way: an ARRAY or OBJECT wire value, its items decoded by `f`. */
export function decodeContainer(wire, f) {
  if (wire.t === ARRAY) return wire.v.map(f);
  return Object.fromEntries(Object.entries(wire.v).map(([k, x]) => [k, f(x)]));
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

const remotes = new Map();

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

  // Page → worker: copies of data; handles by id; nothing else.
  function encode(value, arrays, where) {
    if (proxies.has(value)) return { t: HANDLE, id: proxies.get(value) };
    if (isCloneable(value)) {
      if (ArrayBuffer.isView(value)) arrays.push(value);
      return { t: VALUE, v: value };
    }
    const container = encodeContainer(value,
      (x, key) => encode(x, arrays, typeof key === 'number' ? `${where}[${key}]` : `${where}.${key}`));
    if (container) return container;
    throw new TypeError(`worker mode: ${where} cannot be sent to the worker (${typeof value === 'function'
      ? 'a function' : 'an instance of a class'}): pass numbers, strings, typed arrays, plain objects and ` +
      'arrays of them, or objects the worker returned');
  }

  // Worker → page.
  function decode(wire, arrays) {
    switch (wire.t) {
      case VALUE: return wire.v;
      case ARRAY: case OBJECT: return decodeContainer(wire, (x) => decode(x, arrays));
      case WRITE_BACK: {
        const target = arrays[wire.n];
        target.set(wire.v);
        return target;
      }
      default: return handle(wire);
    }
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
    if (id !== 0) registry.register(proxy, id);
    return proxy;
  }

  function request(op, h, path, args) {
    if (closed) return Promise.reject(closed);
    const arrays = [];
    let wireArgs;
    try {
      wireArgs = args && args.map((a, i) => encode(a, arrays, `${describePath(path)}: argument ${i + 1}`));
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
    const target = callable ? function remote() {} : Object.create(null);
    return new Proxy(target, {
      get(_, key) {
        if (key === 'then') return undefined; // a handle is not a promise
        if (id === 0 && key === 'dispose') return dispose;
        if (id === 0 && key === Symbol.asyncDispose) return dispose;
        if (id === 0 && key === Symbol.dispose) return () => close(new TypeError(DISPOSED_MESSAGE));
        if (key === Symbol.toStringTag) return 'causal-attention worker handle';
        if (typeof key === 'symbol') return undefined;
        const snapshot = snapshots.get(id);
        if (snapshot && Object.hasOwn(snapshot, key)) return snapshot[key];
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
    return new Proxy(function remote() {}, {
      get(_, key) {
        if (key === 'then') {
          // Awaiting a property reads it (a copy, or a handle).
          return (resolve, reject) => request('get', id, path).then(resolve, reject);
        }
        if (typeof key === 'symbol') return undefined;
        return pathProxy(id, [...path, key]);
      },
      set(_, key) { throw assignError(key); },
      apply: (_, __, args) => request('call', id, path, args),
      construct: (_, args) => request('new', id, path, args),
    });
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
