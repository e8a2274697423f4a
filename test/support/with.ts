/**
 * A test's own resource closed whatever the test does: a SQL pool, a fake OpenAI-compatible server. The
 * `try { … } finally { await x.close(); }` every such test would otherwise write.
 */
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
