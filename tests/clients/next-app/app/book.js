// The book's CausalAttention example (row 1: -0.4519, 0.2216), for the page and the route.
const inputs = () => new Float32Array([
  0.43, 0.15, 0.89, 0.55, 0.87, 0.66, 0.57, 0.85, 0.64,
  0.22, 0.58, 0.33, 0.77, 0.25, 0.10, 0.05, 0.80, 0.55,
]);

export async function book(ca) {
  await ca.manualSeed(123);
  const layer = await new ca.CausalAttention(3, 2, 6, 0.0);
  const output = await layer.forward(inputs(), [6, 3]);
  return `${Array.from(output.subarray(0, 2), (v) => v.toFixed(4)).join(', ')} (${ca.build} build)`;
}
