// Small helpers for the build and test scripts (Node built-ins only: these
// run before `npm ci`).
import { spawnSync } from 'node:child_process';

/** Runs a command with inherited stdio; exits the process if it fails. */
export function run(cmd, args, options = {}) {
  console.log(`\n$ ${cmd} ${args.join(' ')}`);
  const r = spawnSync(cmd, args, { stdio: 'inherit', ...options });
  if (r.error) {
    console.error(`could not run ${cmd}: ${r.error.message}`);
    process.exit(1);
  }
  if (r.status !== 0) {
    console.error(`${cmd} exited with ${r.status ?? r.signal}`);
    process.exit(r.status || 1);
  }
}

/** Whether a command exists on PATH. */
export function has(cmd) {
  return spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;
}
