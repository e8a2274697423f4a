// One sandboxed SQLite executor process, driven by SqlPool (pool.ts) over IPC.
// Plain JavaScript on purpose: a fork of this file starts in ~0.15 s, one through tsx in ~0.6-1 s
// (measured on the 2-core box), and a child is respawned after every timeout kill.
// The parent has already run the lexical guard (guard.ts); this side checks the prepared statement
// and enforces the row and byte caps while iterating, so a huge result stops early. The process runs
// under a data-size limit (pool.ts): an allocation past it fails inside SQLite (SQLITE_NOMEM, an
// ordinary error) or aborts the process (a V8 allocation), which the parent reports as the query's own.
// The query is timed here, not in the parent, whose event loop may be busy with other questions, and
// stopped here too: agro's SQLite extension interrupts a query past its wall-clock limit or its CPU budget
// (agro_limit, native/sqlite/agro_sqlite.c), so a runaway query costs its time and not this process. The
// parent's own timers stay, a little later, for what the interrupt cannot reach (one long VM step, a
// stuck process) and for builds without the extension.
import { randomBytes } from 'node:crypto';
import { statSync } from 'node:fs';
import { openDatabase } from './open-database.mjs';

// Read by the extension when it is first loaded (before any connection opens); a query cannot read it,
// so it cannot call agro_limit to lift its own limit.
const LIMIT_TOKEN = randomBytes(16).toString('hex');
process.env.AGRO_SQL_LIMIT_TOKEN = LIMIT_TOKEN;

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

/** A reply above this size takes a while to serialize and send: a small `done` message goes first. */
const DONE_FIRST_BYTES = 256 * 1024;

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
    conn.limit.get(LIMIT_TOKEN, cpuMs, wallMs);
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

/** Runs one query and sends its reply. */
function answer(msg) {
  const t0 = performance.now();
  let reply;
  try {
    reply = run(msg, t0);
  } catch (err) {
    reply = { ok: false, error: 'runtime', message: isTooBig(err) ? `the query needs more memory than the SQL executor may use (${oneLine(err)})` : oneLine(err) };
  }
  const elapsedMs = performance.now() - t0;
  const { bytes = 0, ...rest } = reply;
  // The query is over: the parent stops its clock on `done`, so sending a big result costs no query time.
  if (bytes > DONE_FIRST_BYTES) process.send({ id: msg.id, done: true, elapsedMs });
  process.send({ id: msg.id, elapsedMs, ...rest });
}

// A batch is several queries in one message: each is answered as it finishes, in order, so the parent
// times each one on its own.
process.on('message', (msg) => {
  if (Array.isArray(msg.batch)) for (const one of msg.batch) answer(one);
  else answer(msg);
});
process.on('disconnect', () => process.exit(0));
// Whether this process stops its own queries (the extension is built and its watchdog starts).
const probe = (() => {
  try {
    const db = openDatabase(':memory:');
    try {
      return db.prepare('SELECT agro_limit(?, 0, 0)').pluck().get(LIMIT_TOKEN);
    } finally {
      db.close();
    }
  } catch {
    return 0;
  }
})();
process.send({ ready: true, limits: probe === 2 ? 'cpu+wall' : probe === 1 ? 'wall' : 'none' });
