/**
 * One factory run asks the same query of the same database many times: verification's probes
 * repeat across candidates, and the ambiguity check, the round trip and the diversity stage run a
 * pair's SQL again on the original and every variant. Within a run the databases do not change,
 * so an answer is remembered (as its promise, so concurrent askers share one execution) by
 * database, SQL and limits. Big results are not kept, and the oldest entries go first.
 */
import type { ExecOptions, ExecResult, SqlExecutor } from '../sql/types.ts';

/** Results with more rows than this are not remembered (memory stays small). */
const MAX_CACHED_ROWS = 1000;

export class CachingExecutor implements SqlExecutor {
  private readonly cache = new Map<string, Promise<ExecResult>>();
  hits = 0;
  misses = 0;
  constructor(
    private readonly inner: SqlExecutor,
    private readonly maxEntries = 20_000,
  ) {}

  execute(dbPath: string, sql: string, opts: ExecOptions = {}): Promise<ExecResult> {
    // The SQL goes last: a path has no NUL and the limits are numbers, so no two keys can be confused.
    const k = `${dbPath}\u0000${opts.timeoutMs}\u0000${opts.maxRows}\u0000${opts.maxBytes}\u0000${opts.safeIntegers ?? false}\u0000${sql}`;
    const hit = this.cache.get(k);
    if (hit) {
      this.hits++;
      return hit;
    }
    this.misses++;
    const p = this.inner.execute(dbPath, sql, opts);
    this.cache.set(k, p);
    if (this.cache.size > this.maxEntries) this.cache.delete(this.cache.keys().next().value!);
    void p.then(
      (r) => {
        if (r.ok && r.rows.length > MAX_CACHED_ROWS) this.cache.delete(k);
      },
      () => this.cache.delete(k),
    );
    return p;
  }

  /** Forgets the answers; the wrapped executor belongs to whoever made it and stays open. */
  async close(): Promise<void> {
    this.cache.clear();
  }
}
