// Markdown tables and number formats (the same text goes to the terminal and
// to bench/RESULTS.md).

export function table(headers, rows, align) {
  const a = align ?? headers.map(() => 'l');
  const cells = rows.map((r) => r.map((c) => String(c ?? '')));
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((r) => r[i].length)));
  const line = (r) => `| ${r.map((c, i) => (a[i] === 'r' ? c.padStart(widths[i]) : c.padEnd(widths[i]))).join(' | ')} |`;
  const rule = `|${widths.map((w, i) => (a[i] === 'r' ? `${'-'.repeat(w + 1)}:` : '-'.repeat(w + 2))).join('|')}|`;
  return [line(headers), rule, ...cells.map(line)].join('\n');
}

export const fmtMs = (ms) => (ms >= 100 ? ms.toFixed(0) : ms >= 10 ? ms.toFixed(1) : ms >= 1 ? ms.toFixed(2) : ms.toFixed(3));
export const fmtRate = (x) => (x >= 10 ? x.toFixed(1) : x >= 0.1 ? x.toFixed(2) : x.toExponential(1));
export const fmtX = (x) => (Number.isFinite(x) ? (x >= 100 ? `${x.toFixed(0)}×` : `${x.toFixed(2)}×`) : '—');
export const fmtPct = (x) => `${(x * 100).toFixed(0)}%`;
export function fmtBytes(b) {
  if (b == null) return '—';
  return `${(b / 2 ** 20).toFixed(1)} MiB`;
}
export const fmtSeconds = (ms) => (ms >= 10_000 ? `${(ms / 1000).toFixed(0)} s` : `${(ms / 1000).toFixed(1)} s`);

/**
 * One line of a targets list: `- (issue N) what: met (values)`, or `missed`;
 * `ok` null: a quantity reported without a verdict (`- what: values`).
 */
export function targetLine(what, ok, values, issue) {
  const head = `- ${issue ? `(issue ${issue}) ` : ''}${what}: `;
  return head + (ok === null ? values : `${ok ? 'met' : 'missed'} (${values})`);
}
