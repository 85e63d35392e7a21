// Colour scales from d3-scale-chromatic (perceptually uniform viridis and
// magma, the diverging RdBu), turned into 256-entry lookup tables so that a
// 1024 × 1024 matrix is one typed-array pass, not a million interpolator
// calls. d3 arrives as its official UMD build (see index.html): its ES build
// imports d3-interpolate by bare name, which needs an import map.
const d3 = globalThis.d3;
if (typeof d3?.interpolateViridis !== 'function' || typeof d3?.rgb !== 'function') {
  throw new Error('d3-scale-chromatic did not load (expected /vendor/d3-*/dist/*.min.js before app.mjs)');
}

const STEPS = 256;

/**
 * Masked cells (the future, −∞ before the softmax, exact zeros after it):
 * a light neutral grey that no scale below contains, so "masked" never
 * reads as "small". Small weights are dark purple in viridis. The page's
 * CSS gets both colours from here (app.mjs sets --masked, --masked-hatch).
 */
export const MASKED = { css: '#e6e6ea', hatch: '#c4c4cc' };

/** Non-finite values that are not the mask (NaN from NaN inputs). */
const INVALID = { css: '#ff00ff' };

/**
 * A d3 colour as one ImageData pixel: ImageData is RGBA in memory, which a
 * Uint32 view on little-endian hosts (all browsers we target) reads as ABGR.
 */
function pixel(c) {
  return (255 << 24 | c.b << 16 | c.g << 8 | c.r) >>> 0;
}

function makeScale(name, interpolate, description) {
  const css = new Array(STEPS);
  const rgba = new Uint32Array(STEPS);
  const light = new Uint8Array(STEPS);
  for (let i = 0; i < STEPS; i++) {
    const c = d3.rgb(interpolate(i / (STEPS - 1)));
    css[i] = c.formatHex();
    rgba[i] = pixel(c);
    // Relative luminance decides black or white text on the cell.
    const lum = 0.2126 * c.r + 0.7152 * c.g + 0.0722 * c.b;
    light[i] = lum > 140 ? 1 : 0;
  }
  return { name, interpolate, css, rgba, light, description };
}

/** Scales by what a panel holds. */
export const SCALES = {
  // Probabilities (softmax weights, after dropout): viridis, 0 = dark.
  weights: makeScale('viridis', d3.interpolateViridis, 'viridis (d3-scale-chromatic)'),
  // Logits (scores, scaled, masked): magma, so they never look like weights.
  scores: makeScale('magma', d3.interpolateMagma, 'magma (d3-scale-chromatic)'),
  // Signed outputs (context vectors): RdBu, blue below zero, red above.
  signed: makeScale('RdBu', (t) => d3.interpolateRdBu(1 - t), 'RdBu, diverging at 0 (d3-scale-chromatic)'),
};

export const MASKED_RGBA = pixel(d3.rgb(MASKED.css));
export const INVALID_RGBA = pixel(d3.rgb(INVALID.css));

/** Index into a scale's tables for v in [lo, hi]. */
export function scaleIndex(v, lo, hi) {
  if (!(hi > lo)) return STEPS >> 1;
  const t = (v - lo) / (hi - lo);
  return t <= 0 ? 0 : t >= 1 ? STEPS - 1 : Math.round(t * (STEPS - 1));
}

/** Row-sum strip colour: RdBu around 1 (white = sums to 1). */
export function rowSumColour(sum) {
  const t = 0.5 + Math.max(-0.5, Math.min(0.5, (sum - 1) / 2));
  return SCALES.signed.css[Math.round(t * (STEPS - 1))];
}

/** Draws a horizontal colour bar of `scale` into a canvas (the legend). */
export function drawLegendBar(canvas, scale) {
  const ctx = canvas.getContext('2d');
  const w = canvas.width;
  const h = canvas.height;
  for (let x = 0; x < w; x++) {
    ctx.fillStyle = scale.css[Math.round((x / Math.max(1, w - 1)) * (STEPS - 1))];
    ctx.fillRect(x, 0, 1, h);
  }
}
