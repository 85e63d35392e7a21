// onnxruntime-web, wasm backend (its only wasm build is SIMD + threads),
// numThreads 1 or 2. The thread count is a process-wide setting fixed when
// the backend first initialises (the wasm backend ignores a session's
// intraOpNumThreads), which is one reason each case runs in its own worker.
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createOrtWeb, ortVariants } from './ort-common.mjs';

export const name = 'onnxruntime-web';
export const variants = ortVariants;

export async function create({ threads }) {
  const ort = await import('onnxruntime-web');
  const require = createRequire(import.meta.url);
  // The package's require entry lies in dist/, next to the .wasm and its glue.
  const dist = dirname(require.resolve('onnxruntime-web'));
  return createOrtWeb(ort, threads, `${pathToFileURL(dist).href}/`);
}
