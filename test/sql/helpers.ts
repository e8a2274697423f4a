import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A fresh temp directory removed by the returned cleanup. */
export function tempDir(prefix = 'agro-sql-'): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Creates a database at `path` by running `ddl` (several statements allowed) in a writable connection. */
export function makeDb(path: string, ddl: string): string {
  const db = new Database(path);
  db.exec(ddl);
  db.close();
  return path;
}
