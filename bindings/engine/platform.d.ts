// The contract between the engine and a host, for the type check of
// bindings/ (scripts/typecheck.mjs): platform-web.mjs and platform-node.mjs
// implement Platform; loader.mjs and remote/remote.mjs use it.
// Internal: not part of the package's types.

/** Where a build's .wasm is, and how to compile it. */
export interface WasmSource {
  /** A URL or path, for error messages. */
  where: string;
  compile(): Promise<WebAssembly.Module>;
}

/** What loader.mjs wants to hear from a pthread worker. */
export interface PthreadWorkerHooks {
  /** The worker sent emcc's 'loaded'. */
  onLoaded?: () => void;
  /** The worker failed; `reason` says why, for the error message. */
  onError: (reason: string) => void;
}

/**
 * A worker as emcc's glue uses it (a web Worker, or PthreadWorker in Node):
 * it also sets `onmessage`, which both call with `{ data }`.
 */
export interface GlueWorker {
  postMessage(message: unknown, transfer: Transferable[]): void;
  terminate(): void;
}

/** One side of a worker as remote.mjs and remote-host.mjs talk through it. */
export interface MessagePort {
  post(message: unknown, transfer?: Transferable[]): void;
  onMessage(handler: (message: any) => void): void;
}

/** The worker of init({ worker: true }), seen from the calling thread. */
export interface ApiWorkerPort extends MessagePort {
  /** The worker's URL or path, for error messages. */
  where: string;
  /** `handler(reason)` when the worker fails or exits. */
  onError(handler: (reason: string) => void): void;
  terminate(): void;
  /** Node: keep the process alive while calls are pending, not otherwise. */
  ref?: () => void;
  unref?: () => void;
}

/** A host: browsers and web workers (platform-web.mjs) or Node (platform-node.mjs). */
export interface Platform {
  isNode: boolean;
  /** Throws when this platform cannot run here (the browser entry in Node). */
  check?: () => void;
  hardwareThreads(): number;
  wasm(build: 'single' | 'threads'): WasmSource;
  /**
   * Before the threaded build asks for its `count` pthread workers: worker
   * mode's API worker in a browser has the page start them.
   */
  preparePthreadWorkers?: (count: number) => Promise<void>;
  /** A new pthread worker and its URL or path (for messages). */
  pthreadWorker(hooks: PthreadWorkerHooks): [GlueWorker, string];
  /** After the threaded build loaded (Node: unreference the idle workers). */
  afterLoad?: (mod: import('./embind.mjs').EmbindModule) => void;
  /** emcc's stderr. */
  printErr?: (text: string) => void;
  apiWorker(): ApiWorkerPort;
}
