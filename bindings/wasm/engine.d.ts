// What the Emscripten glue in dist/wasm/ (built from bindings/embind.cc, not
// in the source tree) resolves to, for the type check of bindings/ (see
// scripts/typecheck.mjs). Internal: not part of the package's types.
// Structs cross as plain objects (Embind value_object); pointers are byte
// offsets into the heap; the calls return a Status code (src/base/status.h).

/** The Embind module of either build: typed once, in engine/embind.mjs. */
export type EngineModule = import('../engine/embind.mjs').EmbindModule;

/** What loader.mjs passes the glue's factory (emcc's Module object). */
export interface ModuleArg {
  threadPoolSize: number;
  instantiateWasm(imports: WebAssembly.Imports,
    receiveInstance: (instance: WebAssembly.Instance, module: WebAssembly.Module) => void): object;
  pthreadWorker?: () => unknown;
  printErr?: (text: string) => void;
}

/** The glue's default export (emcc -sMODULARIZE -sEXPORT_ES6). */
export type CreateEngine = (moduleArg: ModuleArg) => Promise<EngineModule>;
