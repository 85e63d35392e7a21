// onnxruntime-node (native CPU execution provider), for the native table:
// intraOpNumThreads 1, sequential, same graphs as onnxruntime-web.
import { initBackend, ortVariants, prepareSession } from './ort-common.mjs';

export const name = 'onnxruntime-node';
export const variants = ortVariants;

export async function create({ threads }) {
  const mod = await import('onnxruntime-node');
  const ort = mod.InferenceSession ? mod : mod.default;
  const sessionOptions = {
    executionProviders: ['cpu'],
    graphOptimizationLevel: 'all',
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
  };
  await initBackend(ort, sessionOptions);
  return {
    label: 'onnxruntime-node',
    threads,
    prepare: (variant, shape, inputs) => prepareSession(ort, variant, shape, inputs, sessionOptions),
  };
}
