// Running one read-only query on a SQLite file with its row, byte and time limits: the one home of that
// logic for the pool's executor processes (pool-child.mjs) and for the in-process executor (local.ts), so
// both answer a query the same way. Plain JavaScript: pool-child.mjs runs without tsx.
import { statSync } from 'node:fs';
import { openDatabase } from './open-database.mjs';

/**
 * A query runner with its own open connections. `limitToken` is the value AGRO_SQL_LIMIT_TOKEN had when
 * agro's SQLite extension was first loaded in this process (agro_limit refuses any other).
 */
export function makeRunner(limitToken) {
  const MAX_OPEN = 8;
  /** path -> { db, stamp }; Map iteration order doubles as LRU order. */
  const open = new Map();

  function connection(path) {
    let st;
    try {
      st = statSync(path);
    } catch {
      return { error: 'no_database', message: `database not found: ${path}` };
    }
    if (!st.isFile()) return { error: 'bad_database', message: `not a database file: ${path}` };
    // A file rewritten in place (a new variant database at the same path) must not be served from a stale handle.
    const stamp = `${st.ino}:${st.size}:${st.mtimeMs}`;
    const hit = open.get(path);
    if (hit) {
      open.delete(path);
      if (hit.stamp === stamp) {
        open.set(path, hit);
        return { db: hit.db, limit: hit.limit };
      }
      hit.db.close();
    }
    let db;
    try {
      db = openDatabase(path, { readonly: true, fileMustExist: true });
    } catch (err) {
      return { error: 'bad_database', message: `cannot open database ${path}: ${err.message}` };
    }
    let limit = null;
    try {
      limit = db.prepare('SELECT agro_limit(?, ?, ?)').pluck();
    } catch {
      // No extension (or an old build): the parent's timers enforce the limits.
    }
    open.set(path, { db, stamp, limit });
    while (open.size > MAX_OPEN) {
      const [oldest, entry] = open.entries().next().value;
      open.delete(oldest);
      entry.db.close();
    }
    return { db, limit };
  }

  function isBadDatabase(err) {
    return err && (err.code === 'SQLITE_NOTADB' || err.code === 'SQLITE_CORRUPT' || err.code === 'SQLITE_CANTOPEN');
  }

  function oneLine(err) {
    return String(err && err.message ? err.message : err).replace(/\s*\n\s*/g, ' ');
  }

  /** A cell's size as sent to a client: UTF-8 bytes for text (a "€" is 3 bytes, one UTF-16 unit). */
  function cellBytes(v) {
    if (v === null) return 1;
    if (typeof v === 'string') return Buffer.byteLength(v, 'utf8');
    if (typeof v === 'number' || typeof v === 'bigint') return 8;
    return v.byteLength;
  }

  /** Arms the connection's limits (0 = none) and says whether the extension enforces them. */
  function arm(conn, cpuMs, wallMs) {
    if (!conn.limit) return false;
    try {
      conn.limit.get(limitToken, cpuMs, wallMs);
      return true;
    } catch {
      return false;
    }
  }

  function run({ dbPath, sql, maxRows, maxBytes, safeIntegers, timeoutMs = 0, cpuMs = 0 }, t0) {
    const conn = connection(dbPath);
    if (conn.error) return { ok: false, error: conn.error, message: conn.message };
    let stmt;
    try {
      stmt = conn.db.prepare(sql);
    } catch (err) {
      if (isBadDatabase(err)) return { ok: false, error: 'bad_database', message: `${dbPath}: ${oneLine(err)}` };
      if (err instanceof RangeError) return { ok: false, error: 'refused', message: `refused: ${oneLine(err)}` };
      return { ok: false, error: 'syntax', message: oneLine(err) };
    }
    if (!stmt.readonly) return { ok: false, error: 'refused', message: 'refused: the statement would write to the database' };
    if (!stmt.reader) return { ok: false, error: 'refused', message: 'refused: the statement returns no rows (not a query)' };
    const columns = stmt.columns().map((c) => c.name);
    const rows = [];
    let bytes = 0;
    let truncated = false;
    /** Which cap cut the result: the caller's message names it. */
    let truncatedBy;
    // What is left of the limit after opening and preparing; the CPU budget counts from here.
    const armed = arm(conn, cpuMs, timeoutMs > 0 ? Math.max(1, timeoutMs - (performance.now() - t0)) : 0);
    try {
      for (const row of stmt.raw(true).safeIntegers(Boolean(safeIntegers)).iterate()) {
        if (rows.length >= maxRows) {
          truncated = true;
          truncatedBy = 'rows';
          break;
        }
        let b = 0;
        for (const v of row) b += cellBytes(v);
        if (bytes + b > maxBytes) {
          truncated = true;
          truncatedBy = 'bytes';
          break;
        }
        bytes += b;
        rows.push(row);
      }
    } catch (err) {
      // Which limit stopped it; the parent words the message (pool.ts timedOut).
      if (err && err.code === 'SQLITE_INTERRUPT') return { ok: false, error: 'timeout', limit: cpuMs && !(timeoutMs > 0 && performance.now() - t0 >= timeoutMs) ? 'cpu' : 'wall' };
      if (isBadDatabase(err)) return { ok: false, error: 'bad_database', message: `${dbPath}: ${oneLine(err)}` };
      if (isTooBig(err)) return { ok: false, error: 'runtime', message: `the query needs more memory than the SQL executor may use (${oneLine(err)})` };
      return { ok: false, error: 'runtime', message: oneLine(err) };
    } finally {
      if (armed) arm(conn, 0, 0);
    }
    return { ok: true, columns, rows, truncated, ...(truncatedBy ? { truncatedBy } : {}), bytes };
  }

  function isTooBig(err) {
    return err && (err.code === 'SQLITE_NOMEM' || err.code === 'SQLITE_TOOBIG' || err instanceof RangeError);
  }

  /** The reply to one query (never throws); `bytes` is the result's size. */
  function answer(msg, t0) {
    try {
      return run(msg, t0);
    } catch (err) {
      return { ok: false, error: 'runtime', message: isTooBig(err) ? `the query needs more memory than the SQL executor may use (${oneLine(err)})` : oneLine(err) };
    }
  }

  /** Closes every connection this runner opened. */
  function close() {
    for (const entry of open.values()) entry.db.close();
    open.clear();
  }

  return { answer, close };
}
