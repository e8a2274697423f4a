import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** Every file below a folder, at any depth (what a test sweeps for a leaked password). */
export function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? filesUnder(p) : [p];
  });
}
