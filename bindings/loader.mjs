// Loads one of the two wasm builds in Node 20 or a browser, with no bundler
// configuration: in Node the .wasm bytes are read with fs (emcc 3.1.6's own
// Node path is broken for ES modules); in browsers the generated glue
// resolves the .wasm and the pthread worker next to itself via
// import.meta.url (streaming compile).

export const isNode =
  typeof process === 'object' && typeof process.versions?.node === 'string';

/** Upper bound on threads, whatever the machine reports. */
export const MAX_THREADS = 16;

/** Whether the pthreads build can run here (and why not). */
export function threadsAvailability() {
  if (typeof SharedArrayBuffer === 'undefined' || typeof Atomics === 'undefined') {
    return { ok: false, why: 'SharedArrayBuffer is not available' };
  }
  if (!isNode && globalThis.crossOriginIsolated !== true) {
    return {
      ok: false,
      why: 'the page is not cross-origin isolated (serve it with ' +
        'Cross-Origin-Opener-Policy: same-origin and ' +
        'Cross-Origin-Embedder-Policy: require-corp)',
    };
  }
  return { ok: true, why: '' };
}

/** Logical cores available to this process or page. */
export async function hardwareThreads() {
  if (isNode) {
    const os = await import('node:os');
    return os.availableParallelism?.() ?? os.cpus().length;
  }
  return globalThis.navigator?.hardwareConcurrency || 1;
}

// (module (func (result v128) (f32x4.relaxed_madd (v128.const 0) ×3)))
const RELAXED_SIMD_PROBE = new Uint8Array([
  0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 61, 1, 59, 0,
  253, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  253, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  253, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  253, 133, 2, 11,
]);

/**
 * Whether this engine runs relaxed SIMD (f32x4.relaxed_madd): then each
 * build loads in its relaxed variant (the GEMM microkernel's mul + add
 * fused), when the package was built with one. Chromium: yes; Node 20: only
 * with --experimental-wasm-relaxed-simd.
 */
export function relaxedSimdAvailable() {
  try {
    return WebAssembly.validate(RELAXED_SIMD_PROBE);
  } catch {
    return false;
  }
}

/** The glue module of a build, its relaxed variant where the engine and package have it. */
async function importGlue(build) {
  if (relaxedSimdAvailable()) {
    try {
      return build === 'threads'
        ? { glue: await import('./wasm/causal_attention_threads_relaxed.mjs'), file: 'causal_attention_threads_relaxed.wasm', relaxed: true }
        : { glue: await import('./wasm/causal_attention_relaxed.mjs'), file: 'causal_attention_relaxed.wasm', relaxed: true };
    } catch {
      // Built without a relaxed variant (no clang >= 16 on the build machine).
    }
  }
  return build === 'threads'
    ? { glue: await import('./wasm/causal_attention_threads.mjs'), file: 'causal_attention_threads.wasm', relaxed: false }
    : { glue: await import('./wasm/causal_attention.mjs'), file: 'causal_attention.wasm', relaxed: false };
}

/**
 * Instantiates a build. `threads` is the total thread count (the calling
 * thread included); the pthreads build pre-starts threads - 1 workers so
 * that creating them never waits on the event loop.
 */
export async function loadModule(build, threads) {
  const { glue, file: wasmFile, relaxed } = await importGlue(build);
  // At least one pre-started worker: with a pool of 0, emcc 3.1.6 never
  // releases its "wasm-instantiate" run dependency and the module never
  // resolves (a forced threaded build with threads: 1 would hang).
  const moduleArg = { threadPoolSize: build === 'threads' ? Math.max(1, threads - 1) : 0 };
  if (isNode) {
    const { readFile } = await import('node:fs/promises');
    moduleArg.wasmBinary = await readFile(new URL(`./wasm/${wasmFile}`, import.meta.url));
  }
  const mod = await glue.default(moduleArg);
  mod.relaxedSimd = relaxed;  // which variant loaded (tests/node/relaxed.test.mjs)
  if (build === 'threads') {
    mod.setNumThreads(threads);
    if (isNode) unrefWorkers(mod);
  }
  return mod;
}

/**
 * Node keeps a process alive while any Worker is referenced; idle pthread
 * workers must not, so a script that used the threaded build exits normally.
 */
function unrefWorkers(mod) {
  const pthread = mod.PThread;
  for (const w of [...pthread.unusedWorkers, ...pthread.runningWorkers]) w.unref?.();
}

/** Stops every worker of a pthreads build (after this, the module is dead). */
export function terminateWorkers(mod) {
  mod.PThread?.terminateAllThreads();
}
