// A browser app as a user writes it: the book's CausalAttention example
// (manualSeed(123), CausalAttention(3, 2, 6, 0.0), row 1 = -0.4519, 0.2216),
// once on the main thread and once in worker mode. Bundled by each bundler
// of tests/consumers/consumers.test.mjs.
import { init } from 'causal-attention';

const inputs = new Float32Array([
  0.43, 0.15, 0.89, 0.55, 0.87, 0.66, 0.57, 0.85, 0.64,
  0.22, 0.58, 0.33, 0.77, 0.25, 0.10, 0.05, 0.80, 0.55,
]);

// The same lines for both: in worker mode every call returns a promise.
async function book(ca) {
  await ca.manualSeed(123);
  const layer = await new ca.CausalAttention(3, 2, 6, 0.0);
  const output = await layer.forward(inputs, [6, 3]);
  return `${Array.from(output.subarray(0, 2), (v) => v.toFixed(4)).join(', ')} (${ca.build} build)`;
}

async function show(id, options) {
  const element = document.getElementById(id);
  try {
    const ca = await init(options);
    element.textContent = await book(ca);
    element.dataset.build = ca.build;
  } catch (error) {
    element.textContent = `failed: ${error.message}`;
    throw error;
  } finally {
    element.dataset.done = 'true';
  }
}

show('local', {});
show('worker', { worker: true });
