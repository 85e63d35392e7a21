// A sparkline: one small line of a score's history, no axes (the numbers
// stand beside it). The loss curve, which needs axes, is uPlot's.

/**
 * Draws `ys` (by their `xs`) into `canvas` (its CSS size, sharp at the
 * device pixel ratio), the y range [lo, hi] fixed so that lines of the
 * same kind compare at a glance. `colour`: a CSS colour.
 */
export function drawSparkline(canvas, xs, ys, { lo = 0, hi = 1, colour = '#333' } = {}) {
  const dpr = globalThis.devicePixelRatio || 1;
  const w = canvas.clientWidth || 80;
  const h = canvas.clientHeight || 18;
  if (canvas.width !== Math.round(w * dpr) || canvas.height !== Math.round(h * dpr)) {
    canvas.width = Math.round(w * dpr);
    canvas.height = Math.round(h * dpr);
  }
  const ctx = canvas.getContext('2d');
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, w, h);
  ctx.strokeStyle = '#e3e3e8';
  ctx.lineWidth = 1;
  ctx.beginPath();
  ctx.moveTo(0, h - 0.5);
  ctx.lineTo(w, h - 0.5);
  ctx.stroke();
  const n = ys.length;
  if (n === 0) return;
  const x0 = xs[0];
  const span = xs[n - 1] - x0 || 1;
  const px = (k) => (n === 1 ? w - 1.5 : 1 + ((xs[k] - x0) / span) * (w - 2.5));
  const py = (v) => h - 1 - (Math.max(lo, Math.min(hi, v)) - lo) / (hi - lo) * (h - 2);
  ctx.strokeStyle = colour;
  ctx.lineWidth = 1.25;
  ctx.beginPath();
  for (let k = 0; k < n; k++) {
    if (k === 0) ctx.moveTo(px(k), py(ys[k]));
    else ctx.lineTo(px(k), py(ys[k]));
  }
  ctx.stroke();
  ctx.fillStyle = colour;
  ctx.beginPath();
  ctx.arc(px(n - 1), py(ys[n - 1]), 1.75, 0, 2 * Math.PI);
  ctx.fill();
}
