// The book's CausalAttention example (manualSeed(123), CausalAttention(3, 2,
// 6, 0.0), row 1 = -0.4519, 0.2216) for the test runners' tests (Jest,
// Vitest, Bun): every build and worker mode.
const inputs = () => new Float32Array([
  0.43, 0.15, 0.89, 0.55, 0.87, 0.66, 0.57, 0.85, 0.64,
  0.22, 0.58, 0.33, 0.77, 0.25, 0.10, 0.05, 0.80, 0.55,
]);

/** [init options, the build it runs on] */
exports.CASES = [[{ build: 'single' }, 'single'], [{ build: 'threads', threads: 2 }, 'threads'], [{ worker: true }, 'threads']];
exports.EXPECTED = ['-0.4519', '0.2216'];

/** The build and row 1 from a runtime (in worker mode every call returns a promise). */
exports.book = async function book(ca) {
  await ca.manualSeed(123);
  const layer = await new ca.CausalAttention(3, 2, 6, 0.0);
  const output = await layer.forward(inputs(), [6, 3]);
  return [ca.build, output[0].toFixed(4), output[1].toFixed(4)];
};
