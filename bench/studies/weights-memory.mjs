// JS and resident memory of a GPT-2-small-shaped GPTModel (random weights)
// in float32, then quantized (int8 by default), then after a forward: a
// quantized Linear keeps no float32 copy of its weight until something
// reads `weight` (docs/models.md). Not a test: it asserts nothing.
//
//   node bench/studies/weights-memory.mjs [int8|bfloat16]
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { init } from 'causal-attention';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc');
const dtype = process.argv[2] ?? 'int8';
const ca = await init({ build: 'single' });
const model = new ca.GPTModel({
  vocab_size: 50257, context_length: 1024, emb_dim: 768, n_heads: 12, n_layers: 12, drop_rate: 0, qkv_bias: true,
}).eval();

/** Memory once the collector (and its array-buffer sweeper) has run. */
async function memory() {
  await new Promise((resolve) => setTimeout(resolve, 200));
  gc();
  const u = process.memoryUsage();
  const mib = (b) => `${(b / 2 ** 20).toFixed(0)} MiB`;
  return `JS arrays ${mib(u.arrayBuffers)}, resident ${mib(u.rss)}`;
}

console.log(`float32: ${await memory()}`);
model.quantize(dtype);
console.log(`${dtype}: ${await memory()}`);
model.forward(new Int32Array(8).fill(5), [1, 8]);
console.log(`${dtype}, after a forward: ${await memory()}`);
