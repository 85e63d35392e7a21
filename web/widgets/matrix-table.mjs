// A heatmap's numbers as an HTML table: for screen readers, for people who
// ask for the numbers ("show the numbers as tables"), and for the browser
// tests, which read each cell's data-value, data-masked and data-row-sum.
// Token text enters as textContent only.

import { formatValue } from '../core/format.mjs';

/** Cells a table may hold before it is left out (the canvas stays keyboard-readable). */
export const TABLE_LIMIT = 1600;

function cell(doc, tag, text, props = {}) {
  const el = doc.createElement(tag);
  el.textContent = text;
  return Object.assign(el, props);
}

/**
 * The table of `heatmap` (its data, options, rowSums, masked() and value()),
 * or, above options.tableLimit cells, a note saying how else to read them.
 */
export function matrixTable(heatmap) {
  const { rows, cols, rowNames, colNames, rowLabels, colLabels } = heatmap.data;
  const o = heatmap.options;
  const doc = heatmap.root.ownerDocument;
  if (rows * cols > o.tableLimit) {
    return cell(doc, 'p', `No numbers table above ${o.tableLimit} cells ` +
      `(${rows} × ${cols}): focus the heatmap and use the arrow keys, or hover.`, { className: 'table-note' });
  }
  const table = doc.createElement('table');
  table.className = 'matrix';
  const caption = cell(doc, 'caption', `${o.name} (rows: ${o.rowAxis}, columns: ${o.colAxis})`);
  const thead = doc.createElement('thead');
  const head = doc.createElement('tr');
  head.append(cell(doc, 'th', `${o.rowAxis} \\ ${o.colAxis}`, { scope: 'col' }));
  for (let j = 0; j < cols; j++) head.append(cell(doc, 'th', colLabels[j], { scope: 'col', title: colNames[j] }));
  if (o.rowSums) head.append(cell(doc, 'th', 'row sum', { scope: 'col' }));
  thead.append(head);
  const tbody = doc.createElement('tbody');
  for (let i = 0; i < rows; i++) {
    const tr = doc.createElement('tr');
    tr.append(cell(doc, 'th', rowLabels[i], { scope: 'row', title: rowNames[i] }));
    for (let j = 0; j < cols; j++) {
      const td = doc.createElement('td');
      td.dataset.i = i;
      td.dataset.j = j;
      if (heatmap.masked(i, j)) {
        td.dataset.masked = 'true';
        td.textContent = o.maskedText;
        if (o.maskedText === '') td.setAttribute('aria-label', 'masked');
      } else {
        const v = heatmap.value(i, j);
        td.dataset.value = String(v);
        td.textContent = formatValue(v);
      }
      tr.append(td);
    }
    if (o.rowSums) {
      const td = cell(doc, 'td', formatValue(heatmap.rowSums[i]), { className: 'row-sum' });
      td.dataset.i = i;
      td.dataset.rowSum = String(heatmap.rowSums[i]);
      tr.append(td);
    }
    tbody.append(tr);
  }
  table.append(caption, thead, tbody);
  return table;
}
