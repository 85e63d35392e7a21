// The demo's static server (sirv): web/ at /, the built package at /dist/,
// the API reference at /api/,
// and an allowlist of browser dependencies at /vendor/<package>/. Every
// response carries the headers the threaded build needs (COOP/COEP, so the
// page is cross-origin isolated) and a Content-Security-Policy that allows
// only this origin.
import http from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import sirv from 'sirv';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * Browser dependencies served from node_modules (nothing else is), pinned in
 * package.json's devDependencies. The d3 packages are loaded through their
 * official UMD builds (dist/*.min.js): their ES builds import each other by
 * bare name, which a browser resolves only with an import map, and an inline
 * import map would need a hash in the strict CSP below. gpt-tokenizer's ES
 * build imports only relative paths, so the page imports it directly, and
 * uPlot (the Learn section's loss curve) ships one ES module with no imports
 * and a stylesheet.
 */
export const VENDOR_PACKAGES = ['d3-color', 'd3-interpolate', 'd3-scale-chromatic', 'gpt-tokenizer', 'uplot', '@huggingface/tokenizers'];

export const SECURITY_HEADERS = {
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
  'Cross-Origin-Resource-Policy': 'same-origin',
  'Content-Security-Policy': [
    "default-src 'self'",
    "script-src 'self' 'wasm-unsafe-eval'",
    "style-src 'self'",
    "img-src 'self' data: blob:",
    "worker-src 'self' blob:",
    // The real-model section downloads checkpoints from the Hugging Face hub
    // (its files redirect to the hub's CDN hosts).
    "connect-src 'self' https://huggingface.co https://*.huggingface.co https://*.hf.co",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; '),
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
};

const API_DOCS_CSP = SECURITY_HEADERS['Content-Security-Policy']
  .replace("script-src 'self' 'wasm-unsafe-eval'", "script-src 'self' 'unsafe-inline'")
  .replace("style-src 'self'", "style-src 'self' 'unsafe-inline'");

/**
 * Starts the server. `isolate: false` leaves out COOP/COEP (for testing the
 * single-threaded fallback of pages that are not cross-origin isolated).
 */
export function startServer({ port = 0, host = '127.0.0.1', isolate = true } = {}) {
  const options = { dev: true, etag: true };
  const mounts = [
    ['/dist/', sirv(join(root, 'dist'), options)],
    // The API reference (TypeDoc, `node scripts/build.mjs --docs`).
    ['/api/', sirv(join(root, 'build/api'), options)],
    ...VENDOR_PACKAGES.map((p) => [`/vendor/${p}/`, sirv(join(root, 'node_modules', p), options)]),
    ['/', sirv(join(root, 'web'), options)],
  ];
  const server = http.createServer((req, res) => {
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) {
      if (isolate || !name.startsWith('Cross-Origin-')) res.setHeader(name, value);
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { Allow: 'GET, HEAD' }).end();
      return;
    }
    const path = new URL(req.url, 'http://x').pathname;
    if (path === '/api') {
      res.writeHead(301, { Location: '/api/' }).end();
      return;
    }
    if (path === '/favicon.ico') { // the reference's pages ask for one; the demo has a data: icon
      res.writeHead(204).end();
      return;
    }
    // TypeDoc's pages set their colour theme with one inline script.
    if (path.startsWith('/api/')) res.setHeader('Content-Security-Policy', API_DOCS_CSP);
    const [prefix, handler] = mounts.find(([p]) => path.startsWith(p));
    req.url = req.url.slice(prefix.length - 1);
    handler(req, res, () => res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found'));
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      const { port: actual } = server.address();
      resolve({
        url: `http://${host}:${actual}/`,
        close: () => new Promise((done) => server.close(done)),
        server,
      });
    });
  });
}
