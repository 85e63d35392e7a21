// One labelled matrix on a canvas: the picture, its legend and axis labels,
// put together from three parts:
//   colour-matrix.mjs    numbers → one RGBA pixel per cell (pure, no DOM)
//   matrix-table.mjs     the same numbers as an HTML table
//   heatmap-overlay.mjs  hover, keyboard focus, the selected row, the tooltip
//
// Why it stays smooth at T = 1024: the matrix is coloured once per data
// change into an offscreen image with one pixel per cell, and every repaint
// only scales that image into the plot. Hover, focus and selection live on
// the overlay canvas on top, so moving the pointer never redraws this one.
//
// The mask comes from the settings as one number, `maskShift` (mask.mjs),
// never from the values, so a weight that dropout zeroed is never mistaken
// for a masked one.

import { MASKED, drawLegendBar, rowSumColour, scaleIndex } from './colors.mjs';
import { colourMatrix, rowStats } from './colour-matrix.mjs';
import { formatValue } from '../core/format.mjs';
import { HeatmapOverlay } from './heatmap-overlay.mjs';
import { isMasked, visibleEnd } from '../core/mask.mjs';
import { TABLE_LIMIT, matrixTable } from './matrix-table.mjs';

const FONT_FAMILY = 'system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';

/** Matrices up to this many cells are coloured at once even off screen (cheap). */
const EAGER_CELLS = 64 * 64;

// Big matrices off screen are coloured when they scroll into view or when
// the browser is idle, so a change at T = 1024 repaints what is visible in
// one go and the rest without blocking input.
const idleQueue = new Set();
let idleScheduled = false;
const whenIdle = globalThis.requestIdleCallback ??
  ((f) => setTimeout(() => f({ didTimeout: true, timeRemaining: () => 0 }), 50));

function drainIdle(deadline) {
  idleScheduled = false;
  // At least one per call, so a page that is never idle still catches up.
  let first = true;
  for (const hm of idleQueue) {
    if (!first && deadline.timeRemaining() < 6) break;
    first = false;
    idleQueue.delete(hm);
    if (hm.dirty) hm.refresh();
  }
  if (idleQueue.size) scheduleIdle();
}

function scheduleIdle() {
  if (idleScheduled) return;
  idleScheduled = true;
  whenIdle(drainIdle, { timeout: 300 });
}

const visibility = typeof IntersectionObserver === 'function'
  ? new IntersectionObserver((entries) => {
    for (const entry of entries) {
      const hm = entry.target.heatmap;
      hm.visible = entry.isIntersecting;
      if (hm.visible && hm.dirty) hm.refresh();
    }
  }, { rootMargin: '200px' })
  : null;

export class Heatmap {
  /**
   * root: an empty element to build into. options:
   *   name        accessible name ("Softmax weights")
   *   scale       one of colors.SCALES
   *   domain      'zero-max' | 'min-max' | 'symmetric' (colour-matrix.mjs)
   *   colourMode  'linear' (the domain) or 'row' (each row stretched from its
   *               smallest to its largest visible value: a long sequence's
   *               weights are all near 1/T, which a linear scale cannot tell
   *               apart)
   *   rowSums     draw a Σ column (probability panels)
   *   maskedText  what a masked cell says ('−∞' or '' for "empty")
   *   compact     small multiple: fewer labels, no numbers in cells
   *   maxCell     largest cell edge in CSS pixels
   *   tableLimit  most cells mirrored in the DOM table
   *   rowAxis, colAxis   axis names for tooltips ("query", "key")
   *   onHover, onSelect, explain   see heatmap-overlay.mjs
   */
  constructor(root, options) {
    this.root = root;
    this.options = {
      domain: 'min-max', colourMode: 'linear', rowSums: false, maskedText: '', compact: false, maxCell: 64,
      tableLimit: TABLE_LIMIT, rowAxis: 'query', colAxis: 'key', ...options,
    };
    this.fontPx = this.options.compact ? 9 : 11;
    this.data = null;
    this.layout = null;
    this.dirty = false;
    this.visible = visibility === null;
    this.#build();
    this.root.heatmap = this;
    visibility?.observe(this.root);
  }

  #build() {
    const o = this.options;
    const doc = this.root.ownerDocument;
    this.root.classList.add('heatmap');
    if (o.compact) this.root.classList.add('compact');

    this.plotBox = doc.createElement('div');
    this.plotBox.className = 'plot';
    this.base = doc.createElement('canvas');
    this.base.className = 'base';
    // The overlay is the interactive element; the base is pure picture.
    this.base.setAttribute('aria-hidden', 'true');
    this.overlay = new HeatmapOverlay(this);
    this.plotBox.append(this.base, this.overlay.canvas, this.overlay.tooltip);

    this.legend = doc.createElement('div');
    this.legend.className = 'legend';
    this.legendLo = doc.createElement('span');
    this.legendBar = doc.createElement('canvas');
    this.legendBar.width = 128;
    this.legendBar.height = 10;
    this.legendBar.setAttribute('aria-hidden', 'true');
    this.legendHi = doc.createElement('span');
    this.legendMasked = doc.createElement('span');
    this.legendMasked.className = 'legend-masked';
    const swatch = doc.createElement('span');
    swatch.className = 'swatch masked-swatch';
    swatch.setAttribute('aria-hidden', 'true');
    this.legendMaskedText = doc.createElement('span');
    this.legendMasked.append(swatch, this.legendMaskedText);
    this.legend.append(this.legendLo, this.legendBar, this.legendHi, this.legendMasked);
    drawLegendBar(this.legendBar, o.scale);

    this.tableBox = doc.createElement('div');
    this.tableBox.className = 'table-box';
    this.root.append(this.plotBox, this.legend, this.tableBox);
  }

  /**
   * New numbers. values: Float32Array holding the matrix row-major from
   * `offset`; shown value = values[offset + i·cols + j] · scale.
   * rowLabels/colLabels: short axis text; rowNames/colNames: exact names.
   */
  setData({
    values, rows, cols, offset = 0, scale = 1, maskShift = null,
    rowLabels, colLabels, rowNames = rowLabels, colNames = colLabels,
  }) {
    this.data = { values, rows, cols, offset, scale, maskShift, rowLabels, colLabels, rowNames, colNames };
    this.dirty = true;
    this.overlay.dataChanged();
    if (this.visible || rows * cols <= EAGER_CELLS) {
      this.refresh();
    } else {
      // Never show the previous matrix under the new labels.
      this.base.getContext('2d').clearRect(0, 0, this.base.width, this.base.height);
      this.overlay.clear();
      this.tableBox.replaceChildren();
      idleQueue.add(this);
      scheduleIdle();
    }
  }

  /** Stops observing; for heatmaps removed from the page (the heads grid). */
  dispose() {
    visibility?.unobserve(this.root);
    idleQueue.delete(this);
    this.data = null;
  }

  /** Changes options (e.g. colourMode); they apply from the next setData. */
  setOptions(options) {
    Object.assign(this.options, options);
  }

  /** Colours, labels, table and paint for the current data. */
  refresh() {
    if (!this.data) return;
    this.#colour();
    this.#measureLabels();
    this.tableBox.replaceChildren(matrixTable(this));
    this.dirty = false;
    idleQueue.delete(this);
    this.render();
  }

  /** Whether (i, j) is masked. */
  masked(i, j) {
    return isMasked(i, j, this.data.maskShift);
  }

  /** The value shown at (i, j): −∞ or 0 for masked cells as the panel says. */
  value(i, j) {
    const d = this.data;
    if (this.masked(i, j) && this.options.maskedText !== '') return -Infinity;
    return d.values[d.offset + i * d.cols + j] * d.scale;
  }

  /** Sum of the visible cells of row i (float64). */
  rowSum(i) {
    return this.dirty ? rowStats(this.data, i, i + 1).sums[0] : this.rowSums[i];
  }

  /** Hover from this or a linked panel; tooltip only on the source panel. */
  setHover(cell, options) {
    this.overlay.setHover(cell, options);
  }

  setSelectedRow(i) {
    this.overlay.setSelectedRow(i);
  }

  // The one-pixel-per-cell image, the domain and row sums, the legend's text.
  #colour() {
    const { rows, cols, maskShift } = this.data;
    const o = this.options;
    const c = colourMatrix(this.data, o);
    this.domain = c.domain;
    this.rowSums = c.rowSums;
    this.rowRange = [c.rowMin, c.rowMax];
    if (!this.image || this.image.width !== cols || this.image.height !== rows) {
      this.image = this.root.ownerDocument.createElement('canvas');
      this.image.width = cols;
      this.image.height = rows;
    }
    this.image.getContext('2d').putImageData(new ImageData(new Uint8ClampedArray(c.pixels.buffer), cols, rows), 0, 0);

    const perRow = o.colourMode === 'row';
    this.legendLo.textContent = perRow ? 'row min' : formatValue(c.domain[0], 2);
    this.legendHi.textContent = perRow ? 'row max' : formatValue(c.domain[1], 2);
    this.legendMasked.hidden = maskShift === null;
    this.legendMaskedText.textContent = o.maskedText ? `masked (${o.maskedText})` : 'masked (future): empty';
  }

  #measureLabels() {
    const { rowLabels, colLabels } = this.data;
    const ctx = this.base.getContext('2d');
    ctx.font = `${this.fontPx}px ${FONT_FAMILY}`;
    // The widest label decides the margin. Labels repeat on long inputs, so
    // measure each distinct one once, and at most 400 of them.
    const widest = (labels) => {
      let best = 0;
      const seen = new Set();
      for (const l of labels) {
        if (seen.has(l)) continue;
        seen.add(l);
        if (seen.size > 400) break;
        best = Math.max(best, ctx.measureText(l).width);
      }
      return Math.ceil(best);
    };
    this.rowLabelWidth = widest(rowLabels);
    this.colLabelWidth = widest(colLabels);
  }

  /** Repaints the base canvas for the current size (no recolouring). */
  render() {
    if (!this.data || this.dirty) return;
    const o = this.options;
    const { rows, cols } = this.data;
    const dpr = globalThis.devicePixelRatio || 1;
    const cssW = Math.max(120, Math.floor(this.root.clientWidth || 300));
    const font = this.fontPx;
    const pad = 4;
    const left = Math.min(this.rowLabelWidth, o.compact ? 48 : 84) + 6;
    const top = Math.min(this.colLabelWidth, o.compact ? 40 : 64) + 6;
    const sumWide = 48;
    let sumW = o.rowSums ? sumWide : 0;
    let avail = cssW - left - sumW - pad;
    const square = Math.min(avail, Math.max(rows, cols) * o.maxCell);
    let plotW = Math.min(avail, cols * o.maxCell);
    let plotH = Math.min(square, rows * o.maxCell);
    if (o.rowSums && plotH / rows < 14) {
      // No room for numbers in the Σ column: a colour strip instead.
      sumW = 14;
      avail = cssW - left - sumW - pad;
      plotW = Math.min(avail, cols * o.maxCell);
      plotH = Math.min(Math.min(avail, Math.max(rows, cols) * o.maxCell), rows * o.maxCell);
    }
    plotW = Math.max(10, Math.floor(plotW));
    plotH = Math.max(10, Math.floor(plotH));
    const cssH = top + plotH + pad;
    const cw = plotW / cols;
    const ch = plotH / rows;
    this.layout = { left, top, plotW, plotH, cw, ch, sumW, cssW, cssH };

    for (const c of [this.base, this.overlay.canvas]) {
      c.width = Math.round(cssW * dpr);
      c.height = Math.round(cssH * dpr);
      c.style.width = `${cssW}px`;
      c.style.height = `${cssH}px`;
    }
    this.plotBox.style.height = `${cssH}px`;
    // For tests and tools: the plot rectangle in canvas pixels.
    Object.assign(this.base.dataset, {
      plotX: Math.round(left * dpr), plotY: Math.round(top * dpr),
      plotW: Math.round(plotW * dpr), plotH: Math.round(plotH * dpr), rows, cols,
    });

    const ctx = this.base.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, cssW, cssH);
    // Upscaling: crisp cells. Downscaling (more cells than pixels): let the
    // browser filter, so a thin diagonal does not vanish between samples.
    ctx.imageSmoothingEnabled = cw * dpr < 1 || ch * dpr < 1;
    ctx.imageSmoothingQuality = 'medium';
    ctx.drawImage(this.image, left, top, plotW, plotH);

    if (this.data.maskShift !== null && cw >= 8 && ch >= 8) this.#hatchMasked(ctx);
    if (cw >= 6 && ch >= 6) this.#gridLines(ctx);
    if (!o.compact) this.#cellNumbers(ctx);
    if (o.rowSums) this.#sumColumn(ctx);
    this.#axisLabels(ctx, font);
    this.overlay.draw();
  }

  #hatchMasked(ctx) {
    const { left, top, cw, ch, plotW } = this.layout;
    const { rows, cols, maskShift } = this.data;
    ctx.save();
    ctx.beginPath();
    for (let i = 0; i < rows; i++) {
      const j0 = visibleEnd(i, cols, maskShift);
      if (j0 >= cols) continue;
      ctx.rect(left + j0 * cw, top + i * ch, (cols - j0) * cw, ch);
    }
    ctx.clip();
    ctx.strokeStyle = MASKED.hatch;
    ctx.lineWidth = 1;
    ctx.beginPath();
    const h = rows * ch;
    for (let x = -h; x < plotW; x += 7) {
      ctx.moveTo(left + x, top + h);
      ctx.lineTo(left + x + h, top);
    }
    ctx.stroke();
    ctx.restore();
  }

  #gridLines(ctx) {
    const { left, top, cw, ch, plotW, plotH } = this.layout;
    const { rows, cols } = this.data;
    ctx.strokeStyle = 'rgba(255, 255, 255, 0.85)';
    ctx.lineWidth = 1;
    ctx.beginPath();
    for (let j = 1; j < cols; j++) {
      const x = Math.round(left + j * cw) + 0.5;
      ctx.moveTo(x, top);
      ctx.lineTo(x, top + plotH);
    }
    for (let i = 1; i < rows; i++) {
      const y = Math.round(top + i * ch) + 0.5;
      ctx.moveTo(left, y);
      ctx.lineTo(left + plotW, y);
    }
    ctx.stroke();
  }

  #cellNumbers(ctx) {
    const { left, top, cw, ch } = this.layout;
    const { rows, cols } = this.data;
    if (ch < 13 || cw < 24) return;
    const px = Math.max(8, Math.min(12, Math.floor(Math.min(cw / 3.4, ch / 1.6))));
    ctx.font = `${px}px ${FONT_FAMILY}`;
    // The widest number this panel prints: a minus sign only if it has one.
    const probe = this.domain[0] < 0 ? -0.5 : 0.5;
    let digits = 4;
    while (digits > 1 && ctx.measureText(formatValue(probe, digits)).width > cw - 3) digits--;
    if (ctx.measureText(formatValue(probe, digits)).width > cw - 3) return;
    ctx.textAlign = 'center';
    ctx.textBaseline = 'middle';
    const scale = this.options.scale;
    const [lo, hi] = this.domain;
    for (let i = 0; i < rows; i++) {
      for (let j = 0; j < cols; j++) {
        const x = left + (j + 0.5) * cw;
        const y = top + (i + 0.5) * ch;
        if (this.masked(i, j)) {
          if (!this.options.maskedText) continue;
          ctx.fillStyle = '#4a4a5a';
          ctx.fillText(this.options.maskedText, x, y);
          continue;
        }
        const v = this.value(i, j);
        const idx = this.options.colourMode === 'row'
          ? scaleIndex(v, this.rowRange[0][i], this.rowRange[1][i]) : scaleIndex(v, lo, hi);
        ctx.fillStyle = scale.light[idx] ? '#111' : '#fff';
        ctx.fillText(formatValue(v, digits), x, y);
      }
    }
  }

  #sumColumn(ctx) {
    const { left, top, ch, plotW, sumW } = this.layout;
    const { rows } = this.data;
    const x0 = left + plotW + 4;
    const w = sumW - 6;
    for (let i = 0; i < rows; i++) {
      ctx.fillStyle = rowSumColour(this.rowSums[i]);
      ctx.fillRect(x0, top + i * ch, w, Math.max(ch, 1));
    }
    ctx.fillStyle = '#333';
    ctx.textAlign = 'center';
    ctx.textBaseline = 'bottom';
    ctx.font = `${this.fontPx}px ${FONT_FAMILY}`;
    ctx.fillText('\u03a3', x0 + w / 2, top - 3);
    if (ch >= 14 && sumW > 20) {
      ctx.textBaseline = 'middle';
      ctx.font = `${Math.min(11, Math.floor(ch / 1.6))}px ${FONT_FAMILY}`;
      ctx.fillStyle = '#111';
      for (let i = 0; i < rows; i++) {
        ctx.fillText(formatValue(this.rowSums[i], 2), x0 + w / 2, top + (i + 0.5) * ch);
      }
    }
  }

  #axisLabels(ctx, font) {
    const { left, top, cw, ch } = this.layout;
    const { rows, cols, rowLabels, colLabels } = this.data;
    ctx.font = `${font}px ${FONT_FAMILY}`;
    ctx.fillStyle = '#333';
    // Thin labels to one per (font + 3) pixels: every label when cells are
    // big, every k-th on long inputs.
    const rowStep = Math.max(1, Math.ceil((font + 3) / ch));
    const colStep = Math.max(1, Math.ceil((font + 3) / cw));
    const maxW = left - 6;
    ctx.textAlign = 'right';
    ctx.textBaseline = 'middle';
    for (let i = 0; i < rows; i += rowStep) {
      ctx.fillText(rowLabels[i], left - 4, top + (i + 0.5) * ch, maxW);
    }
    ctx.save();
    ctx.translate(0, top - 4);
    ctx.rotate(-Math.PI / 2);
    ctx.textAlign = 'left';
    for (let j = 0; j < cols; j += colStep) {
      // Rotated: x runs up the page, y to the right.
      ctx.fillText(colLabels[j], 0, left + (j + 0.5) * cw, top - 8);
    }
    ctx.restore();
  }
}
