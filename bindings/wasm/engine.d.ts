// What the Emscripten glue in dist/wasm/ (built from bindings/embind.cc, not
// in the source tree) resolves to, for the type check of bindings/ (see
// scripts/typecheck.mjs). Internal: not part of the package's types.
// Structs cross as plain objects (Embind value_object); pointers are byte
// offsets into the heap; the calls return a Status code (src/status.h).

/** The Embind module of either build. */
export interface EngineModule {
  /** AttentionWithLogSumExp (src/attention.h) on heap pointers: a Status code. */
  attention(...args: any[]): number;
  /** The scalar reference of attention. */
  attentionReference(...args: any[]): number;
  /** AttentionBackward (src/attention_backward.h). */
  attentionBackward(...args: any[]): number;
  /** The scalar reference of the backward. */
  attentionBackwardReference(...args: any[]): number;
  /** AttentionLayerForward (src/layer.h). */
  layerForward(...args: any[]): number;
  /** AttentionLayerBackward (src/layer.h). */
  layerBackward(...args: any[]): number;
  /** Linear (src/linear.h): x, rows, in, out, w, b, y pointers and sizes. */
  linear(...args: any[]): number;
  /** LinearBackward (src/linear.h). */
  linearBackward(...args: any[]): number;
  /** 1/sqrt(headDim) rounded to float32. */
  defaultScale(headDim: number): number;
  setNumThreads(threads: number): void;
  numThreads(): number;
  /** Highway's target name, 'WASM' for SIMD128. */
  targetName(): string;
  allowRelaxedGemmKernel(allow: boolean): void;
  gemmKernelName(): 'relaxed-simd' | 'simd128';
  /** The message of a Status code. */
  statusMessage(status: number): string;
  _malloc(bytes: number): number;
  _free(pointer: number): void;
  /** A view of the heap; replaced when memory grows (single-threaded build). */
  HEAPF32: Float32Array;
  /** The shared memory (exported by the pthreads build only). */
  wasmMemory?: WebAssembly.Memory;
  /** emcc's pthread pool (pthreads build only). */
  PThread?: {
    unusedWorkers: Array<{ unref?(): void; terminate(): void }>;
    runningWorkers: Array<{ unref?(): void; terminate(): void }>;
    terminateAllThreads(): void;
  };
}

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

/** The core's AttentionShape (src/attention.h), as Embind's value_object. */
export interface AttentionShape {
  batch: number;
  heads: number;
  queryLength: number;
  keyLength: number;
  headDim: number;
  valueDim: number;
  kvHeads: number;
  /** Keys per head in memory (a KV cache's capacity); 0: keyLength. */
  kvCapacity: number;
}
