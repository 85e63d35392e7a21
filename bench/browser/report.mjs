// The browser table of bench/browser/run.mjs (markdown), for the console
// and RESULTS.md.
import { fmtMs, fmtPct } from '../lib/format.mjs';
import { flops, shapeName } from '../lib/shapes.mjs';
import { gflops } from '../lib/timing.mjs';

const ratio = (a, b) => (a && b ? `${(a / b).toFixed(2)}×` : '—');

/**
 * The limits measured on a page's thread in this run (results.simd, absent
 * from runs before it was measured), as a sentence.
 */
export function chromiumLimits(results) {
  const s = results.simd;
  if (!s) return 'not measured in this run';
  const fma = s.fma.limit === null ? `n/a (${s.fma.reason})` : `${s.fma.limit.toFixed(1)} GFLOP/s`;
  return `relaxed-SIMD FMA ${fma}, SIMD128 mul+add ${s.simd128.limit.toFixed(1)} GFLOP/s on a page's thread ` +
    '(bench/lib/simd-limit.mjs, the higher of a reading before and after the timed cases)';
}

/** A rate (GFLOP/s) as a fraction of Chromium's relaxed-SIMD FMA limit (a table cell). */
function fmaCell(results, rate) {
  const limit = results.simd?.fma.limit;
  if (rate === null || limit === undefined) return '—';
  return limit === null ? 'n/a' : fmtPct(rate / limit);
}

/** The browser table (markdown). */
export function renderBrowserTable(results) {
  const lines = [
    `Chromium ${results.version} (headless, /usr/bin/chromium), each case in its own browser context ` +
      '(renderer process), on the page\'s thread or in a module worker; interleaved medians after 1.5 s of ' +
      'warm-up; ratios are onnxruntime-web / ours from the same session. Ours runs its relaxed-SIMD kernels ' +
      '(the projections and the attention tiles\' products) where Chromium validates them; onnxruntime-web: its fastest graph ' +
      'by warm-up time. "alone": ' +
      'our scaling from a session of ours single and ours threads only, before the four are interleaved. ' +
      `"% relaxed FMA limit": ours 1T GFLOP/s (FLOPs counted as in the Node table: a multiply-add is 2) over ` +
      `the limit measured here: ${chromiumLimits(results)}.`,
    '',
    '| shape | thread of the call | ours 1T ms | ort-web 1T ms | ours faster 1T | ours 2T ms | ort-web 2T ms | ours faster 2T | ours 2T/1T (alone) | ort 2T/1T | ours 1T GFLOP/s | % relaxed FMA limit |',
    '|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
  ];
  for (const r of results.shapes) {
    const c = r.cases;
    const m = (k) => c[k]?.medianMs;
    const rate = m('ours-1') && r.shape.kind !== 'decode' ? gflops(flops(r.shape), m('ours-1')) : null;
    lines.push(`| ${shapeName(r.shape)} | ${r.mode} | ${fmtMs(m('ours-1'))} | ${fmtMs(m('ort-web-1'))} (${c['ort-web-1']?.variant ?? 'n/a'}) | ` +
      `${ratio(m('ort-web-1'), m('ours-1'))} | ${fmtMs(m('ours-2'))} | ${fmtMs(m('ort-web-2'))} | ${ratio(m('ort-web-2'), m('ours-2'))} | ` +
      `${ratio(m('ours-1'), m('ours-2'))} (${ratio(r.oursAlone?.['ours-1'], r.oursAlone?.['ours-2'])}) | ` +
      `${ratio(m('ort-web-1'), m('ort-web-2'))} | ` +
      `${rate?.toFixed(1) ?? '—'} | ${fmaCell(results, rate)} |`);
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

