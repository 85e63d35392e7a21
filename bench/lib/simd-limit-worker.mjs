// One thread of measureSimdLimitThreads: compiles and warms the kernel, waits
// until every thread is ready, then measures.
import { parentPort, workerData } from 'node:worker_threads';
import { measureSimdKernel } from './simd-limit.mjs';

const { chains, barrier, threads } = workerData;
const flag = new Int32Array(barrier);
measureSimdKernel(chains, { callMs: 10, repeats: 3 }); // compile + tier up
Atomics.add(flag, 0, 1);
while (Atomics.load(flag, 0) < threads) Atomics.wait(flag, 0, Atomics.load(flag, 0), 5);
parentPort.postMessage(measureSimdKernel(chains));
