// What Linux's /proc says of a process. Elsewhere there is no /proc: callers get undefined and do without.
import { readFileSync } from 'node:fs';

/** /proc counts CPU time in clock ticks of 10 ms (USER_HZ = 100 on Linux). */
const CLOCK_TICK_MS = 10;
const HAS_PROC = process.platform === 'linux';

/** CPU time (user + system) a process has used, in ms, from /proc/<pid>/stat; undefined when unreadable or gone. */
export function processCpuMs(pid: number | undefined): number | undefined {
  if (!HAS_PROC || pid === undefined) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the parenthesized command name (which may hold spaces): utime and stime are 14 and 15.
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) * CLOCK_TICK_MS;
  } catch {
    return undefined;
  }
}
