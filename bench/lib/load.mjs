// How busy the rest of the machine was while a case ran: CPU time of every
// process (/proc/stat, all CPUs) minus this process's own CPU time (all its
// threads), divided by the wall time, in cores. The machine is shared, so a
// timing taken while others used a core is worth less, and the table says so.
import { readFileSync } from 'node:fs';

const TICK_MS = 10; // USER_HZ = 100 on Linux

function systemBusyMs() {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0].trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal ...
  const [user, nice, system, , , irq, softirq, steal] = fields;
  return (user + nice + system + irq + softirq + steal) * TICK_MS;
}

/**
 * Starts a window; the returned function gives other processes' average CPU
 * use in cores, or null when unknown or when the window was too short for
 * /proc/stat's 10 ms ticks (under half a second).
 */
export function startOtherLoad() {
  try {
    const t0 = performance.now();
    const busy0 = systemBusyMs();
    const own0 = process.cpuUsage();
    return () => {
      const wall = performance.now() - t0;
      const own = process.cpuUsage(own0);
      const others = systemBusyMs() - busy0 - (own.user + own.system) / 1000;
      return wall >= 500 ? Math.max(0, others / wall) : null;
    };
  } catch {
    return () => null;
  }
}
