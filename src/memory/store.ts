/**
 * The memory in SQLite (better-sqlite3, WAL): one file per database, `memory.db` beside its dataset.
 *
 * Why a database and not the JSON file it was: a correction is one row appended in a transaction, not a rewrite
 * of the whole memory, so writers in several processes (serve, chat, the CLI, the Playground) never lose each
 * other's pairs, a kill mid-write loses nothing acknowledged (synchronous=FULL: a commit is on disk before it is
 * acknowledged), and readers see a consistent snapshot and pick up new rows by a sequence number without
 * reading everything again. For a PostgreSQL database the store is the same SQLite file beside the run's
 * outputs, not tables in the user's server: agro's connections there are read-only by construction (docs/security.md),
 * and a memory must be writable by the person correcting it.
 *
 * Removal marks a row (`removed_seq`) rather than deleting it, so `changes(since)` can tell a reader which
 * pairs to drop, and `agro memory list` can show who replaced what. A rebuild (`writeMemory` onto an existing
 * store) replaces every row in one transaction and bumps the generation: readers then reload whole.
 */
import { closeSync, constants, existsSync, fstatSync, openSync, readSync, renameSync, rmSync, statSync } from 'node:fs';
import { dirname, basename, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';
import { AgroError } from '../errors.ts';
import { ensureDir } from '../util/fs.ts';
import type { DbSchema } from '../sql/types.ts';
import { checkMemorySchema, memoryEntrySchema, memoryOrder, schemaFingerprint, type MemoryEntry, type MemoryFile, type MemorySource } from './entry.ts';

const KIND = 'agro-memory';
const VERSION = '2';
const SQLITE_HEADER = 'SQLite format 3\u0000';
/** How long a writer waits for another's transaction before giving up (a correction is milliseconds). */
const BUSY_TIMEOUT_MS = 10_000;

/** The meta keys the store itself keeps (addFactory's callers may not set them). */
const OWN_META = new Set(['kind', 'version', 'db_id', 'schema', 'seq', 'generation']);

const SCHEMA_SQL = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;
CREATE TABLE IF NOT EXISTS pairs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  sql TEXT NOT NULL,
  questions TEXT NOT NULL,
  source TEXT NOT NULL CHECK (source IN ('factory', 'person')),
  at TEXT,
  rows INTEGER,
  signature TEXT,
  seq INTEGER NOT NULL,
  removed_seq INTEGER,
  replaced_by INTEGER
) STRICT;
CREATE INDEX IF NOT EXISTS pairs_seq ON pairs (seq);
CREATE INDEX IF NOT EXISTS pairs_removed ON pairs (removed_seq) WHERE removed_seq IS NOT NULL;
CREATE INDEX IF NOT EXISTS pairs_live_sql ON pairs (sql) WHERE removed_seq IS NULL;
`;

interface Row {
  id: number;
  sql: string;
  questions: string;
  source: string;
  at: string | null;
  rows: number | null;
  signature: string | null;
  seq: number;
  removed_seq: number | null;
  replaced_by: number | null;
}

/** A stored pair with what the store knows of its history. */
export interface StoredEntry extends MemoryEntry {
  id: number;
  /** Set when the pair was removed (`agro memory remove`) or replaced by a person's correction of the same SQL. */
  removedAt?: number;
  replacedBy?: number;
}

export interface MemoryChanges {
  /** The store's sequence now: pass it as `since` next time. */
  seq: number;
  /** The store's generation now: when it differs from the reader's, the memory was rebuilt and must be reloaded whole. */
  generation: string;
  /** Pairs added since (live ones only). */
  added: MemoryEntry[];
  /** Ids of pairs removed or replaced since. */
  removed: number[];
}

const fail = (path: string, why: string): AgroError => new AgroError('invalid_input', `memory store ${path} ${why}`);

/**
 * What is at `path`: nothing, an SQLite file, a JSON file (a memory.json of before the store), or something agro
 * must not open (a FIFO, a device such as /dev/zero behind a symlink, a directory: refused with one line, exit 4).
 * Read on the open descriptor, non-blocking, so a FIFO cannot hang it.
 *
 * An SQLite file shorter than its header's page count is 'suspect', not refused here: a WAL checkpoint in another
 * process writes page 1 (the new count) before the pages that grow the file, so a sound store is short for a
 * moment whenever another writer checkpoints. MemoryStore.open lets SQLite decide (a quick check through the WAL).
 */
export function memoryFileKind(path: string): 'none' | 'empty' | 'sqlite' | 'suspect' | 'json' {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return 'none';
    if (code === 'EISDIR') throw fail(path, 'is a directory, not a file');
    if (code === 'ENXIO' || code === 'EAGAIN') throw fail(path, 'is not a regular file');
    throw fail(path, `cannot be read (${code ?? (err as Error).message})`);
  }
  try {
    const st = fstatSync(fd);
    if (st.isDirectory()) throw fail(path, 'is a directory, not a file');
    if (!st.isFile()) throw fail(path, 'is not a regular file (a device, FIFO or socket)');
    if (st.size === 0) return 'empty';
    const head = Buffer.alloc(100);
    const n = readSync(fd, head, 0, 100, 0);
    if (n >= 16 && head.toString('latin1', 0, 16) === SQLITE_HEADER) {
      // Fewer bytes than a header: cut short (a copy interrupted, a disk full); no writer leaves a file so.
      if (n < 100) throw fail(path, `is truncated (${st.size} of at least 100 bytes); rebuild it with agro memory build`);
      const { pageSize, bytes } = headerSize(head);
      if (!pageSize) throw fail(path, 'is an SQLite file with a damaged header; rebuild it with agro memory build');
      return st.size < bytes ? 'suspect' : 'sqlite';
    }
    const first = head.subarray(0, n).toString('utf8').trimStart()[0];
    if (first === '{') return 'json';
    throw fail(path, 'is neither a memory store nor a memory file agro wrote');
  } finally {
    closeSync(fd);
  }
}

/** The page size (0 when it is none SQLite writes) and the size in bytes an SQLite header says its file has. */
function headerSize(head: Buffer): { pageSize: number; bytes: number } {
  const raw = head.readUInt16BE(16);
  const pageSize = raw === 1 ? 65536 : raw >= 512 && (raw & (raw - 1)) === 0 ? raw : 0;
  return { pageSize, bytes: pageSize * head.readUInt32BE(28) };
}

/** The file's size against its header's, for the line refusing a store SQLite found unreadable. */
function sizeNote(path: string): string {
  const head = Buffer.alloc(100);
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    readSync(fd, head, 0, 100, 0);
    const size = fstatSync(fd).size;
    const { bytes } = headerSize(head);
    return size < bytes ? `is truncated (${size} of ${bytes} bytes)` : '';
  } finally {
    closeSync(fd);
  }
}

export class MemoryStore {
  private constructor(
    readonly path: string,
    private readonly db: Database.Database,
  ) {}

  /**
   * Opens the store at `path` (a memory.json there is the caller's to convert: legacy.ts). With `create`, a
   * missing (or empty) file is made an empty store of that database, safely when several processes do it at once.
   */
  static open(path: string, o: { create?: { dbId: string; schema: DbSchema }; readonly?: boolean } = {}): MemoryStore {
    const kind = memoryFileKind(path);
    if (kind === 'json') throw fail(path, 'is a memory.json of an earlier agro; convert it with agro memory migrate');
    if ((kind === 'none' || kind === 'empty') && !o.create) {
      if (kind === 'none') throw new AgroError('not_found', `memory store not found: ${path}`);
      throw fail(path, 'is empty');
    }
    let db: Database.Database;
    try {
      db = new Database(path, { fileMustExist: !o.create, readonly: !!o.readonly && !o.create });
    } catch (err) {
      throw fail(path, `cannot be opened (${(err as Error).message})`);
    }
    const store = new MemoryStore(path, db);
    try {
      db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
      // Short of what its header says: a checkpoint in progress elsewhere (sound through the WAL), or a file cut
      // short. SQLite reads every page of its snapshot and says which; only this case pays for the whole read.
      if (kind === 'suspect') {
        let verdict: string;
        try {
          verdict = (db.pragma('quick_check(1)') as Array<{ quick_check: string }>).map((r) => r.quick_check).join('; ');
        } catch (err) {
          verdict = (err as Error).message;
        }
        if (verdict !== 'ok') throw fail(path, `${sizeNote(path) || `is damaged (${verdict})`}; rebuild it with agro memory build`);
      }
      if (o.create) {
        if (db.pragma('journal_mode', { simple: true }) !== 'wal') db.pragma('journal_mode = WAL');
        db.pragma('synchronous = FULL');
        const c = o.create;
        db.transaction(() => {
          db.exec(SCHEMA_SQL);
          const put = db.prepare('INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)');
          for (const [k, v] of [['kind', KIND], ['version', VERSION], ['db_id', c.dbId], ['schema', schemaFingerprint(c.schema)], ['seq', '0'], ['generation', randomBytes(6).toString('hex')]]) put.run(k, v);
        }).immediate();
      } else {
        db.pragma('synchronous = FULL');
      }
      store.meta();
    } catch (err) {
      db.close();
      throw err instanceof AgroError ? err : fail(path, `cannot be read (${(err as Error).message})`);
    }
    return store;
  }

  /** Runs `fn` on the connection, a store SQLite cannot read (malformed, not agro's) reported as one line. */
  private guard<T>(fn: () => T): T {
    try {
      return fn();
    } catch (err) {
      if (err instanceof AgroError) throw err;
      throw fail(this.path, `cannot be read (${(err as Error).message})`);
    }
  }

  /** The database the store serves and the schema it was verified on. */
  meta(): { dbId: string; schema: string; generation: string } {
    return this.guard(() => {
      let rows: Array<{ key: string; value: string }>;
      try {
        rows = this.db.prepare('SELECT key, value FROM meta').all() as typeof rows;
      } catch {
        throw fail(this.path, 'is an SQLite file but not a memory store agro wrote');
      }
      const m = new Map(rows.map((r) => [r.key, r.value]));
      if (m.get('kind') !== KIND) throw fail(this.path, 'is an SQLite file but not a memory store agro wrote');
      if (m.get('version') !== VERSION) throw fail(this.path, `is a memory store of version ${m.get('version')}, this agro reads version ${VERSION}`);
      return { dbId: m.get('db_id')!, schema: m.get('schema')!, generation: m.get('generation')! };
    });
  }

  /** Refuses (exit 4) a store built on another schema than the database it is to answer on. */
  check(schema: DbSchema): void {
    checkMemorySchema(this.meta(), schema, this.path);
  }

  seq(): number {
    return this.guard(() => Number((this.db.prepare("SELECT value FROM meta WHERE key = 'seq'").get() as { value: string }).value));
  }

  /** How many live pairs the store holds (without reading them). */
  size(): number {
    return this.guard(() => (this.db.prepare('SELECT COUNT(*) AS n FROM pairs WHERE removed_seq IS NULL').get() as { n: number }).n);
  }

  /** The live pairs, people's newest first, then the factory's (entry.ts memoryOrder), read in one snapshot. */
  snapshot(): MemoryFile & { seq: number; generation: string } {
    return this.guard(() =>
      this.db.transaction(() => {
        const m = this.meta();
        // Row by row: 40k raw rows held at once beside their entries were most of a big memory's peak RSS.
        const entries: MemoryEntry[] = [];
        for (const r of this.db.prepare('SELECT * FROM pairs WHERE removed_seq IS NULL').iterate() as IterableIterator<Row>) entries.push(toEntry(r, this.path));
        return { dbId: m.dbId, schema: m.schema, entries: entries.sort(memoryOrder), seq: this.seq(), generation: m.generation };
      })(),
    );
  }

  /** What changed after sequence `since`, in one snapshot. */
  changes(since: number): MemoryChanges {
    return this.guard(() =>
      this.db.transaction(() => {
        const added = (this.db.prepare('SELECT * FROM pairs WHERE seq > ? AND removed_seq IS NULL ORDER BY id').all(since) as Row[]).map((r) => toEntry(r, this.path));
        const removed = (this.db.prepare('SELECT id FROM pairs WHERE removed_seq > ? ORDER BY id').all(since) as Array<{ id: number }>).map((r) => r.id);
        return { seq: this.seq(), generation: this.meta().generation, added, removed };
      })(),
    );
  }

  /**
   * Appends a person's pair in one transaction and returns it with its id: a live pair of the same SQL is replaced
   * (marked, its questions kept after the new one), so the memory holds each query once.
   */
  addPerson(e: { sql: string; question: string; at: string; rows?: number; signature?: string }): StoredEntry {
    return this.guard(() =>
      this.db.transaction(() => {
        const seq = this.seq() + 1;
        const old = this.live(e.sql);
        const questions = [e.question];
        for (const o of old) for (const q of JSON.parse(o.questions) as string[]) if (!questions.includes(q)) questions.push(q);
        const id = this.insertReplacing({ sql: e.sql, questions, source: 'person', at: e.at, rows: e.rows ?? null, signature: e.signature ?? null }, old, seq);
        this.db.prepare("UPDATE meta SET value = ? WHERE key = 'seq'").run(String(seq));
        return { id, sql: e.sql, questions, source: 'person' as const, at: e.at, ...(e.rows !== undefined ? { rows: e.rows } : {}), ...(e.signature ? { signature: e.signature } : {}) };
      }).immediate(),
    );
  }

  /**
   * Appends the factory's pairs (a memory grown) in one transaction, with `meta` keys set in the same one (a grow's
   * round counter, so a kill leaves the pairs and the counter agreeing). A query the memory holds from a person is
   * left as the person stored it; one it holds from the factory gains the new questions (the old row replaced, so
   * readers see it as any change). Returns how many queries were new and how many gained questions.
   */
  addFactory(entries: readonly MemoryEntry[], meta: Readonly<Record<string, string>> = {}): { added: number; merged: number } {
    return this.guard(() =>
      this.db.transaction(() => {
        const seq = this.seq() + 1;
        let added = 0;
        let merged = 0;
        for (const e of entries) {
          const old = this.live(e.sql);
          if (old.some((o) => o.source === 'person')) continue;
          const questions = old.flatMap((o) => JSON.parse(o.questions) as string[]);
          const fresh = e.questions.filter((q) => !questions.includes(q));
          if (old.length && !fresh.length) continue;
          this.insertReplacing({ sql: e.sql, questions: [...questions, ...fresh], source: 'factory', at: null, rows: e.rows ?? old[0]?.rows ?? null, signature: e.signature ?? old[0]?.signature ?? null }, old, seq);
          if (old.length) merged++;
          else added++;
        }
        const put = this.db.prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value');
        for (const [k, v] of Object.entries(meta)) {
          if (OWN_META.has(k)) throw new Error(`memory store: meta key ${k} is the store's own`);
          put.run(k, v);
        }
        this.db.prepare("UPDATE meta SET value = ? WHERE key = 'seq'").run(String(seq));
        return { added, merged };
      }).immediate(),
    );
  }

  /** The live rows of a query (one, unless an older agro stored it twice). */
  private live(sql: string): Row[] {
    return this.db.prepare('SELECT * FROM pairs WHERE sql = ? AND removed_seq IS NULL').all(sql) as Row[];
  }

  /** Inserts a pair at `seq`, marking the live rows `old` of its query replaced by it; returns its id. Inside a writer's transaction. */
  private insertReplacing(r: Pick<Row, 'sql' | 'source' | 'at' | 'rows' | 'signature'> & { questions: string[] }, old: readonly Row[], seq: number): number {
    const id = Number(
      this.db.prepare('INSERT INTO pairs (sql, questions, source, at, rows, signature, seq) VALUES (?, ?, ?, ?, ?, ?, ?)').run(r.sql, JSON.stringify(r.questions), r.source, r.at, r.rows, r.signature, seq).lastInsertRowid,
    );
    const mark = this.db.prepare('UPDATE pairs SET removed_seq = ?, replaced_by = ? WHERE id = ?');
    for (const o of old) mark.run(seq, id, o.id);
    return id;
  }

  /** A value the store keeps beside its pairs (a grow's progress), or undefined. */
  metaValue(key: string): string | undefined {
    return this.guard(() => (this.db.prepare('SELECT value FROM meta WHERE key = ?').get(key) as { value: string } | undefined)?.value);
  }

  /** Removes a live pair (a correction undone, or a factory pair a person judged wrong), of one source when given; false when there is none of that id. */
  remove(id: number, o: { source?: MemorySource } = {}): boolean {
    return this.guard(() =>
      this.db.transaction(() => {
        const seq = this.seq() + 1;
        const r = this.db.prepare(`UPDATE pairs SET removed_seq = ? WHERE id = ? AND removed_seq IS NULL${o.source ? ' AND source = ?' : ''}`).run(seq, id, ...(o.source ? [o.source] : []));
        if (r.changes === 0) return false;
        this.db.prepare("UPDATE meta SET value = ? WHERE key = 'seq'").run(String(seq));
        return true;
      }).immediate(),
    );
  }

  /** Pairs with their history, oldest first: of one source, stored at or after a time, removed ones too when asked. */
  list(o: { source?: MemorySource; since?: string; removed?: boolean } = {}): StoredEntry[] {
    return this.guard(() => {
      const where = [o.removed ? '1' : 'removed_seq IS NULL', o.source ? 'source = @source' : '1', o.since ? 'at >= @since' : '1'].join(' AND ');
      const rows = this.db.prepare(`SELECT * FROM pairs WHERE ${where} ORDER BY id`).all({ ...(o.source ? { source: o.source } : {}), ...(o.since ? { since: o.since } : {}) }) as Row[];
      return rows.map((r) => ({ ...toEntry(r, this.path), id: r.id, ...(r.removed_seq !== null ? { removedAt: r.removed_seq } : {}), ...(r.replaced_by !== null ? { replacedBy: r.replaced_by } : {}) }));
    });
  }

  /** Replaces every pair in one transaction (a rebuild): readers see the old memory or the new, and reload whole. */
  replaceAll(memory: MemoryFile): void {
    this.guard(() =>
      this.db.transaction(() => {
        const seq = this.seq() + 1;
        this.db.prepare('DELETE FROM pairs').run();
        insertAll(this.db, memory.entries, seq);
        const put = this.db.prepare('UPDATE meta SET value = ? WHERE key = ?');
        put.run(memory.dbId, 'db_id');
        put.run(memory.schema, 'schema');
        put.run(String(seq), 'seq');
        put.run(randomBytes(6).toString('hex'), 'generation');
      }).immediate(),
    );
  }

  /** SQLite's own check of the file (`PRAGMA integrity_check`): 'ok' or what is wrong. */
  integrity(): string {
    return this.guard(() => (this.db.pragma('integrity_check') as Array<{ integrity_check: string }>).map((r) => r.integrity_check).join('; '));
  }

  close(): void {
    this.db.close();
  }
}

function toEntry(r: Row, path: string): MemoryEntry {
  const e = memoryEntrySchema.safeParse({
    id: r.id,
    sql: r.sql,
    questions: safeJson(r.questions),
    source: r.source,
    ...(r.at !== null ? { at: r.at } : {}),
    ...(r.rows !== null ? { rows: r.rows } : {}),
    ...(r.signature !== null ? { signature: r.signature } : {}),
  });
  if (!e.success) throw fail(path, `holds a pair agro cannot read (id ${r.id}: ${e.error.issues[0].path.join('.')}: ${e.error.issues[0].message})`);
  return e.data;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function insertAll(db: Database.Database, entries: readonly MemoryEntry[], seq: number): void {
  const ins = db.prepare('INSERT INTO pairs (sql, questions, source, at, rows, signature, seq) VALUES (?, ?, ?, ?, ?, ?, ?)');
  // The factory's pairs in their order, then people's oldest first, so ids keep memoryOrder's order.
  const ordered = [...entries.filter((e) => e.source === 'factory'), ...entries.filter((e) => e.source === 'person').reverse()];
  for (const e of ordered) ins.run(e.sql, JSON.stringify(e.questions), e.source, e.at ?? null, e.rows ?? null, e.signature ?? null, seq);
}

/**
 * Writes a whole memory as the store at `path`: onto an existing store in one transaction (readers that hold it
 * open see the old pairs or the new, never a mix, and its WAL stays its own); else built beside it and renamed
 * into place, so a crash leaves no half store.
 */
export function writeMemory(path: string, memory: MemoryFile): void {
  const kind = memoryFileKind(path);
  if (kind === 'sqlite' || kind === 'suspect') {
    const store = MemoryStore.open(path);
    try {
      store.replaceAll(memory);
    } finally {
      store.close();
    }
    return;
  }
  ensureDir(dirname(path));
  const tmp = join(dirname(path), `.${basename(path)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  const db = new Database(tmp);
  try {
    db.pragma('journal_mode = DELETE');
    db.transaction(() => {
      db.exec(SCHEMA_SQL);
      const put = db.prepare('INSERT INTO meta (key, value) VALUES (?, ?)');
      for (const [k, v] of [['kind', KIND], ['version', VERSION], ['db_id', memory.dbId], ['schema', memory.schema], ['seq', '1'], ['generation', randomBytes(6).toString('hex')]]) put.run(k, v);
      insertAll(db, memory.entries, 1);
    })();
    // The store's mode is WAL from its first open on: concurrent readers never block a correction.
    db.pragma('journal_mode = WAL');
    db.close();
    // A -wal or -shm left at the name by a store that was deleted while open must not be replayed onto this one.
    for (const s of ['-wal', '-shm']) if (existsSync(path + s) && !existsSync(path)) rmSync(path + s, { force: true });
    renameSync(tmp, path);
  } catch (err) {
    if (db.open) db.close();
    rmSync(tmp, { force: true });
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EISDIR' || code === 'EACCES' || code === 'EROFS' || code === 'ENOSPC') throw new AgroError('usage', `cannot write ${path}: ${code}`);
    throw err;
  }
}

/** Whether a path holds a store (for callers that choose between a store and something else). */
export function isMemoryStore(path: string): boolean {
  try {
    if (!statSync(path).isFile()) return false;
    const kind = memoryFileKind(path);
    return kind === 'sqlite' || kind === 'suspect';
  } catch {
    return false;
  }
}
