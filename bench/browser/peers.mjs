// The implementations the browser bench runs, loaded from the bench server's
// URLs (bench/browser/server.mjs): ours through bench/peers/ours.mjs (the
// same prepare code as in Node), onnxruntime-web's wasm-only ES build.
import * as ours from '../peers/ours.mjs';
import { createOrtWeb } from '../peers/ort-common.mjs';

const ORT_BASE = '/ort/';

export const PEERS = {
  ours: {
    create: (config) => ours.create(config, () => import('/dist/index.mjs')),
  },
  'ort-web': {
    async create({ threads }) {
      const ort = await import(`${ORT_BASE}ort.wasm.min.mjs`);
      return createOrtWeb(ort, threads, new URL(ORT_BASE, globalThis.location.href).href);
    },
  },
};
