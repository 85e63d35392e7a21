// Worker mode, the page's side: init({ worker: true }) starts a dedicated
// worker (worker.mjs in browsers, worker-node.mjs in Node) that runs the
// engine with init(), and returns a proxy of the same API whose calls return
// promises, so the calling thread never blocks on wasm. The protocol knows no
// method names: it forwards property reads, calls and `new` by path, so any
// API the runtime grows works through it unchanged (onnxruntime-web's
// env.wasm.proxy is the same idea for one fixed API).
//
// What users see (handles, snapshots, copies, write-back, errors, disposal)
// is documented once, at `RemoteRuntime` (index.d.ts) and `Remote`
// (handles.d.ts). Here:
// handles are ids into the worker's table (remote-host.mjs); the page keeps
// one proxy per id (WeakRef) so the same object is the same handle, and a
// FinalizationRegistry releases ids the page dropped. A release carries how
// many times the worker had sent the id, so one sent again meanwhile is kept.
// Arguments travel as structured-clone copies; argument arrays are listed so
// a result the worker returns as WRITE_BACK lands in the caller's own array.

import { currentPlatform } from '../engine/loader.mjs';

/** @import { DistributiveOmit, Platform } from '../platform.d.ts' */
/** @import { RemoteRuntime } from '../index.d.ts' */

// Wire tags, both directions.
export const VALUE = 0; // structured clone copies it as is
export const ARRAY = 1; // an Array, items encoded
export const OBJECT = 2; // a plain object, values encoded
export const HANDLE = 3; // an object that stays in the worker: { id, n (times sent), s (snapshot), f (callable) }
export const WRITE_BACK = 4; // (worker → page) the caller's argument array number n, new contents v

/**
 * A value on the wire (both directions; `id`: a handle's number in the
 * worker, `n`: times the worker sent it, `s`: its snapshot, `f`: callable).
 * @typedef {{ t: typeof VALUE, v: unknown }
 *   | { t: typeof ARRAY, v: Wire[] }
 *   | { t: typeof OBJECT, v: Record<string, Wire> }
 *   | { t: typeof HANDLE, id: number, n?: number, s?: Record<string, unknown>, f?: boolean }
 *   | { t: typeof WRITE_BACK, n: number, v: ArrayBufferView }} Wire
 */

/**
 * Page → worker. `h`: the handle the path starts from (0: the runtime).
 * @typedef {{ op: 'init', id: number, options: object }
 *   | { op: 'get' | 'call' | 'new', id: number, h: number, path: string[], args?: Wire[] }
 *   | { op: 'release', h: number, n: number | undefined }} Request
 */

/**
 * Worker → page: 'hello' once started, then one reply per request.
 * @typedef {{ op: 'hello', id?: undefined }
 *   | { op?: undefined, id: number, ok: true, value: Wire, snapshots?: Record<number, Record<string, unknown>> }
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
 * Arrays and plain objects, their items encoded by `f`; null for anything else.
 * @param {unknown} value
 * @param {(item: unknown, key: number | string) => Wire} f
 * @returns {Wire | null}
 */
export function encodeContainer(value, f) {
  if (Array.isArray(value)) return { t: ARRAY, v: value.map((x, i) => f(x, i)) };
  if (typeof value === 'object' && value !== null && isPlainObject(value)) {
    return { t: OBJECT, v: Object.fromEntries(Object.entries(value).map(([k, x]) => [k, f(x, k)])) };
  }
  return null;
}

/**
 * The other way: an ARRAY or OBJECT wire value, its items decoded by `f`.
 * @param {Extract<Wire, { t: typeof ARRAY | typeof OBJECT }>} wire
 * @param {(item: Wire) => unknown} f
 */
export function decodeContainer(wire, f) {
  if (wire.t === ARRAY) return wire.v.map((x) => f(x));
  return Object.fromEntries(Object.entries(wire.v).map(([k, x]) => [k, f(x)]));
}

/** @type {Record<string, ErrorConstructor | undefined>} */
const ERRORS = { Error, TypeError, RangeError, SyntaxError, ReferenceError, EvalError, URIError };

/** @param {unknown} error */
export function errorToWire(error) {
  if (error instanceof Error) return { name: error.name, message: error.message, stack: error.stack };
  return { name: 'Error', message: String(error) };
}

/** @param {{ name: string, message: string }} error */
function errorFromWire({ name, message }) {
  const error = new (ERRORS[name] ?? Error)(message);
  if (!ERRORS[name]) error.name = name;
  return error;
}

/**
 * init's options once resolved.
 * @typedef {{ build: 'auto' | 'single' | 'threads', threads: 'auto' | number, timeout: number,
 *   gemmKernel: 'auto' | 'simd128' }} RemoteOptions
 */

/** @type {Map<string, Promise<RemoteRuntime>>} */
const remotes = new Map();

/**
 * init({ worker: true, ... }): one worker per resolved options, shared like init()'s runtimes.
 * @param {RemoteOptions} options
 * @returns {Promise<RemoteRuntime>}
 */
export function initRemote(options) {
  const key = `${options.build}:${options.threads}:${options.gemmKernel}`;
  if (!remotes.has(key)) {
    const promise = connect(currentPlatform(), options, () => remotes.delete(key));
    remotes.set(key, promise);
    promise.catch(() => remotes.delete(key));
  }
  return /** @type {Promise<RemoteRuntime>} */ (remotes.get(key));
}

/**
 * Starts the worker and resolves to the runtime's handle (id 0).
 * @param {Platform} platform
 * @param {RemoteOptions} options
 * @param {() => void} forget
 * @returns {Promise<RemoteRuntime>}
 */
async function connect(platform, options, forget) {
  platform.check?.();
  const port = platform.apiWorker();
  /** @type {Map<number, { resolve(value: unknown): void, reject(error: Error): void, arrays: ArrayBufferView[] }>} */
  const pending = new Map(); // request id → { resolve, reject, arrays }
  let nextId = 1;
  /** @type {Error | null} */
  let closed = null; // the Error every call rejects with once the worker is gone
  /** @type {() => void} */
  let hello = () => {};
  const started = new Promise((resolve) => { hello = () => resolve(undefined); });

  // Handles: id → WeakRef(proxy); the count of times the worker sent each
  // id goes back with a release, so a handle in flight is never released.
  /** @type {Map<number, WeakRef<object>>} */
  const live = new Map();
  /** @type {Map<number, number | undefined>} */
  const sentCount = new Map();
  /** @type {Map<number, Record<string, unknown> | undefined>} */
  const snapshots = new Map(); // id → primitive properties (read synchronously)
  /** @type {WeakMap<object, number>} */
  const proxies = new WeakMap(); // proxy → id
  const registry = new FinalizationRegistry((/** @type {number} */ id) => {
    if (live.get(id)?.deref() !== undefined || closed) return;
    live.delete(id);
    snapshots.delete(id);
    port.post({ op: 'release', h: id, n: sentCount.get(id) });
    sentCount.delete(id);
  });

  const keepAlive = () => (pending.size ? port.ref?.() : port.unref?.());

  /** @param {Error} error */
  function close(error) {
    if (closed) return;
    closed = error;
    forget();
    port.terminate();
    for (const { reject } of pending.values()) reject(error);
    pending.clear();
  }

  port.onMessage((/** @type {Reply} */ message) => {
    if (message?.op === 'hello') {
      hello();
      return;
    }
    const request = pending.get(/** @type {number} */ (message?.id));
    if (!request) return;
    pending.delete(message.id);
    keepAlive();
    if (message.snapshots) {
      for (const [id, snapshot] of Object.entries(message.snapshots)) updateSnapshot(Number(id), snapshot);
    }
    if (message.ok === true) request.resolve(decode(message.value, request.arrays));
    else request.reject(errorFromWire(message.error));
  });
  /** @type {(error: Error) => void} */
  let failWith = () => {};
  /** @type {Promise<never>} */
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

  /**
   * @param {DistributiveOmit<Request, 'id'>} message
   * @param {ArrayBufferView[]} [arrays]
   * @returns {Promise<any>}
   */
  function send(message, arrays = []) {
    if (closed) return Promise.reject(closed);
    const id = nextId++;
    return new Promise((resolve, reject) => {
      pending.set(id, { resolve, reject, arrays });
      keepAlive();
      try {
        port.post(/** @type {Request} */ ({ ...message, id }));
      } catch (error) {
        pending.delete(id);
        keepAlive();
        reject(error);
      }
    });
  }

  /**
   * Page → worker: copies of data; handles by id; nothing else.
   * @param {unknown} value
   * @param {ArrayBufferView[]} arrays
   * @param {string} where
   * @returns {Wire}
   */
  function encode(value, arrays, where) {
    const id = typeof value === 'object' || typeof value === 'function' ? proxies.get(/** @type {object} */ (value)) : undefined;
    if (id !== undefined) return { t: HANDLE, id };
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

  /**
   * Worker → page.
   * @param {Wire} wire
   * @param {ArrayBufferView[]} arrays
   * @returns {unknown}
   */
  function decode(wire, arrays) {
    switch (wire.t) {
      case VALUE: return wire.v;
      case ARRAY: case OBJECT: return decodeContainer(wire, (x) => decode(x, arrays));
      case WRITE_BACK: {
        const target = /** @type {Float32Array} */ (arrays[wire.n]);
        target.set(/** @type {Float32Array} */ (wire.v));
        return target;
      }
      default: return handle(wire);
    }
  }

  /**
   * @param {number} id
   * @param {Record<string, unknown>} snapshot
   */
  function updateSnapshot(id, snapshot) {
    if (live.has(id)) snapshots.set(id, snapshot);
  }

  /** @param {Extract<Wire, { t: typeof HANDLE }>} wire */
  function handle({ id, n, s, f }) {
    sentCount.set(id, n);
    const existing = live.get(id)?.deref();
    if (existing) {
      snapshots.set(id, s);
      return existing;
    }
    snapshots.set(id, s);
    const proxy = handleProxy(id, f ?? false);
    live.set(id, new WeakRef(proxy));
    proxies.set(proxy, id);
    if (id !== 0) registry.register(proxy, id);
    return proxy;
  }

  /**
   * @param {'get' | 'call' | 'new'} op
   * @param {number} h
   * @param {string[]} path
   * @param {unknown[]} [args]
   */
  function request(op, h, path, args) {
    if (closed) return Promise.reject(closed);
    /** @type {ArrayBufferView[]} */
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

  const assignError = (/** @type {string | symbol} */ key) => new TypeError(`worker mode: ${String(key)} cannot be assigned from the ` +
    'calling thread (the object lives in the worker); call one of its methods instead');

  /**
   * @param {number} id
   * @param {boolean} callable
   */
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

  /**
   * @param {number} id
   * @param {string[]} path
   * @returns {object}
   */
  function pathProxy(id, path) {
    return new Proxy(function remote() {}, {
      get(_, key) {
        if (key === 'then') {
          // Awaiting a property reads it (a copy, or a handle).
          return (/** @type {(value: unknown) => void} */ resolve, /** @type {(error: Error) => void} */ reject) =>
            request('get', id, path).then(resolve, reject);
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
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer;
  /** @type {Promise<never>} */
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
    /** @type {Promise<never>} */
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

/**
 * `ca.attention`, `layer.W_query.forward`: a path for error messages.
 * @param {string[]} path
 */
export function describePath(path) {
  return path.length ? path.join('.') : 'the handle';
}
