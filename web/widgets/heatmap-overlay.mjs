// The interactive layer of a heatmap: a transparent canvas on top of the
// picture that takes the pointer and the keyboard, draws hover, focus and
// the selected row, and places the tooltip. Moving the pointer redraws a
// few rectangles here and never the heatmap below.
//
// It reads its heatmap's data, layout (set by Heatmap.render) and numbers
// (masked(), value(), rowSums), and reports through the heatmap's options:
//   onHover(cell | null, heatmap, 'pointer' | 'keyboard')   cell = { i, j }, j null on a row label
//   onSelect(row | null, heatmap)
//   explain(i, j)   an optional extra tooltip line

import { formatValue } from '../core/format.mjs';

export class HeatmapOverlay {
  constructor(heatmap) {
    this.map = heatmap;
    this.hover = null;
    this.selectedRow = null;
    this.focusCell = null;
    const doc = heatmap.root.ownerDocument;
    this.canvas = doc.createElement('canvas');
    this.canvas.className = 'overlay';
    this.canvas.tabIndex = 0;
    this.canvas.setAttribute('role', 'application');
    this.canvas.setAttribute('aria-roledescription', 'heatmap');
    this.tooltip = doc.createElement('div');
    this.tooltip.className = 'tooltip';
    this.tooltip.hidden = true;
    // The page's inspector (a live region) announces cells; the tooltip
    // would repeat it.
    this.tooltip.setAttribute('aria-hidden', 'true');

    const c = this.canvas;
    c.addEventListener('pointermove', (e) => this.#onPointer(e));
    // Touch screens have no hover: a tap shows the cell as hover would.
    c.addEventListener('pointerdown', (e) => { if (e.pointerType !== 'mouse') this.#onPointer(e); });
    c.addEventListener('pointerleave', () => this.#report(null, 'pointer'));
    c.addEventListener('click', (e) => this.#onClick(e));
    c.addEventListener('keydown', (e) => this.#onKey(e));
    c.addEventListener('focus', () => {
      if (!this.map.data) return;
      this.focusCell ??= { i: this.selectedRow ?? 0, j: 0 };
      this.#clampFocus();
      this.#report({ ...this.focusCell }, 'keyboard');
    });
    c.addEventListener('blur', () => this.#report(null, 'keyboard'));
  }

  /** New data: the tooltip spoke of the old numbers, focus and selection are kept in range. */
  dataChanged() {
    const { rows, cols } = this.map.data;
    const o = this.map.options;
    this.tooltip.hidden = true;
    if (this.focusCell) this.#clampFocus();
    if (this.selectedRow !== null && this.selectedRow >= rows) this.selectedRow = null;
    this.canvas.setAttribute('aria-label',
      `${o.name}: ${rows} ${o.rowAxis} rows by ${cols} ${o.colAxis} columns. ` +
      'Arrow keys move between cells, Enter selects the row.');
  }

  /** Hover from this or a linked panel; tooltip only on the source panel. */
  setHover(cell, { tooltip = false } = {}) {
    const d = this.map.data;
    this.hover = cell && d && cell.i < d.rows
      ? { i: cell.i, j: cell.j !== null && cell.j < d.cols ? cell.j : null } : null;
    this.draw();
    this.#tooltip(tooltip ? this.hover : null);
  }

  setSelectedRow(i) {
    this.selectedRow = i;
    this.draw();
  }

  /** Repaints hover, focus and the selected row (cheap: a few rectangles). */
  draw() {
    const L = this.map.layout;
    if (!L || this.map.dirty) return;
    const dpr = globalThis.devicePixelRatio || 1;
    const ctx = this.canvas.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, L.cssW, L.cssH);
    const { left, top, plotW, plotH, cw, ch } = L;
    const { rows, cols } = this.map.data;
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

  /** Clears the canvas (while the heatmap waits to be coloured). */
  clear() {
    this.canvas.getContext('2d').clearRect(0, 0, this.canvas.width, this.canvas.height);
  }

  /** The cell under a pointer event, { i, j } (j null over a row label), or null. */
  hit(event) {
    const L = this.map.layout;
    const d = this.map.data;
    if (!L || !d) return null;
    const r = this.canvas.getBoundingClientRect();
    const x = event.clientX - r.left;
    const y = event.clientY - r.top;
    if (y < L.top || y >= L.top + L.plotH) return null;
    const i = Math.min(d.rows - 1, Math.floor((y - L.top) / L.ch));
    if (x < L.left) return { i, j: null };
    if (x >= L.left + L.plotW) return null;
    return { i, j: Math.min(d.cols - 1, Math.floor((x - L.left) / L.cw)) };
  }

  #report(cell, how) {
    this.map.options.onHover?.(cell, this.map, how);
  }

  #select(row) {
    this.map.options.onSelect?.(row, this.map);
  }

  #tooltip(cell) {
    const tip = this.tooltip;
    const map = this.map;
    if (!cell || cell.j === null || !map.layout) {
      tip.hidden = true;
      return;
    }
    const { i, j } = cell;
    const d = map.data;
    const o = map.options;
    const lines = [
      `${o.rowAxis} ${d.rowNames[i]} \u2192 ${o.colAxis} ${d.colNames[j]}`,
      `${o.name}: ${map.masked(i, j) ? (o.maskedText ? o.maskedText : 'masked (0)') : formatValue(map.value(i, j))}`,
      `row sum ${formatValue(map.rowSums[i])}`,
    ];
    const extra = o.explain?.(i, j);
    if (extra) lines.push(extra);
    tip.replaceChildren(...lines.map((text) => {
      const div = tip.ownerDocument.createElement('div');
      div.textContent = text;
      return div;
    }));
    tip.hidden = false;
    const L = map.layout;
    const x = L.left + (j + 1) * L.cw + 8;
    const y = L.top + i * L.ch;
    const w = tip.offsetWidth;
    const left = x + w > L.cssW ? Math.max(0, L.left + j * L.cw - w - 8) : x;
    tip.style.left = `${left}px`;
    tip.style.top = `${Math.max(0, Math.min(y, L.cssH - tip.offsetHeight))}px`;
  }

  #onPointer(event) {
    const cell = this.hit(event);
    this.canvas.classList.toggle('over-label', cell !== null && cell.j === null);
    this.#report(cell, 'pointer');
  }

  #onClick(event) {
    const cell = this.hit(event);
    if (!cell) return;
    this.#select(this.selectedRow === cell.i ? null : cell.i);
  }

  #clampFocus() {
    const f = this.focusCell;
    const { rows, cols } = this.map.data;
    f.i = Math.max(0, Math.min(rows - 1, f.i));
    f.j = Math.max(0, Math.min(cols - 1, f.j));
  }

  #onKey(event) {
    const d = this.map.data;
    if (!d) return;
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
      case 'End': f.j = d.cols - 1; if (event.ctrlKey) f.i = d.rows - 1; break;
      case 'Enter':
      case ' ':
        event.preventDefault();
        this.#select(this.selectedRow === f.i ? null : f.i);
        return;
      case 'Escape':
        this.#select(null);
        return;
      default:
        return;
    }
    event.preventDefault();
    this.focusCell = f;
    this.#clampFocus();
    this.#report({ ...this.focusCell }, 'keyboard');
  }
}
