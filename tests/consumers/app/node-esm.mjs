// Node, ES module: every build and worker mode, the book's numbers.
import { init } from 'causal-attention';

const x = new Float32Array([
  0.43, 0.15, 0.89, 0.55, 0.87, 0.66, 0.57, 0.85, 0.64,
  0.22, 0.58, 0.33, 0.77, 0.25, 0.10, 0.05, 0.80, 0.55,
]);
const out = {};
for (const options of [{ build: 'single' }, { build: 'threads', threads: 2 }, { worker: true }]) {
  const ca = await init(options);
  await ca.manualSeed(123);
  const layer = await new ca.CausalAttention(3, 2, 6, 0.0);
  const y = await layer.forward(x, [6, 3]);
  out[JSON.stringify(options)] = [ca.build, y[0].toFixed(4), y[1].toFixed(4)];
}
console.log(JSON.stringify(out));
