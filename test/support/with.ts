/**
 * A test's own resources closed whatever the test does: a SQL pool, a fake OpenAI-compatible server, a test
 * file's scratch folder. The `try { … } finally { await x.close(); }` every such test would otherwise write.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import { SqlPool, type SqlPoolOptions } from '../../src/sql/pool.ts';
import { startFakeOpenAI, type FakeOpenAI, type Responder } from './fake-openai.ts';

/** Runs `fn` on a resource and closes it afterwards, also when `fn` throws. */
export async function closing<R extends { close(): Promise<void> }, T>(resource: R, fn: (r: R) => Promise<T>): Promise<T> {
  try {
    return await fn(resource);
  } finally {
    await resource.close();
  }
}

export const withPool = <T>(opts: SqlPoolOptions, fn: (pool: SqlPool) => Promise<T>): Promise<T> => closing(new SqlPool(opts), fn);

export const withFakeOpenAI = async <T>(responder: Responder | undefined, fn: (fake: FakeOpenAI) => Promise<T>): Promise<T> => closing(await startFakeOpenAI(responder), fn);

/** A test file's scratch folder and one-process SQL pool: the folder removed and the pool closed after its tests. */
export function scratchAndPool(prefix: string): { dir: string; pool: SqlPool } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const pool = new SqlPool({ size: 1 });
  after(async () => {
    await pool.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { dir, pool };
}
