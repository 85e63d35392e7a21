// Node, CommonJS: require() the package, the book's numbers.
const { init } = require('causal-attention');

const x = new Float32Array([
  0.43, 0.15, 0.89, 0.55, 0.87, 0.66, 0.57, 0.85, 0.64,
  0.22, 0.58, 0.33, 0.77, 0.25, 0.10, 0.05, 0.80, 0.55,
]);
init({ build: 'threads', threads: 2 }).then((ca) => {
  ca.manualSeed(123);
  const y = new ca.CausalAttention(3, 2, 6, 0.0).forward(x, [6, 3]);
  console.log(JSON.stringify([ca.build, y[0].toFixed(4), y[1].toFixed(4)]));
});
