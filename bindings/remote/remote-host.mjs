// Worker mode, the worker's side (remote.mjs is the page's): runs the init()
// its worker entry hands it (worker.mjs, worker-node.mjs: the entries sit
// above remote/) and answers the page's requests (read a property, call a
// method, construct) by path from a handle, with the wire format of
// remote.mjs. Objects that are not plain data stay here in `handles`;
// results are copied, their typed arrays transferred.

import {
  HANDLE, SYMBOL, VALUE, WRITE_BACK, decodeGraph, describePath, encodeGraph, errorToWire, isCloneable, isContainer,
  symbolFromWire, symbolToWire,
} from './wire.mjs';

/** @import { MessagePort } from '../engine/platform.d.ts' */
/** @import { Graph, Reply, Request, Wire } from './wire.mjs' */

/**
 * Answers the page's requests arriving through `port` until the worker ends.
 * @param {MessagePort} port
 * @param {(options: object & { worker: false }) => Promise<object>} init the package's init()
 */
export function serve(port, init) {
  /** @type {Map<number, any>} */
  const handles = new Map(); // id → object
  /** @type {WeakMap<object, number>} */
  const ids = new WeakMap(); // object → id
  /** @type {Map<number, number>} */
  const sent = new Map(); // id → times sent to the page (see release)
  let nextId = 0;

  /**
   * @param {object} object
   * @returns {Wire}
   */
  function register(object) {
    let id = ids.get(object);
    if (id === undefined) {
      id = nextId++;
      ids.set(object, id);
      handles.set(id, object);
    }
    sent.set(id, (sent.get(id) ?? 0) + 1);
    return { t: HANDLE, id, n: sent.get(id), s: snapshot(object), f: typeof object === 'function' };
  }

  /**
   * The primitive-valued properties (own, inherited getters included) the
   * page reads synchronously. A getter that throws (a disposed cache's
   * length) is kept as `{ throws }`, the error on the wire, so that the
   * page's read throws the same error (no primitive is an object).
   * @param {object} object
   */
  function snapshot(object) {
    /** @type {Record<string, unknown>} */
    const out = {};
    if (typeof object === 'function') return out;
    for (let o = object; o && o !== Object.prototype; o = Object.getPrototypeOf(o)) {
      for (const key of Object.getOwnPropertyNames(o)) {
        if (key === 'constructor' || Object.hasOwn(out, key)) continue;
        const d = /** @type {PropertyDescriptor} */ (Object.getOwnPropertyDescriptor(o, key));
        let value;
        if ('value' in d) value = d.value;
        else if (d.get) {
          try {
            value = d.get.call(object);
          } catch (error) {
            out[key] = { throws: errorToWire(error) };
            continue;
          }
        } else continue;
        if (value === null || (typeof value !== 'object' && typeof value !== 'function' && typeof value !== 'symbol')) {
          out[key] = value;
        }
      }
    }
    return out;
  }

  /**
   * The caller's arguments (a table of containers, see encodeGraph); its
   * typed arrays keep their numbers n, which a WRITE_BACK names.
   * @param {Graph} graph
   * @param {ArrayBufferView[]} arrays
   * @returns {unknown}
   */
  function decode(graph, arrays) {
    return decodeGraph(graph, (leaf) => {
      switch (leaf.t) {
        case VALUE:
          if (leaf.n !== undefined) arrays[leaf.n] = /** @type {ArrayBufferView} */ (leaf.v);
          return leaf.v;
        case SYMBOL: return symbolFromWire(leaf);
        case HANDLE: {
          if (!handles.has(leaf.id)) throw new TypeError('worker mode: an argument refers to an object the worker has released');
          return handles.get(leaf.id);
        }
        default: throw new TypeError(`worker mode: unknown wire tag ${leaf.t}`);
      }
    });
  }

  /**
   * Typed arrays are copied here and the copies transferred: the worker may
   * still hold the original (a parameter, a cache), the page pays no copy.
   * @param {unknown} value
   * @param {ArrayBufferView[]} arrays
   * @param {Transferable[]} transfer
   * @returns {Graph}
   */
  function encode(value, arrays, transfer) {
    return encodeGraph(value, (x) => {
      if (ArrayBuffer.isView(x) && !(x instanceof DataView)) {
        const copy = /** @type {Float32Array} */ (x).slice();
        transfer.push(copy.buffer);
        const n = arrays.indexOf(x);
        return n >= 0 ? { t: WRITE_BACK, n, v: copy } : { t: VALUE, v: copy };
      }
      if (isCloneable(x)) return { t: VALUE, v: x };
      if (typeof x === 'symbol') return symbolToWire(x);
      if (isContainer(x)) return undefined;
      return register(/** @type {object} */ (x));
    });
  }

  /**
   * @param {any} base
   * @param {string[]} path
   */
  function walk(base, path) {
    let value = base;
    for (let i = 0; i < path.length; i++) {
      if (value === null || value === undefined) {
        throw new TypeError(`Cannot read properties of ${value} (reading '${path[i]}' of ${describePath(path)})`);
      }
      value = value[path[i]];
    }
    return value;
  }

  /**
   * The init request: the runtime.
   * @param {Extract<Request, { op: 'init' }>} message
   */
  async function runInit({ options }) {
    const runtime = await init({ ...options, worker: false });
    return runtime;
  }

  /** @param {Extract<Request, { op: 'get' | 'call' | 'new' }>} message */
  async function run({ op, h, path, args }) {
    if (!handles.has(h)) throw new TypeError('worker mode: this object has been released in the worker');
    const base = handles.get(h);
    /** @type {ArrayBufferView[]} */
    const arrays = [];
    const values = args ? /** @type {unknown[]} */ (decode(args, arrays)) : [];
    if (op === 'get') return { result: walk(base, path), arrays };
    const owner = walk(base, path.slice(0, -1));
    const fn = path.length ? owner?.[path[path.length - 1]] : base;
    if (typeof fn !== 'function') throw new TypeError(`${describePath(path)} is not a function`);
    if (op === 'new') return { result: new fn(...values), arrays };
    return { result: await fn.apply(path.length ? owner : undefined, values), arrays };
  }

  port.onMessage(async (/** @type {Request} */ message) => {
    if (message.op === 'release') {
      if (sent.get(message.h) === message.n) {
        ids.delete(handles.get(message.h));
        handles.delete(message.h);
        sent.delete(message.h);
      }
      return;
    }
    /** @type {Reply} */
    let reply;
    /** @type {Transferable[]} */
    const transfer = [];
    const h = message.op === 'init' ? undefined : message.h;
    try {
      if (message.op === 'init') {
        reply = { id: message.id, ok: true, value: encode(await runInit(message), [], transfer) };
      } else {
        const { result, arrays } = await run(message);
        reply = { id: message.id, ok: true, value: encode(result, arrays, transfer) };
        if (h !== undefined && handles.has(h)) reply.snapshots = { [h]: snapshot(handles.get(h)) };
      }
    } catch (error) {
      reply = { id: message.id, ok: false, error: errorToWire(error) };
      transfer.length = 0;
      if (h !== undefined && handles.has(h)) reply.snapshots = { [h]: snapshot(handles.get(h)) };
    }
    try {
      port.post(reply, transfer);
    } catch (error) {
      // A result postMessage refuses: the caller still gets an answer.
      port.post({ id: message.id, ok: false, error: errorToWire(error) });
    }
  });
  port.post({ op: 'hello' });
}
