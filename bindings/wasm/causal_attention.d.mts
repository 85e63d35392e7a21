// Types of dist/wasm/causal_attention.mjs, the Emscripten glue (see engine.d.ts).
import type { CreateEngine } from './engine.js';

declare const create: CreateEngine;
export default create;
