#!/usr/bin/env node
// `npm start`: set-up, wasm build and API reference, then serve the demo
// page and the reference (/api/) on 127.0.0.1 (PORT, default 8080; the next
// free port if taken) and print their URLs.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { run } from './util.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
run(process.execPath, ['scripts/setup.mjs', '--for=start'], { cwd: root });
run(process.execPath, ['scripts/build.mjs', '--wasm', '--docs'], { cwd: root });

const { startServer } = await import('./serve.mjs');
const first = Number(process.env.PORT ?? 8080);
for (let port = first; port < first + 20; port++) {
  try {
    const { url } = await startServer({ port });
    console.log(`\ncausal-attention demo: ${url}\nAPI reference: ${url}api/\n(Ctrl+C to stop)`);
    break;
  } catch (error) {
    if (error.code !== 'EADDRINUSE') throw error;
  }
}
