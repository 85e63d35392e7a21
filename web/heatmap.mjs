// One labelled matrix on a canvas, with hover, keyboard focus, a selected
// row, a colour legend and a DOM table mirroring the numbers.
//
// Why it stays smooth at T = 1024: the matrix is coloured once per data
// change into an offscreen image with one pixel per cell (a lookup table per
// colour scale, one typed-array pass), and every repaint only scales that
// image into the plot. Hover, focus and selection live on a second,
// transparent canvas on top, so moving the pointer redraws a few rectangles
// and never the heatmap.
//
// Masking is described by one number, `maskShift`: cell (i, j) is masked
// when j > i + maskShift (0 for the book's triangle, keyLength − queryLength
// for bottom-right alignment, null for no mask). Panels know the mask from
// the settings, not from the values, so a weight that dropout zeroed is
// never mistaken for a masked one.

import { INVALID_RGBA, MASKED, MASKED_RGBA, drawLegendBar, rowSumColour, scaleIndex } from './colors.mjs';
import { formatValue } from './format.mjs';

const FONT_FAMILY = 'system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';

/** Cells a DOM table may hold before it is left out (the canvas stays keyboard-readable). */
export const TABLE_LIMIT = 1600;

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
   *   domain      'zero-max' | 'min-max' | 'symmetric'
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
   *   onHover(cell | null, heatmap, how)   cell = { i, j } (j null on a row label)
   *   onSelect(row | null, heatmap)
   *   explain(i, j)   optional extra tooltip line for a cell
   */
  constructor(root, options) {
    this.root = root;
    this.options = {
      domain: 'min-max', colourMode: 'linear', rowSums: false, maskedText: '', compact: false, maxCell: 64,
      tableLimit: TABLE_LIMIT, rowAxis: 'query', colAxis: 'key', ...options,
    };
    this.fontPx = this.options.compact ? 9 : 11;
    this.data = null;
    this.hover = null;
    this.selectedRow = null;
    this.focusCell = null;
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
    this.overlay = doc.createElement('canvas');
    this.overlay.className = 'overlay';
    this.overlay.tabIndex = 0;
    this.overlay.setAttribute('role', 'application');
    this.overlay.setAttribute('aria-roledescription', 'heatmap');
    this.tooltip = doc.createElement('div');
    this.tooltip.className = 'tooltip';
    this.tooltip.hidden = true;
    // The page's inspector (a live region) announces cells; the tooltip
    // would repeat it.
    this.tooltip.setAttribute('aria-hidden', 'true');
    this.plotBox.append(this.base, this.overlay, this.tooltip);

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

    this.overlay.addEventListener('pointermove', (e) => this.#onPointer(e));
    // Touch screens have no hover: a tap shows the cell as hover would.
    this.overlay.addEventListener('pointerdown', (e) => { if (e.pointerType !== 'mouse') this.#onPointer(e); });
    this.overlay.addEventListener('pointerleave', () => this.options.onHover?.(null, this, 'pointer'));
    this.overlay.addEventListener('click', (e) => this.#onClick(e));
    this.overlay.addEventListener('keydown', (e) => this.#onKey(e));
    this.overlay.addEventListener('focus', () => {
      if (!this.data) return;
      this.focusCell ??= { i: this.selectedRow ?? 0, j: 0 };
      this.#clampFocus();
      this.options.onHover?.({ ...this.focusCell }, this, 'keyboard');
    });
    this.overlay.addEventListener('blur', () => this.options.onHover?.(null, this, 'keyboard'));
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
    // The tooltip spoke of the old numbers; the next hover brings it back.
    this.tooltip.hidden = true;
    if (this.focusCell) this.#clampFocus();
    if (this.selectedRow !== null && this.selectedRow >= rows) this.selectedRow = null;
    const { name } = this.options;
    this.overlay.setAttribute('aria-label',
      `${name}: ${rows} ${this.options.rowAxis} rows by ${cols} ${this.options.colAxis} columns. ` +
      'Arrow keys move between cells, Enter selects the row.');
    if (this.visible || rows * cols <= EAGER_CELLS) {
      this.refresh();
    } else {
      // Never show the previous matrix under the new labels.
      for (const c of [this.base, this.overlay]) c.getContext('2d').clearRect(0, 0, c.width, c.height);
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
    this.#buildTable();
    this.dirty = false;
    idleQueue.delete(this);
    this.render();
  }

  /** Whether (i, j) is masked. */
  masked(i, j) {
    const s = this.data.maskShift;
    return s !== null && j > i + s;
  }

  /** The value shown at (i, j): −∞ or 0 for masked cells as the panel says. */
  value(i, j) {
    const d = this.data;
    if (this.masked(i, j) && this.options.maskedText !== '') return -Infinity;
    return d.values[d.offset + i * d.cols + j] * d.scale;
  }

  /** Sum of the visible cells of row i (float64). */
  rowSum(i) {
    if (!this.dirty) return this.rowSums[i];
    const d = this.data;
    const end = d.maskShift === null ? d.cols : Math.max(0, Math.min(d.cols, i + d.maskShift + 1));
    let s = 0;
    for (let j = 0; j < end; j++) s += d.values[d.offset + i * d.cols + j] * d.scale;
    return s;
  }

  // Domain, row sums and the one-pixel-per-cell image, in two passes.
  #colour() {
    const { values, rows, cols, offset, scale, maskShift } = this.data;
    const visibleEnd = (i) => (maskShift === null ? cols : Math.max(0, Math.min(cols, i + maskShift + 1)));
    let lo = Infinity;
    let hi = -Infinity;
    const sums = new Float64Array(rows);
    const rowMin = new Float64Array(rows);
    const rowMax = new Float64Array(rows);
    for (let i = 0; i < rows; i++) {
      const base = offset + i * cols;
      const end = visibleEnd(i);
      let s = 0;
      let mn = Infinity;
      let mx = -Infinity;
      for (let j = 0; j < end; j++) {
        const v = values[base + j] * scale;
        s += v;
        if (v < mn) mn = v;
        if (v > mx) mx = v;
      }
      if (mn < lo) lo = mn;
      if (mx > hi) hi = mx;
      sums[i] = s;
      rowMin[i] = mn;
      rowMax[i] = mx;
    }
    if (!Number.isFinite(lo)) { lo = 0; hi = 1; }
    switch (this.options.domain) {
      case 'zero-max': lo = 0; if (!(hi > 0)) hi = 1; break;
      case 'symmetric': { const a = Math.max(Math.abs(lo), Math.abs(hi)) || 1; lo = -a; hi = a; break; }
      default: if (!(hi > lo)) { lo -= 0.5; hi += 0.5; }
    }
    this.domain = [lo, hi];
    this.rowSums = sums;
    this.rowRange = [rowMin, rowMax];
    const perRow = this.options.colourMode === 'row';

    const doc = this.root.ownerDocument;
    if (!this.image || this.image.width !== cols || this.image.height !== rows) {
      this.image = doc.createElement('canvas');
      this.image.width = cols;
      this.image.height = rows;
    }
    const ictx = this.image.getContext('2d');
    const img = ictx.createImageData(cols, rows);
    const px = new Uint32Array(img.data.buffer);
    const lut = this.options.scale.rgba;
    for (let i = 0; i < rows; i++) {
      const base = offset + i * cols;
      const row = i * cols;
      const end = visibleEnd(i);
      // A row with one visible value (or all equal) shows at the top.
      const rlo = perRow ? (rowMax[i] > rowMin[i] ? rowMin[i] : rowMax[i] - 1) : lo;
      const k = 255 / ((perRow ? rowMax[i] : hi) - rlo || 1);
      for (let j = 0; j < end; j++) {
        const v = values[base + j] * scale;
        if (v === v && v !== Infinity && v !== -Infinity) {
          const t = (v - rlo) * k;
          px[row + j] = lut[t <= 0 ? 0 : t >= 255 ? 255 : (t + 0.5) | 0];
        } else {
          px[row + j] = INVALID_RGBA;
        }
      }
      px.fill(MASKED_RGBA, row + end, row + cols);
    }
    ictx.putImageData(img, 0, 0);

    this.legendLo.textContent = perRow ? 'row min' : formatValue(lo, 2);
    this.legendHi.textContent = perRow ? 'row max' : formatValue(hi, 2);
    this.legendMasked.hidden = maskShift === null;
    this.legendMaskedText.textContent = this.options.maskedText
      ? `masked (${this.options.maskedText})` : 'masked (future): empty';
  }

  #measureLabels() {
    const { rowLabels, colLabels } = this.data;
    const ctx = this.base.getContext('2d');
    ctx.font = `${this.fontPx}px ${FONT_FAMILY}`;
    // Widths of the longest labels decide the margins; at most a few
    // hundred distinct lengths matter, so measure the longest by characters.
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

  #buildTable() {
    const { rows, cols, rowNames, colNames, rowLabels, colLabels } = this.data;
    const doc = this.root.ownerDocument;
    this.tableBox.replaceChildren();
    if (rows * cols > this.options.tableLimit) {
      const note = doc.createElement('p');
      note.className = 'table-note';
      note.textContent = `No numbers table above ${this.options.tableLimit} cells ` +
        `(${rows} × ${cols}): focus the heatmap and use the arrow keys, or hover.`;
      this.tableBox.append(note);
      this.table = null;
      return;
    }
    const table = doc.createElement('table');
    table.className = 'matrix';
    const caption = doc.createElement('caption');
    caption.textContent = `${this.options.name} (rows: ${this.options.rowAxis}, columns: ${this.options.colAxis})`;
    const thead = doc.createElement('thead');
    const head = doc.createElement('tr');
    const corner = doc.createElement('th');
    corner.scope = 'col';
    corner.textContent = `${this.options.rowAxis} \\ ${this.options.colAxis}`;
    head.append(corner);
    for (let j = 0; j < cols; j++) {
      const th = doc.createElement('th');
      th.scope = 'col';
      th.textContent = colLabels[j];
      th.title = colNames[j];
      head.append(th);
    }
    if (this.options.rowSums) {
      const th = doc.createElement('th');
      th.scope = 'col';
      th.textContent = 'row sum';
      head.append(th);
    }
    thead.append(head);
    const tbody = doc.createElement('tbody');
    for (let i = 0; i < rows; i++) {
      const tr = doc.createElement('tr');
      const th = doc.createElement('th');
      th.scope = 'row';
      th.textContent = rowLabels[i];
      th.title = rowNames[i];
      tr.append(th);
      for (let j = 0; j < cols; j++) {
        const td = doc.createElement('td');
        td.dataset.i = i;
        td.dataset.j = j;
        if (this.masked(i, j)) {
          td.dataset.masked = 'true';
          td.textContent = this.options.maskedText;
          if (this.options.maskedText === '') td.setAttribute('aria-label', 'masked');
        } else {
          const v = this.value(i, j);
          td.dataset.value = String(v);
          td.textContent = formatValue(v);
        }
        tr.append(td);
      }
      if (this.options.rowSums) {
        const td = doc.createElement('td');
        td.className = 'row-sum';
        td.dataset.i = i;
        td.dataset.rowSum = String(this.rowSums[i]);
        td.textContent = formatValue(this.rowSums[i]);
        tr.append(td);
      }
      tbody.append(tr);
    }
    table.append(caption, thead, tbody);
    this.tableBox.append(table);
    this.table = table;
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

    for (const c of [this.base, this.overlay]) {
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
    this.drawOverlay();
  }

  #hatchMasked(ctx) {
    const { left, top, cw, ch, plotW } = this.layout;
    const { rows, cols, maskShift } = this.data;
    ctx.save();
    ctx.beginPath();
    for (let i = 0; i < rows; i++) {
      const j0 = Math.max(0, i + maskShift + 1);
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

  /** Repaints hover, focus and the selected row (cheap: a few rectangles). */
  drawOverlay() {
    const L = this.layout;
    if (!L || this.dirty) return;
    const dpr = globalThis.devicePixelRatio || 1;
    const ctx = this.overlay.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, L.cssW, L.cssH);
    const { left, top, plotW, plotH, cw, ch } = L;
    const { rows, cols } = this.data;
    if (this.selectedRow !== null && this.selectedRow < rows) {
      const y = top + this.selectedRow * ch;
      const h = Math.max(ch, 2);
      // Dim the other rows so the chosen one stands out even at T = 1024.
      ctx.fillStyle = 'rgba(255, 255, 255, 0.45)';
      ctx.fillRect(left, top, plotW, y - top);
      ctx.fillRect(left, y + h, plotW, top + plotH - y - h);
      ctx.strokeStyle = '#d9480f';
      ctx.lineWidth = 2;
      ctx.strokeRect(left - 1, y - 1, plotW + 2, h + 2);
      ctx.fillStyle = '#d9480f';
      ctx.fillRect(0, y + h / 2 - 1.5, 4, 3);
    }
    const cell = this.hover;
    if (cell && cell.i < rows) {
      const y = top + cell.i * ch;
      ctx.fillStyle = 'rgba(0, 0, 0, 0.08)';
      ctx.fillRect(left, y, plotW, Math.max(ch, 1));
      if (cell.j !== null && cell.j < cols) {
        const x = left + cell.j * cw;
        ctx.fillRect(x, top, Math.max(cw, 1), plotH);
        // At least 6 px, so a sub-pixel cell still shows where it is.
        const w = Math.max(cw, 6);
        const h = Math.max(ch, 6);
        const cx = x + cw / 2 - w / 2;
        const cy = y + ch / 2 - h / 2;
        ctx.lineWidth = 3;
        ctx.strokeStyle = '#000';
        ctx.strokeRect(cx, cy, w, h);
        ctx.lineWidth = 1.5;
        ctx.strokeStyle = '#fff';
        ctx.strokeRect(cx, cy, w, h);
      }
    }
  }

  /** Hover from this or a linked panel; tooltip only on the source panel. */
  setHover(cell, { tooltip = false } = {}) {
    this.hover = cell && this.data && cell.i < this.data.rows
      ? { i: cell.i, j: cell.j !== null && cell.j < this.data.cols ? cell.j : null } : null;
    this.drawOverlay();
    this.#tooltip(tooltip ? this.hover : null);
  }

  setSelectedRow(i) {
    this.selectedRow = i;
    this.drawOverlay();
  }

  #tooltip(cell) {
    const tip = this.tooltip;
    if (!cell || cell.j === null || !this.layout) {
      tip.hidden = true;
      return;
    }
    const { i, j } = cell;
    const d = this.data;
    const o = this.options;
    const lines = [
      `${o.rowAxis} ${d.rowNames[i]} \u2192 ${o.colAxis} ${d.colNames[j]}`,
      `${o.name}: ${this.masked(i, j) ? (o.maskedText ? o.maskedText : 'masked (0)') : formatValue(this.value(i, j))}`,
      `row sum ${formatValue(this.rowSums[i])}`,
    ];
    const extra = o.explain?.(i, j);
    if (extra) lines.push(extra);
    tip.replaceChildren(...lines.map((text) => {
      const div = tip.ownerDocument.createElement('div');
      div.textContent = text;
      return div;
    }));
    tip.hidden = false;
    const L = this.layout;
    const x = L.left + (j + 1) * L.cw + 8;
    const y = L.top + i * L.ch;
    const w = tip.offsetWidth;
    const left = x + w > L.cssW ? Math.max(0, L.left + j * L.cw - w - 8) : x;
    tip.style.left = `${left}px`;
    tip.style.top = `${Math.max(0, Math.min(y, L.cssH - tip.offsetHeight))}px`;
  }

  /** The cell under a pointer event, { i, j } (j null over a row label), or null. */
  hit(event) {
    const L = this.layout;
    if (!L || !this.data) return null;
    const r = this.overlay.getBoundingClientRect();
    const x = event.clientX - r.left;
    const y = event.clientY - r.top;
    if (y < L.top || y >= L.top + L.plotH) return null;
    const i = Math.min(this.data.rows - 1, Math.floor((y - L.top) / L.ch));
    if (x < L.left) return { i, j: null };
    if (x >= L.left + L.plotW) return null;
    return { i, j: Math.min(this.data.cols - 1, Math.floor((x - L.left) / L.cw)) };
  }

  #onPointer(event) {
    const cell = this.hit(event);
    this.overlay.classList.toggle('over-label', cell !== null && cell.j === null);
    this.options.onHover?.(cell, this, 'pointer');
  }

  #onClick(event) {
    const cell = this.hit(event);
    if (!cell) return;
    this.options.onSelect?.(this.selectedRow === cell.i ? null : cell.i, this);
  }

  #clampFocus() {
    const f = this.focusCell;
    f.i = Math.max(0, Math.min(this.data.rows - 1, f.i));
    f.j = Math.max(0, Math.min(this.data.cols - 1, f.j));
  }

  #onKey(event) {
    if (!this.data) return;
    const f = this.focusCell ?? { i: 0, j: 0 };
    const big = event.ctrlKey || event.metaKey ? 10 : 1;
    switch (event.key) {
      case 'ArrowUp': f.i -= big; break;
      case 'ArrowDown': f.i += big; break;
      case 'ArrowLeft': f.j -= big; break;
      case 'ArrowRight': f.j += big; break;
      case 'PageUp': f.i -= 10; break;
      case 'PageDown': f.i += 10; break;
      case 'Home': f.j = 0; if (event.ctrlKey) f.i = 0; break;
      case 'End': f.j = this.data.cols - 1; if (event.ctrlKey) f.i = this.data.rows - 1; break;
      case 'Enter':
      case ' ':
        event.preventDefault();
        this.options.onSelect?.(this.selectedRow === f.i ? null : f.i, this);
        return;
      case 'Escape':
        this.options.onSelect?.(null, this);
        return;
      default:
        return;
    }
    event.preventDefault();
    this.focusCell = f;
    this.#clampFocus();
    this.options.onHover?.({ ...this.focusCell }, this, 'keyboard');
  }
}
