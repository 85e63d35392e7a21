import { init } from 'causal-attention';
const ca = await init();
const [dIn, dOut, H, G] = process.argv.slice(2).map(Number);
for (const sw of [16, undefined]) {
  const t0 = performance.now();
  const gqa = new ca.GroupedQueryAttention(dIn, dOut, H, G, { contextLength: 20000, ...(sw && { slidingWindow: sw }) }).eval();
  const N = 20000;
  const x = ca.rand([N, dIn]);
  let heap = 0;
  const got = new Float32Array(N * dOut);
  for (let t = 0; t < N; t++) {
    got.set(gqa.forward(x.subarray(t * dIn, (t + 1) * dIn), [1, dIn], { useCache: true }), t * dOut);
    if (t === 1000) heap = ca.memoryBytes;
  }
  const t1 = performance.now();
  const end = ca.memoryBytes;
  if (sw) { const want = gqa.forward(x, [N, dIn]); let m = 0; for (let i = 0; i < want.length; i++) m = Math.max(m, Math.abs(want[i]-got[i])); console.log('maxdiff', m); }
  console.log(sw, heap / 2**20, end / 2**20, 'loop', (t1 - t0).toFixed(0), 'total', (performance.now() - t0).toFixed(0));
  gqa.resetCache();
  if (!sw) break;
}
