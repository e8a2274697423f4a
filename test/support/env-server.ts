/** A throwaway db-root for the environment server's tests: two databases, one with a variant. */
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';

export interface EnvFixture {
  dir: string;
  dbRoot: string;
  variants: string;
}

function makeDb(path: string, rows: Array<[number, string, number]>): void {
  const db = new Database(path);
  db.exec('CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT NOT NULL, age INTEGER)');
  const ins = db.prepare('INSERT INTO singer VALUES (?, ?, ?)');
  for (const r of rows) ins.run(...r);
  db.close();
}

/**
 * `concert`: singers Ann 30, Bob 41, Cid 52; its variant has Ann 45, Bob 20, Cid 60, so "age > 40" and
 * "singer_id > 1" agree on the original and not on the variant. `club`: one table with other names.
 */
export function makeEnvFixture(): EnvFixture {
  const dir = mkdtempSync(join(tmpdir(), 'agro-envsrv-'));
  const dbRoot = join(dir, 'dbs');
  const variants = join(dir, 'variants');
  for (const id of ['concert', 'club']) mkdirSync(join(dbRoot, id), { recursive: true });
  mkdirSync(join(variants, 'concert'), { recursive: true });
  makeDb(join(dbRoot, 'concert', 'concert.sqlite'), [
    [1, 'Ann', 30],
    [2, 'Bob', 41],
    [3, 'Cid', 52],
  ]);
  makeDb(join(variants, 'concert', 'variant-1.sqlite'), [
    [1, 'Ann', 45],
    [2, 'Bob', 20],
    [3, 'Cid', 60],
  ]);
  const club = new Database(join(dbRoot, 'club', 'club.sqlite'));
  club.exec("CREATE TABLE member (member_id INTEGER PRIMARY KEY, nickname TEXT); INSERT INTO member VALUES (7, 'zed'), (8, 'yan');");
  club.close();
  return { dir, dbRoot, variants };
}
