// Resident memory of a process and its descendants (Linux /proc), for the benches that bound a server's memory.
import { readdirSync, readFileSync } from 'node:fs';

/** Resident memory of `pid` and all its descendants, in bytes (0 where /proc is missing). */
export function treeRss(pid: number): number {
  const parent = new Map<number, number>();
  const rss = new Map<number, number>();
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return 0;
  }
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      parent.set(Number(name), Number(fields[1]));
      rss.set(Number(name), Number(fields[21]) * 4096);
    } catch {
      // gone meanwhile
    }
  }
  let total = 0;
  for (const [p, bytes] of rss) {
    for (let q: number | undefined = p; q !== undefined && q > 1; q = parent.get(q)) {
      if (q === pid) {
        total += bytes;
        break;
      }
    }
  }
  return total;
}
