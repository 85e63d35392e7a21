// The Learn row's module worker (as the page's web/learn/model/worker.mjs trains):
// loads each given dist/ URL's package, then bench/lib/learn-steps.mjs's
// interleaved rounds; posts the result back.
import { learnSteps } from '../lib/learn-steps.mjs';

globalThis.onmessage = async ({ data: { dists, build, steps, rounds } }) => {
  const runtimes = [];
  try {
    for (const dist of dists) {
      const { init } = await import(`${dist}index.mjs`);
      runtimes.push(await init({ build, threads: build === 'threads' ? 2 : 1 }));
    }
    globalThis.postMessage({ result: learnSteps(runtimes, { steps, rounds }) });
  } catch (e) {
    globalThis.postMessage({ error: String(e?.stack ?? e) });
  } finally {
    for (const ca of runtimes) ca.dispose();
  }
};
