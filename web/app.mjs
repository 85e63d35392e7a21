// A minimal view: one causal weight matrix from the wasm engine.
import { init } from '/dist/index.mjs';

const tokens = ['Your', 'journey', 'starts', 'with', 'one', 'step'];
const inputs = new Float32Array([
  0.43, 0.15, 0.89,
  0.55, 0.87, 0.66,
  0.57, 0.85, 0.64,
  0.22, 0.58, 0.33,
  0.77, 0.25, 0.10,
  0.05, 0.80, 0.55,
]);

function draw(canvas, weights, n) {
  const ctx = canvas.getContext('2d');
  const margin = 80;
  const cell = (canvas.width - margin) / n;
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  ctx.font = '13px system-ui, sans-serif';
  ctx.textAlign = 'center';
  ctx.textBaseline = 'middle';
  for (let i = 0; i < n; i++) {
    ctx.fillStyle = '#333';
    ctx.fillText(tokens[i], margin + (i + 0.5) * cell, margin / 2);
    ctx.textAlign = 'right';
    ctx.fillText(tokens[i], margin - 6, margin + (i + 0.5) * cell);
    ctx.textAlign = 'center';
    for (let j = 0; j < n; j++) {
      const x = margin + j * cell;
      const y = margin + i * cell;
      if (j > i) {
        ctx.fillStyle = '#eee'; // masked: the future
        ctx.fillRect(x, y, cell - 1, cell - 1);
        continue;
      }
      const w = weights[i * n + j];
      const shade = Math.round(255 * (1 - w));
      ctx.fillStyle = `rgb(${shade}, ${Math.round(shade * 0.9 + 20)}, 255)`;
      ctx.fillRect(x, y, cell - 1, cell - 1);
      ctx.fillStyle = w > 0.5 ? '#fff' : '#000';
      ctx.fillText(w.toFixed(4), x + cell / 2, y + cell / 2);
    }
  }
}

const status = document.getElementById('status');
try {
  const ca = await init();
  const t0 = performance.now();
  const { weights } = ca.attention(inputs, inputs, inputs, {
    batch: 1, heads: 1, queryLength: 6, headDim: 3, returnWeights: true,
  });
  const ms = performance.now() - t0;
  draw(document.getElementById('weights'), weights, 6);
  status.textContent = `Engine: ${ca.target} SIMD, ${ca.build} build, ${ca.threads} thread(s); ` +
    `forward pass ${ms.toFixed(2)} ms.`;
  document.body.dataset.ready = 'true';
} catch (error) {
  status.textContent = `Failed to run: ${error.message}`;
  throw error;
}
