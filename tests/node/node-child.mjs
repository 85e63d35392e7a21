// A Node child process whose last line of stdout is its result (JSON).
//
// Node 20 can deadlock as a process ends: a background TurboFan job waits
// for a garbage collection the main thread, draining the platform's tasks,
// never runs (docs/testing.md). A child that has printed its result and
// then does not exit within `exitGrace` ms is killed and its result kept,
// with a note on stderr; a child that has not printed its result by
// `timeout` ms fails the test as before.
import { spawn } from 'node:child_process';

function lastJsonLine(out) {
  if (!out.endsWith('\n')) return undefined;
  const line = out.trimEnd().split('\n').pop();
  try { return JSON.parse(line); } catch { return undefined; }
}

/**
 * Runs `node ...args`, returns the JSON value of its last stdout line.
 * Options: cwd, env, timeout (ms, default 120 000), exitGrace (ms after the
 * result, default 10 000).
 */
export function nodeResult(args, { cwd, env, timeout = 120_000, exitGrace = 10_000 } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    let result;
    let graceTimer;
    const deadline = setTimeout(() => {
      clearTimeout(graceTimer);
      child.kill('SIGKILL');
      if (result !== undefined) resolve(result); // printed, then the deadline came within its grace
      else reject(new Error(`node ${args.slice(0, -1).join(' ')}: no result after ${timeout} ms\nstderr: ${err}`));
    }, timeout);
    child.stdout.setEncoding('utf8').on('data', (d) => {
      out += d;
      result = lastJsonLine(out);
      if (result !== undefined && !graceTimer) {
        graceTimer = setTimeout(() => {
          clearTimeout(deadline);
          child.kill('SIGKILL');
          console.error(`  (a Node child printed its result, then did not exit in ${exitGrace} ms: ` +
            'killed; nodejs/node#54918)');
          resolve(result);
        }, exitGrace);
      }
    });
    child.stderr.setEncoding('utf8').on('data', (d) => { err += d; });
    child.on('close', (code, signal) => {
      clearTimeout(deadline);
      clearTimeout(graceTimer);
      if (signal === 'SIGKILL') return; // settled by a timer
      if (code !== 0) reject(new Error(`node exited with ${code}${signal ? ` (${signal})` : ''}\nstderr: ${err}`));
      else if (result === undefined) reject(new Error(`node printed no JSON result line\nstdout: ${out}\nstderr: ${err}`));
      else resolve(result);
    });
  });
}
