// Line charts (uPlot) that follow their box's width, with the library loaded
// when the first chart is made, not when the page's modules load: uPlot
// formats numbers with Intl.NumberFormat(navigator.language) as its module
// is evaluated, which throws where the language tag is not one Intl knows
// (WebKitGTK under LANG=C.UTF-8 reports "C"), and a module that throws at
// load stops every module that imports it. So uPlot is evaluated with a
// language Intl accepts (en-US in place of an invalid tag), and a chart that
// still cannot be made (uPlot missing) says why in its box; the rest of the
// page works without it.
import { validLocale } from '../core/format.mjs';

/** @type {Promise<any> | undefined} */
let library;

/** uPlot's constructor (loaded once). */
function uPlotClass() {
  library ??= withValidLanguage(() => import('/vendor/uplot/dist/uPlot.esm.js')).then((m) => m.default);
  return library;
}

/**
 * Runs `load` with a navigator.language that Intl accepts: where the
 * browser's tag is invalid, the default locale stands in for it (an own
 * property of navigator, removed afterwards) while uPlot's module evaluates.
 * @template T
 * @param {() => Promise<T>} load
 * @returns {Promise<T>}
 */
async function withValidLanguage(load) {
  const tag = navigator.language;
  if (validLocale(tag, '') !== '') return load();
  Object.defineProperty(navigator, 'language', { configurable: true, get: () => validLocale(tag) });
  try {
    return await load();
  } finally {
    delete (/** @type {any} */ (navigator)).language;
  }
}

/**
 * A uPlot chart of `options` (its width set from the box) in `box`, with
 * `series` empty data series, resized with the box; resolves to null, and
 * shows the reason in the box, when uPlot cannot load or build it.
 * @param {HTMLElement} box
 * @param {object} options  uPlot's options, without width
 * @param {number} series  data series (x included)
 * @param {number} height
 */
export async function lineChart(box, options, series, height) {
  let chart;
  try {
    const UPlot = await uPlotClass();
    chart = new UPlot({ ...options, width: Math.max(200, box.clientWidth), height },
      Array.from({ length: series }, () => []), box);
  } catch (error) {
    box.dataset.unavailable = 'true';
    box.textContent = `This chart cannot be drawn here (${error instanceof Error ? error.message : String(error)}); ` +
      'the numbers below it are the same data.';
    return null;
  }
  new ResizeObserver(() => {
    const w = Math.max(200, box.clientWidth);
    if (chart.width !== w) chart.setSize({ width: w, height });
  }).observe(box);
  return chart;
}
