// A matrix → its colour domain, row sums and one RGBA pixel per cell. No DOM
// and no canvas: the heatmap wraps the pixels in an ImageData and scales that
// image onto its canvas, and tests/web/ checks the colours in Node.
//
// Why it stays fast at T = 1024: two typed-array passes (row statistics,
// then a lookup into the scale's 256-entry table per cell), no interpolator
// call per cell.
//
// data: { values, rows, cols, offset, scale, maskShift }. The shown value of
// cell (i, j) is values[offset + i·cols + j] · scale; cells the mask hides
// (mask.mjs) are left out of every statistic and painted MASKED_RGBA.

import { INVALID_RGBA, MASKED_RGBA } from './colors.mjs';
import { visibleEnd } from '../core/mask.mjs';

/**
 * Sums (float64), smallest and largest visible values of rows [from, to):
 * { sums, min, max }, indexed from 0. A row with no visible value has
 * min +∞ and max −∞; NaN values count in the sum only.
 */
export function rowStats({ values, cols, offset, scale, maskShift }, from, to) {
  const sums = new Float64Array(to - from);
  const min = new Float64Array(to - from);
  const max = new Float64Array(to - from);
  for (let i = from; i < to; i++) {
    const base = offset + i * cols;
    const end = visibleEnd(i, cols, maskShift);
    let s = 0;
    let mn = Infinity;
    let mx = -Infinity;
    for (let j = 0; j < end; j++) {
      const v = values[base + j] * scale;
      s += v;
      if (v < mn) mn = v;
      if (v > mx) mx = v;
    }
    sums[i - from] = s;
    min[i - from] = mn;
    max[i - from] = mx;
  }
  return { sums, min, max };
}

/**
 * The colour domain [lo, hi] for the visible range [lo, hi] of a matrix:
 *   'zero-max'   [0, largest] (probabilities; [0, 1] when nothing is above 0)
 *   'symmetric'  [−a, a] with a the largest magnitude (signed values)
 *   'min-max'    the range itself, widened by ½ each way when it is one value
 * No finite value at all gives [0, 1] before these rules.
 */
export function colourDomain(kind, lo, hi) {
  if (!Number.isFinite(lo)) { lo = 0; hi = 1; }
  switch (kind) {
    case 'zero-max': return [0, hi > 0 ? hi : 1];
    case 'symmetric': { const a = Math.max(Math.abs(lo), Math.abs(hi)) || 1; return [-a, a]; }
    default: return hi > lo ? [lo, hi] : [lo - 0.5, hi + 0.5];
  }
}

/**
 * Colours `data` with `scale` (one of colors.SCALES, or any { rgba } with a
 * 256-entry Uint32Array of RGBA pixels). domain: see colourDomain.
 * colourMode 'row' stretches each row from its smallest to its largest
 * visible value instead (a row with one value, or all equal, shows at the
 * top of the scale). Non-finite visible values are INVALID_RGBA.
 * Returns { pixels: Uint32Array [rows · cols], domain: [lo, hi], rowSums,
 * rowMin, rowMax }.
 */
export function colourMatrix(data, { domain = 'min-max', colourMode = 'linear', scale }) {
  const { values, rows, cols, offset, maskShift } = data;
  const stats = rowStats(data, 0, rows);
  let lo = Infinity;
  let hi = -Infinity;
  for (let i = 0; i < rows; i++) {
    if (stats.min[i] < lo) lo = stats.min[i];
    if (stats.max[i] > hi) hi = stats.max[i];
  }
  [lo, hi] = colourDomain(domain, lo, hi);
  const perRow = colourMode === 'row';
  const lut = scale.rgba;
  const pixels = new Uint32Array(rows * cols);
  for (let i = 0; i < rows; i++) {
    const base = offset + i * cols;
    const row = i * cols;
    const end = visibleEnd(i, cols, maskShift);
    const rowMin = stats.min[i];
    const rowMax = stats.max[i];
    const rlo = perRow ? (rowMax > rowMin ? rowMin : rowMax - 1) : lo;
    const k = 255 / ((perRow ? rowMax : hi) - rlo || 1);
    for (let j = 0; j < end; j++) {
      const v = values[base + j] * data.scale;
      if (v === v && v !== Infinity && v !== -Infinity) {
        const t = (v - rlo) * k;
        pixels[row + j] = lut[t <= 0 ? 0 : t >= 255 ? 255 : (t + 0.5) | 0];
      } else {
        pixels[row + j] = INVALID_RGBA;
      }
    }
    pixels.fill(MASKED_RGBA, row + end, row + cols);
  }
  return { pixels, domain: [lo, hi], rowSums: stats.sums, rowMin: stats.min, rowMax: stats.max };
}
