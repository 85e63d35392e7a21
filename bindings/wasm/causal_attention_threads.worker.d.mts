// Types of dist/wasm/causal_attention_threads.worker.mjs, emcc's pthread
// worker: imported for its effect (pthread-node.mjs).
export {};
