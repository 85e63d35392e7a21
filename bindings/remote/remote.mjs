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
// One worker per resolved options; each init({ worker: true }) opens a
// runtime of its own in it (an 'init' request: the worker's init() gives a
// new runtime each time), and the last runtime's dispose() terminates it.

import {
  DISPOSED_MESSAGE, HANDLE, SYMBOL, VALUE, WRITE_BACK, decodeGraph, describePath, encodeGraph, errorFromWire,
  isCloneable, isContainer, postable, symbolFromWire, symbolToWire,
} from './wire.mjs';

/** @import { Platform } from '../engine/platform.d.ts' */

/**
 * Omit over each member of a union (the requests before their id).
 * @template T
 * @template {PropertyKey} K
 * @typedef {T extends unknown ? Omit<T, K> : never} DistributiveOmit
 */
/** @import { Graph, Reply, Request, Wire } from './wire.mjs' */

/**
 * init's options once resolved.
 * @typedef {{ build: 'auto' | 'single' | 'threads', threads: 'auto' | number, timeout: number,
 *   gemmKernel: 'auto' | 'simd128' }} RemoteOptions
 */

// Names that JS itself or common libraries read on any object and may call
// (JSON.stringify's toJSON, string coercion's toString and valueOf,
// Object.prototype's methods, the old util.inspect convention, jest's
// asymmetricMatch, React's $$typeof, DOM checks' nodeType): on a handle they
// answer as on a plain object (or function), here, and never start a remote
// call, which nobody would await and whose rejection would be unhandled.
/** @type {Set<string | symbol>} */
const CONVENTIONAL = new Set([
  ...Object.getOwnPropertyNames(Object.prototype), 'toJSON', 'inspect', 'asymmetricMatch', '$$typeof', 'nodeType',
]);

/**
 * The runtime's proxy: what users see as index.d.ts's RemoteRuntime (index.mjs
 * gives it that type; remote/ forwards by name and needs none).
 * @typedef {object} RuntimeProxy
 */

/**
 * A started worker: open() asks it for a runtime of its own (null once the
 * worker is closing: start another).
 * @typedef {{ open(): Promise<RuntimeProxy | null> }} Connection
 */

/** @type {Map<string, Promise<Connection>>} */
const remotes = new Map();
/** @type {WeakSet<object>} */
const allHandles = new WeakSet(); // every runtime's handles: one from another runtime is refused by name
/** @type {WeakSet<object>} */
const unawaited = new WeakSet(); // property proxies (`layer.W_query` before await)

/**
 * init({ worker: true, ... }): a runtime of its own (its own generator and
 * lifetime, as init() gives locally) in the worker of these resolved
 * options, which the runtimes share; the last one's dispose() terminates it.
 * @param {Platform} platform starts the worker
 * @param {RemoteOptions} options
 * @returns {Promise<RuntimeProxy>}
 */
export async function initRemote(platform, options) {
  const key = `${options.build}:${options.threads}:${options.gemmKernel}`;
  for (;;) {
    let promise = remotes.get(key);
    if (!promise) {
      /** @type {Promise<Connection> | undefined} */
      let started;
      // Forgets this worker only: by the time it closes, a later init() may
      // have started the next one under the same key.
      const forget = () => {
        if (remotes.get(key) === started) remotes.delete(key);
      };
      started = connect(platform, options, forget);
      remotes.set(key, started);
      started.catch(forget);
      promise = started;
    }
    const runtime = await (await promise).open();
    if (runtime) return runtime;
  }
}

/**
 * Starts the worker and resolves to its Connection.
 * @param {Platform} platform
 * @param {RemoteOptions} options
 * @param {() => void} forget
 * @returns {Promise<Connection>}
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
   * Page → worker: copies of data; handles by id; nothing else. A table of
   * containers (encodeGraph), so circular and deep arguments arrive as they
   * are and the engine answers as it does locally.
   * @param {unknown[]} args
   * @param {ArrayBufferView[]} arrays
   * @param {string[]} path
   * @returns {Graph}
   */
  function encodeArgs(args, arrays, path) {
    const describe = (/** @type {(string | number)[]} */ keys) => `${describePath(path)}: argument ${Number(keys[0]) + 1}` +
      keys.slice(1).map((k) => (typeof k === 'number' ? `[${k}]` : `.${k}`)).join('');
    return encodeGraph(args, (value, where) => {
      const isObject = (typeof value === 'object' && value !== null) || typeof value === 'function';
      const id = isObject ? proxies.get(/** @type {object} */ (value)) : undefined;
      if (id !== undefined) return { t: HANDLE, id };
      if (isCloneable(value)) {
        if (!ArrayBuffer.isView(value)) return { t: VALUE, v: postable(value) };
        arrays.push(value);
        return { t: VALUE, v: postable(value), n: arrays.length - 1 };
      }
      if (typeof value === 'symbol') return symbolToWire(value);
      const foreign = isObject && allHandles.has(/** @type {object} */ (value));
      if (isContainer(value) && !foreign) return undefined;
      const what = foreign
        ? 'a handle of another worker-mode runtime (objects stay in the worker that made them)'
        : isObject && unawaited.has(/** @type {object} */ (value))
          ? 'a property of a worker object that was not awaited (await it first)'
          : typeof value === 'function' ? 'a function' : 'an instance of a class';
      throw new TypeError(`worker mode: ${describe(where())} cannot be sent to the worker (${what}): pass ` +
        'numbers, strings, typed arrays, plain objects and arrays of them, or objects this runtime returned');
    });
  }

  /**
   * Worker → page.
   * @param {Graph} graph
   * @param {ArrayBufferView[]} arrays
   * @returns {unknown}
   */
  function decode(graph, arrays) {
    return decodeGraph(graph, (leaf) => {
      switch (leaf.t) {
        case VALUE: return leaf.v;
        case SYMBOL: return symbolFromWire(leaf);
        case WRITE_BACK: {
          const target = /** @type {Float32Array} */ (arrays[leaf.n]);
          target.set(/** @type {Float32Array} */ (leaf.v));
          return target;
        }
        default: return handle(leaf);
      }
    });
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
    allHandles.add(proxy);
    registry.register(proxy, id, proxy);
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
      wireArgs = args && encodeArgs(args, arrays, path);
    } catch (error) {
      return Promise.reject(error);
    }
    return send({ op, h, path, args: wireArgs }, arrays);
  }

  // Runtimes: each open() makes one in the worker (its handle's id in
  // runtimeIds); the worker lives while any is not disposed.
  /** @type {Set<number>} */
  const runtimeIds = new Set();
  /** @type {Set<number>} */
  const disposedIds = new Set();
  let runtimeCount = 0;
  let closing = false;

  /**
   * Disposes runtime `id` in the worker; the last one's dispose terminates
   * the worker.
   * @param {number} id
   */
  async function disposeRuntime(id) {
    if (closed || disposedIds.has(id)) return;
    disposedIds.add(id);
    const last = --runtimeCount === 0;
    if (last) {
      // From now on init() starts a new worker instead of opening this one.
      closing = true;
      forget();
    }
    try {
      await request('call', id, ['dispose'], []);
    } finally {
      if (last) close(new TypeError(DISPOSED_MESSAGE));
    }
  }

  /**
   * [Symbol.dispose]: terminates the worker at once when no other runtime
   * shares it; otherwise disposes this runtime in the worker.
   * @param {number} id
   */
  function disposeNow(id) {
    if (closed || disposedIds.has(id)) return;
    if (runtimeCount > 1) {
      disposeRuntime(id).catch(() => {});
      return;
    }
    disposedIds.add(id);
    runtimeCount = 0;
    closing = true;
    close(new TypeError(DISPOSED_MESSAGE));
  }

  const assignError = (/** @type {string | symbol} */ key) => new TypeError(`worker mode: ${String(key)} cannot be assigned from the ` +
    'calling thread (the object lives in the worker); call one of its methods instead');

  /**
   * @param {number} id
   * @param {boolean} callable
   */
  function handleProxy(id, callable) {
    // A plain object (or function) underneath: what the conventional names
    // read when they are not forwarded.
    const target = callable ? function remote() {} : {};
    return new Proxy(target, {
      get(t, key, receiver) {
        if (key === 'then') return undefined; // a handle is not a promise
        if (runtimeIds.has(id)) {
          if (key === 'dispose' || key === Symbol.asyncDispose) return () => disposeRuntime(id);
          if (key === Symbol.dispose) return () => disposeNow(id);
        }
        if (key === Symbol.toStringTag) return 'causal-attention worker handle';
        if (typeof key === 'symbol') return undefined;
        const snapshot = snapshots.get(id);
        if (snapshot && Object.hasOwn(snapshot, key)) return readSnapshot(snapshot[key]);
        if (CONVENTIONAL.has(key)) return Reflect.get(t, key, receiver);
        return pathProxy(id, [key]);
      },
      has: (t, key) => (typeof key === 'string' && Object.hasOwn(snapshots.get(id) ?? {}, key)) ||
        Reflect.has(t, key),
      ownKeys: () => [...Object.keys(snapshots.get(id) ?? {}), ...(callable ? ['prototype'] : [])],
      getOwnPropertyDescriptor: (t, key) => {
        const snapshot = snapshots.get(id) ?? {};
        if (typeof key === 'string' && Object.hasOwn(snapshot, key)) {
          return { value: readSnapshot(snapshot[key]), enumerable: true, configurable: true, writable: false };
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
   * A snapshot's value as a read gives it: a primitive, or the error its
   * getter threw in the worker (remote-host.mjs's snapshot), thrown here.
   * @param {unknown} value
   */
  function readSnapshot(value) {
    if (value !== null && typeof value === 'object') {
      throw errorFromWire(/** @type {{ throws: { name: string, message: string } }} */ (value).throws);
    }
    return value;
  }

  /**
   * @param {number} id
   * @param {string[]} path
   * @returns {object}
   */
  function pathProxy(id, path) {
    const proxy = new Proxy(function remote() {}, {
      get(t, key, receiver) {
        if (key === 'then') {
          // Awaiting a property reads it (a copy, or a handle).
          return (/** @type {(value: unknown) => void} */ resolve, /** @type {(error: Error) => void} */ reject) =>
            request('get', id, path).then(resolve, reject);
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
  } catch (error) {
    close(error);
    throw error;
  } finally {
    clearTimeout(timer);
  }

  /** @returns {Promise<RuntimeProxy | null>} */
  async function open() {
    if (closed || closing) return null;
    runtimeCount++;
    // The engine has its own bound (the same timeout) and always answers;
    // this one covers a worker that stops answering altogether.
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    let answerTimer;
    /** @type {Promise<never>} */
    const again = new Promise((_, reject) => {
      if (Number.isFinite(timeout)) {
        answerTimer = setTimeout(() => reject(new Error(`causal-attention: the worker ${port.where} loaded but ` +
          `did not answer within ${timeout} ms`)), timeout + 1000);
      }
    });
    try {
      const runtime = /** @type {RuntimeProxy} */ (await Promise.race([
        send({ op: 'init', options: { build: options.build, threads: options.threads, timeout, gemmKernel: options.gemmKernel } }),
        again, failed]));
      // A runtime lives until its dispose(), not until its handle is dropped.
      runtimeIds.add(/** @type {number} */ (proxies.get(runtime)));
      registry.unregister(runtime);
      return runtime;
    } catch (error) {
      if (--runtimeCount === 0) close(/** @type {Error} */ (error));
      throw error;
    } finally {
      clearTimeout(answerTimer);
    }
  }

  return { open };
}
