// The browser table of bench/browser/run.mjs (markdown), for the console
// and RESULTS.md.
import { fmtMs } from '../lib/format.mjs';
import { flops, shapeName } from '../lib/shapes.mjs';

const ratio = (a, b) => (a && b ? `${(a / b).toFixed(2)}×` : '—');

/** The browser table (markdown). */
export function renderBrowserTable(results) {
  const lines = [
    `Chromium ${results.version} (headless, /usr/bin/chromium), each case in its own browser context ` +
      '(renderer process), on the page\'s thread or in a module worker; interleaved medians after 1.5 s of ' +
      'warm-up; ratios are onnxruntime-web / ours from the same session. Ours runs its relaxed-SIMD kernels ' +
      '(the projections and the attention tiles\' products) where Chromium validates them; onnxruntime-web: its fastest graph ' +
      'by warm-up time. "alone": ' +
      'our scaling from a session of ours single and ours threads only, before the four are interleaved.',
    '',
    '| shape | thread of the call | ours 1T ms | ort-web 1T ms | ours faster 1T | ours 2T ms | ort-web 2T ms | ours faster 2T | ours 2T/1T (alone) | ort 2T/1T | ours 1T GFLOP/s |',
    '|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
  ];
  for (const r of results.shapes) {
    const c = r.cases;
    const m = (k) => c[k]?.medianMs;
    lines.push(`| ${shapeName(r.shape)} | ${r.mode} | ${fmtMs(m('ours-1'))} | ${fmtMs(m('ort-web-1'))} (${c['ort-web-1']?.variant ?? 'n/a'}) | ` +
      `${ratio(m('ort-web-1'), m('ours-1'))} | ${fmtMs(m('ours-2'))} | ${fmtMs(m('ort-web-2'))} | ${ratio(m('ort-web-2'), m('ours-2'))} | ` +
      `${ratio(m('ours-1'), m('ours-2'))} (${ratio(r.oursAlone?.['ours-1'], r.oursAlone?.['ours-2'])}) | ` +
      `${ratio(m('ort-web-1'), m('ort-web-2'))} | ` +
      `${m('ours-1') && r.shape.kind !== 'decode' ? (flops(r.shape) / (m('ours-1') * 1e6)).toFixed(1) : '—'} |`);
  }
  const mismatches = results.shapes.filter((r) => r.mismatch?.length);
  for (const r of mismatches) lines.push(`Output mismatch (${shapeName(r.shape)}, ${r.mode}): ${r.mismatch.join(', ')}`);
  if (results.cold.length) {
    lines.push('', `Cold start at ${shapeName(results.coldShape)} (fresh context, page thread; ours: init() + first attention(); ` +
      'onnxruntime-web: backend start-up + session creation + first run), median:', '');
    lines.push('| implementation | ms |', '|---|--:|');
    for (const c of results.cold) lines.push(`| ${c.key} (${c.variant}) | ${fmtMs(c.medianMs)} |`);
  }
  return lines.join('\n');
}

