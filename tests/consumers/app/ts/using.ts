// `using` (TypeScript >= 5.2, lib esnext): the runtime and the worker are disposed at block end.
import { init } from 'causal-attention';

{
  using ca = await init({ build: 'single' });
  await using remote = await init({ worker: true });
  ca.manualSeed(1);
  await remote.manualSeed(1);
}

export {};
