// Worker mode, the worker's side (remote.mjs is the page's): runs init() and
// answers the page's requests (read a property, call a method, construct)
// by path from a handle, with the wire format of remote.mjs. Objects that
// are not plain data stay here in `handles`; results are copied, their typed
// arrays transferred.

import { init } from '../index.mjs';
import {
  HANDLE, SYMBOL, VALUE, WRITE_BACK, decodeGraph, describePath, encodeGraph, errorToWire, isCloneable, isContainer,
  symbolFromWire, symbolToWire,
} from './remote.mjs';

/** `port`: { post(message, transfer), onMessage(handler) }. */
export function serve(port) {
  const handles = new Map(); // id → object
  const ids = new WeakMap(); // object → id
  const sent = new Map(); // id → times sent to the page (see release)
  let nextId = 0;

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

  /** The primitive-valued properties (own, inherited getters included) the page reads synchronously. */
  function snapshot(object) {
    const out = {};
    if (typeof object === 'function') return out;
    for (let o = object; o && o !== Object.prototype; o = Object.getPrototypeOf(o)) {
      for (const key of Object.getOwnPropertyNames(o)) {
        if (key === 'constructor' || Object.hasOwn(out, key)) continue;
        const d = Object.getOwnPropertyDescriptor(o, key);
        let value;
        if ('value' in d) value = d.value;
        else if (d.get) {
          try {
            value = d.get.call(object);
          } catch {
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

  // The caller's arguments (a table of containers, see encodeGraph); its
  // typed arrays keep their numbers n, which a WRITE_BACK names.
  function decode(wire, arrays) {
    return decodeGraph(wire, (leaf) => {
      switch (leaf.t) {
        case VALUE:
          if (leaf.n !== undefined) arrays[leaf.n] = leaf.v;
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

  // Typed arrays are copied here and the copies transferred: the worker may
  // still hold the original (a parameter, a cache), the page pays no copy.
  function encode(value, arrays, transfer) {
    return encodeGraph(value, (x) => {
      if (ArrayBuffer.isView(x) && !(x instanceof DataView)) {
        const copy = x.slice();
        transfer.push(copy.buffer);
        const n = arrays.indexOf(x);
        return n >= 0 ? { t: WRITE_BACK, n, v: copy } : { t: VALUE, v: copy };
      }
      if (isCloneable(x)) return { t: VALUE, v: x };
      if (typeof x === 'symbol') return symbolToWire(x);
      if (isContainer(x)) return undefined;
      return register(x);
    });
  }

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

  async function run({ op, h, path, args, options }) {
    if (op === 'init') {
      const runtime = await init({ ...options, worker: false });
      return runtime;
    }
    if (!handles.has(h)) throw new TypeError('worker mode: this object has been released in the worker');
    const base = handles.get(h);
    const arrays = [];
    const values = args && decode(args, arrays);
    if (op === 'get') return { result: walk(base, path), arrays };
    const owner = walk(base, path.slice(0, -1));
    const fn = path.length ? owner?.[path.at(-1)] : base;
    if (typeof fn !== 'function') throw new TypeError(`${describePath(path)} is not a function`);
    if (op === 'new') return { result: new fn(...values), arrays };
    return { result: await fn.apply(path.length ? owner : undefined, values), arrays };
  }

  port.onMessage(async (message) => {
    if (message.op === 'release') {
      if (sent.get(message.h) === message.n) {
        ids.delete(handles.get(message.h));
        handles.delete(message.h);
        sent.delete(message.h);
      }
      return;
    }
    const reply = { id: message.id, ok: true };
    const transfer = [];
    try {
      if (message.op === 'init') {
        reply.value = encode(await run(message), [], transfer);
      } else {
        const { result, arrays } = await run(message);
        reply.value = encode(result, arrays, transfer);
        if (handles.has(message.h)) reply.snapshots = { [message.h]: snapshot(handles.get(message.h)) };
      }
    } catch (error) {
      reply.ok = false;
      reply.error = errorToWire(error);
      transfer.length = 0;
      if (handles.has(message.h)) reply.snapshots = { [message.h]: snapshot(handles.get(message.h)) };
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
