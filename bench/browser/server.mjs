// The browser bench's static server: the built package at /dist/,
// onnxruntime-web's dist at /ort/, bench/ at /bench/, the demo's modules at
// /web/ (the Learn row trains web/learn/model/trainer.mjs's model), and any
// `extra` [path, folder] mounts (another checkout's dist/); every response
// cross-origin isolated (COOP/COEP), as pthreads in a page need.
import http from 'node:http';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import sirv from 'sirv';

const root = join(dirname(fileURLToPath(import.meta.url)), '../..');
const ortDist = dirname(createRequire(import.meta.url).resolve('onnxruntime-web'));

export function startBenchServer(extra = []) {
  const options = { dev: true };
  const mounts = [
    ['/dist/', sirv(join(root, 'dist'), options)],
    ['/ort/', sirv(ortDist, options)],
    ['/bench/', sirv(join(root, 'bench'), options)],
    ['/web/', sirv(join(root, 'web'), options)],
    ...extra.map(([path, dir]) => [path, sirv(dir, options)]),
  ];
  const server = http.createServer((req, res) => {
    res.setHeader('Cross-Origin-Opener-Policy', 'same-origin');
    res.setHeader('Cross-Origin-Embedder-Policy', 'require-corp');
    res.setHeader('Cross-Origin-Resource-Policy', 'same-origin');
    const path = new URL(req.url, 'http://x').pathname;
    const mount = mounts.find(([p]) => path.startsWith(p));
    if (!mount) {
      res.writeHead(404).end();
      return;
    }
    req.url = req.url.slice(mount[0].length - 1);
    mount[1](req, res, () => res.writeHead(404).end('not found'));
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      resolve({ url: `http://127.0.0.1:${port}/`, close: () => new Promise((d) => server.close(d)) });
    });
  });
}
