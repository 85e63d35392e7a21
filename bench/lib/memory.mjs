// Memory measurements for implementations we cannot ask directly.
//
// wasm memory: every WebAssembly.Memory created or exported in this thread is
// recorded (WebAssembly.Memory, Instance, instantiate and instantiateStreaming
// are wrapped before any implementation loads). A wasm memory never shrinks,
// so its size after the runs is its peak. Each case runs in a fresh worker,
// so the sum is that implementation's own wasm memory.
//
// Peak RSS: Linux's VmHWM, reset by writing 5 to /proc/self/clear_refs at the
// start of a case; peak − RSS at the reset is the process's growth during the
// case (JS-side copies and native allocations included; the process is shared
// with the harness, so this is an upper-bound-ish estimate, not exact).

import { readFileSync, writeFileSync } from 'node:fs';

const memories = new Set();

function scanExports(instance) {
  for (const value of Object.values(instance?.exports ?? {})) {
    if (value instanceof WebAssembly.Memory) memories.add(value);
  }
}

let installed = false;

export function installWasmMemoryTracker() {
  if (installed) return;
  installed = true;
  const W = WebAssembly;
  W.Memory = new Proxy(W.Memory, {
    construct(target, args, newTarget) {
      const m = Reflect.construct(target, args, newTarget === W.Memory ? target : newTarget);
      memories.add(m);
      return m;
    },
  });
  W.Instance = new Proxy(W.Instance, {
    construct(target, args, newTarget) {
      const i = Reflect.construct(target, args, newTarget === W.Instance ? target : newTarget);
      scanExports(i);
      return i;
    },
  });
  for (const name of ['instantiate', 'instantiateStreaming']) {
    const original = W[name];
    if (typeof original !== 'function') continue;
    W[name] = async function (...args) {
      const result = await original.apply(this, args);
      scanExports(result instanceof W.Instance ? result : result.instance);
      return result;
    };
  }
}

// sweepCaches lives in sweep.mjs (no node: import: the browser bench runs it too).
export { sweepCaches } from './sweep.mjs';

/** Total bytes of the wasm memories seen in this thread (null when none). */
export function trackedWasmBytes() {
  if (memories.size === 0) return null;
  let total = 0;
  for (const m of memories) total += m.buffer.byteLength;
  return total;
}

function status() {
  const text = readFileSync('/proc/self/status', 'utf8');
  const kb = (key) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN) * 1024;
  return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
}

/** Starts a peak-RSS window; returns a function giving the growth in bytes (null if unsupported). */
export function startPeakRss() {
  try {
    writeFileSync('/proc/self/clear_refs', '5');
    const base = status().rss;
    return () => {
      const { hwm } = status();
      return Number.isFinite(hwm) ? Math.max(0, hwm - base) : null;
    };
  } catch {
    return () => null;
  }
}
