// What the Emscripten glue in dist/wasm/ (built from bindings/embind.cc, not
// in the source tree) takes and gives, for the type check of bindings/ (see
// scripts/typecheck.mjs). Internal: not part of the package's types. The
// bottom room: it imports nothing of bindings/.

/** What loader.mjs passes the glue's factory (emcc's Module object). */
export interface ModuleArg {
  threadPoolSize: number;
  instantiateWasm(imports: WebAssembly.Imports,
    receiveInstance: (instance: WebAssembly.Instance, module: WebAssembly.Module) => void): object;
  pthreadWorker?: () => unknown;
  printErr?: (text: string) => void;
}

/**
 * The glue's default export (emcc -sMODULARIZE -sEXPORT_ES6). The module it
 * resolves to is typed once, above the glue: engine/embind.mjs's
 * EmbindModule (loader.mjs names it).
 */
export type CreateEngine = (moduleArg: ModuleArg) => Promise<object>;
