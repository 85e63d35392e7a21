// What the page shows when it cannot start. A module of the page that fails
// to load, or throws while it is evaluated, stops the whole module graph
// before any of the page's code runs, which would leave "Loading…" on screen
// for good. This classic script (no imports, nothing to fail with them)
// writes such an error where the page says "Loading", until app.mjs marks
// the page started (data-started on <html>).
addEventListener('error', (event) => {
  if (document.documentElement.dataset.started) return;
  const source = event.target instanceof HTMLScriptElement ? event.target.src : '';
  const what = event.message || (source ? `${source} did not load` : 'a script did not load');
  for (const id of ['engine', 'train-status']) {
    const element = document.getElementById(id);
    if (element) element.textContent = `The page could not start: ${what}. Reload it, or see the browser's console.`;
  }
  document.documentElement.dataset.failed = 'true';
}, true);
