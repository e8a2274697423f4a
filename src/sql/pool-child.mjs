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
import { openDatabase } from './open-database.mjs';
import { makeRunner } from './run-query.mjs';

// Read by the extension when it is first loaded (before any connection opens); a query cannot read it,
// so it cannot call agro_limit to lift its own limit.
const LIMIT_TOKEN = randomBytes(16).toString('hex');
process.env.AGRO_SQL_LIMIT_TOKEN = LIMIT_TOKEN;

const { answer: runQuery } = makeRunner(LIMIT_TOKEN);

/** A reply above this size takes a while to serialize and send: a small `done` message goes first. */
const DONE_FIRST_BYTES = 256 * 1024;

/** Runs one query and sends its reply. */
function answer(msg) {
  const t0 = performance.now();
  const reply = runQuery(msg, t0);
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
