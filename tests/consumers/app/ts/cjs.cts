// node16 resolution, CommonJS (the require condition: index.d.cts).
import { init } from 'causal-attention';

async function main(): Promise<number> {
  const ca = await init();
  const y = new ca.MultiHeadAttention(3, 2, 6, 0.0, 2).forward(new Float32Array(18), [6, 3], { returnScores: true });
  // @ts-expect-error 'gpu' is not a build
  await init({ build: 'gpu' });
  return y.scores[0];
}

export = main;
