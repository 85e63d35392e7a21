// The demo page's pure modules in Node (no browser): the mask rule
// (web/core/mask.mjs) and the colouring of a matrix into pixels
// (web/widgets/colour-matrix.mjs). The page loads d3 as UMD scripts that fill
// globalThis.d3; here the same packages' ES builds fill it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as d3Color from 'd3-color';
import * as d3Interpolate from 'd3-interpolate';
import * as d3Chromatic from 'd3-scale-chromatic';

globalThis.d3 = { ...d3Color, ...d3Interpolate, ...d3Chromatic };
const { INVALID_RGBA, MASKED_RGBA, SCALES } = await import('../../web/widgets/colors.mjs');
const { colourDomain, colourMatrix, rowStats } = await import('../../web/widgets/colour-matrix.mjs');
const { isMasked, maskShiftFor, visibleEnd } = await import('../../web/core/mask.mjs');

/** A scale whose entry k is the pixel (k, 255 − k, 7, 255): the index reads back from the red byte. */
const RAMP = { rgba: Uint32Array.from({ length: 256 }, (_, k) => (255 << 24 | 7 << 16 | (255 - k) << 8 | k) >>> 0) };

/** Pixels as [r, g, b, a] per cell, row by row. */
const rgba = (pixels) => Array.from({ length: pixels.length }, (_, k) => Array.from(
  new Uint8Array(pixels.buffer, pixels.byteOffset + 4 * k, 4)));
/** The ramp index of each cell; 'M' masked, 'X' invalid. */
const indices = (pixels, cols) => {
  const out = [];
  for (let k = 0; k < pixels.length; k++) {
    if (k % cols === 0) out.push([]);
    const p = pixels[k];
    out.at(-1).push(p === MASKED_RGBA ? 'M' : p === INVALID_RGBA ? 'X' : p & 0xff);
  }
  return out;
};
const matrix = (rows, cols, list, extra = {}) => (
  { values: Float32Array.from(list), rows, cols, offset: 0, scale: 1, maskShift: null, ...extra });

describe('the mask rule (web/core/mask.mjs)', () => {
  it('gives the shift for the settings: null without the mask, 0 top-left, Tk − Tq bottom-right', () => {
    assert.equal(maskShiftFor({ causal: false, alignment: 'top-left' }, 2, 6), null);
    assert.equal(maskShiftFor({ causal: true, alignment: 'top-left' }, 2, 6), 0);
    assert.equal(maskShiftFor({ causal: true, alignment: 'bottom-right' }, 2, 6), 4);
    assert.equal(maskShiftFor({ causal: true, alignment: 'bottom-right' }, 6, 6), 0);
  });

  it('visibleEnd and isMasked agree on every cell, clamped to [0, cols]', () => {
    const cols = 5;
    for (const shift of [null, -3, -1, 0, 2, 7]) {
      for (let i = 0; i < 4; i++) {
        const end = visibleEnd(i, cols, shift);
        assert.ok(end >= 0 && end <= cols, `shift ${shift} row ${i}: end ${end}`);
        for (let j = 0; j < cols; j++) assert.equal(isMasked(i, j, shift), j >= end, `shift ${shift} (${i}, ${j})`);
      }
    }
    assert.deepEqual([0, 1, 2].map((i) => visibleEnd(i, 6, 0)), [1, 2, 3], 'the book\'s triangle');
    assert.deepEqual([0, 1].map((i) => visibleEnd(i, 6, 4)), [5, 6], 'bottom-right, 2 queries × 6 keys');
  });
});

describe('colouring a matrix (web/widgets/colour-matrix.mjs)', () => {
  it('min-max: exact pixels of a 2 × 3 matrix, lowest value at index 0, highest at 255', () => {
    const c = colourMatrix(matrix(2, 3, [0, 1, 2, 3, 4, 5]), { domain: 'min-max', scale: RAMP });
    assert.deepEqual(c.domain, [0, 5]);
    assert.deepEqual(rgba(c.pixels), [
      [0, 255, 7, 255], [51, 204, 7, 255], [102, 153, 7, 255],
      [153, 102, 7, 255], [204, 51, 7, 255], [255, 0, 7, 255],
    ]);
    assert.deepEqual(Array.from(c.rowSums), [3, 12]);
  });

  it('masked cells are grey, left out of the domain, the sums and the row range', () => {
    // The future holds a large value that must not stretch the scale.
    const c = colourMatrix(matrix(3, 3, [0, 100, 100, 3, 4, 100, 1, 2, 2], { maskShift: 0 }),
      { domain: 'min-max', scale: RAMP });
    assert.deepEqual(c.domain, [0, 4]);
    assert.deepEqual(indices(c.pixels, 3), [[0, 'M', 'M'], [191, 255, 'M'], [64, 128, 128]]);
    assert.deepEqual(rgba(c.pixels)[1 * 3 + 2], [0xe6, 0xe6, 0xea, 255]);
    assert.deepEqual(Array.from(c.rowSums), [0, 7, 5]);
    assert.deepEqual([Array.from(c.rowMin), Array.from(c.rowMax)], [[0, 3, 1], [0, 4, 2]]);
  });

  it('bottom-right alignment: the last query sees every key', () => {
    const c = colourMatrix(matrix(2, 4, [1, 1, 1, 1, 1, 1, 1, 1], { maskShift: 2 }), { domain: 'zero-max', scale: RAMP });
    assert.deepEqual(indices(c.pixels, 4), [[255, 255, 255, 'M'], [255, 255, 255, 255]]);
  });

  it('zero-max starts at 0 and falls back to [0, 1] when nothing is above 0', () => {
    const c = colourMatrix(matrix(1, 3, [0.25, 0.5, 0.125]), { domain: 'zero-max', scale: RAMP });
    assert.deepEqual(c.domain, [0, 0.5]);
    assert.deepEqual(indices(c.pixels, 3), [[128, 255, 64]]);
    assert.deepEqual(colourDomain('zero-max', -2, -1), [0, 1]);
    assert.deepEqual(colourDomain('zero-max', 0, 0), [0, 1]);
    // Dropout zeros are values, not mask: they take the bottom of the scale.
    const dropped = colourMatrix(matrix(1, 2, [0, 2]), { domain: 'zero-max', scale: RAMP });
    assert.deepEqual(indices(dropped.pixels, 2), [[0, 255]]);
  });

  it('symmetric is centred on 0 (signed context values), [−1, 1] for all zeros', () => {
    const c = colourMatrix(matrix(1, 3, [-0.25, 0, 0.125]), { domain: 'symmetric', scale: RAMP });
    assert.deepEqual(c.domain, [-0.25, 0.25]);
    assert.deepEqual(indices(c.pixels, 3), [[0, 128, 191]]);
    assert.deepEqual(colourDomain('symmetric', 0, 0), [-1, 1]);
  });

  it('min-max widens a single value by ½ each way; no finite value gives [0, 1]', () => {
    const c = colourMatrix(matrix(1, 2, [3, 3]), { domain: 'min-max', scale: RAMP });
    assert.deepEqual(c.domain, [2.5, 3.5]);
    assert.deepEqual(indices(c.pixels, 2), [[128, 128]]);
    assert.deepEqual(colourDomain('min-max', Infinity, -Infinity), [0, 1]);
    // Every cell masked: nothing visible, the domain is the fallback.
    const none = colourMatrix(matrix(1, 3, [1, 2, 3], { maskShift: -1 }), { domain: 'min-max', scale: RAMP });
    assert.deepEqual(none.domain, [0, 1]);
    assert.deepEqual(indices(none.pixels, 3), [['M', 'M', 'M']]);
  });

  it('NaN and ±∞ that the mask did not make are magenta; NaN stays out of the domain', () => {
    const c = colourMatrix(matrix(1, 3, [NaN, 1, 2]), { domain: 'min-max', scale: RAMP });
    assert.deepEqual(rgba(c.pixels)[0], [255, 0, 255, 255]);
    assert.deepEqual(c.domain, [1, 2]);
    assert.deepEqual(indices(c.pixels, 3), [['X', 0, 255]]);
    assert.ok(Number.isNaN(c.rowSums[0]));
    const inf = colourMatrix(matrix(1, 3, [-Infinity, Infinity, 1]), { domain: 'min-max', scale: RAMP });
    assert.deepEqual(indices(inf.pixels, 3).flat().slice(0, 2), ['X', 'X']);
  });

  it('per-row colours stretch each row; a row with one value shows at the top', () => {
    const c = colourMatrix(matrix(3, 3, [1, 2, 3, 10, 20, 30, 5, 9, 9], { maskShift: 0 }),
      { domain: 'zero-max', colourMode: 'row', scale: RAMP });
    // Row 0 sees one value; rows 1 and 2 span their own ranges.
    assert.deepEqual(indices(c.pixels, 3), [[255, 'M', 'M'], [0, 255, 'M'], [0, 255, 255]]);
    assert.deepEqual(c.domain, [0, 20], 'the linear domain is still reported');
    const flat = colourMatrix(matrix(1, 3, [1, 2, 3]), { domain: 'zero-max', colourMode: 'row', scale: RAMP });
    assert.deepEqual(indices(flat.pixels, 3), [[0, 128, 255]]);
  });

  it('reads from `offset` and multiplies by `scale` (one head of several, scaled scores)', () => {
    const values = Float32Array.from([9, 9, 9, 9, 1, 2, 3, 4]);
    const data = { values, rows: 2, cols: 2, offset: 4, scale: 0.5, maskShift: null };
    const c = colourMatrix(data, { domain: 'min-max', scale: RAMP });
    assert.deepEqual(c.domain, [0.5, 2]);
    assert.deepEqual(indices(c.pixels, 2), [[0, 85], [170, 255]]);
    assert.deepEqual(Array.from(rowStats(data, 1, 2).sums), [3.5]);
  });

  it('paints the page\'s real scales: viridis ends for weights, RdBu around 0 for context values', () => {
    const w = colourMatrix(matrix(1, 2, [0, 1]), { domain: 'zero-max', scale: SCALES.weights });
    assert.deepEqual(rgba(w.pixels), [[0x44, 0x01, 0x54, 255], [0xfd, 0xe7, 0x25, 255]]);
    const s = colourMatrix(matrix(1, 3, [-1, 0, 1]), { domain: 'symmetric', scale: SCALES.signed });
    const [blue, middle, red] = rgba(s.pixels);
    assert.ok(blue[2] > blue[0] && red[0] > red[2], `below 0 blue ${blue}, above 0 red ${red}`);
    assert.ok(Math.min(...middle.slice(0, 3)) > 230, `0 is near white: ${middle}`);
  });
});
