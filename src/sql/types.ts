/**
 * The SQL environment's contract: what every other module (eval, factory, rewards, agent) may rely on.
 * Implementations live beside this file; change the contract only with everyone's callers in view.
 */

import type { ErrorKind } from '../errors.ts';

/** A cell as better-sqlite3 returns it (integers as JS numbers; blobs as bytes). */
export type SqlValue = number | string | bigint | Uint8Array | null;
export type Row = SqlValue[];

export interface ExecOptions {
  /** Wall-clock limit; the query is really stopped (inside its process, or by killing it) when it passes. Default 5000. */
  timeoutMs?: number;
  /** Rows kept before the result is cut and marked truncated. Default 10000. */
  maxRows?: number;
  /** Bytes of cell data (text as UTF-8, numbers 8, NULL 1) kept before the result is cut and marked truncated. Default 8 MiB. */
  maxBytes?: number;
  /**
   * Return INTEGER cells as bigint (exact past 2^53, and told apart from REAL cells, which stay numbers),
   * as Python's sqlite3 keeps int and float apart; evaluation needs it. Default false.
   */
  safeIntegers?: boolean;
  /**
   * CPU time (ms) the query may burn before it is stopped as a timeout, beside the wall-clock limit;
   * 0 = none. Read from /proc (Linux only; ignored elsewhere). Unlike wall time it does not grow when
   * the machine is busy, so it tells a query that works too much from one that waits for a core.
   */
  cpuMs?: number;
  /**
   * How long the query may wait for a free SQL process before it fails as a timeout without running;
   * 0 = as long as it takes (the default: the limits above count from the start of the run only).
   */
  maxWaitMs?: number;
}

/** Why a query produced no result. */
export type ExecErrorKind =
  | 'refused' // not a single read-only statement: never ran
  | 'syntax' // SQLite could not prepare it (syntax, unknown table/column)
  | 'runtime' // failed while running
  | 'timeout' // ran past one of its limits (`limit` says which) and was stopped
  | 'no_database' // the database file does not exist
  | 'bad_database'; // the file is not a readable SQLite database

/** The CLI's error kind (and so exit code, docs/cli-errors.md) for a query that produced no result. */
export const EXEC_ERROR_KIND: Record<ExecErrorKind, ErrorKind> = {
  refused: 'refused',
  syntax: 'sql_error',
  runtime: 'sql_error',
  timeout: 'timeout',
  no_database: 'not_found',
  bad_database: 'invalid_input',
};

export type ExecResult =
  | {
      ok: true;
      columns: string[];
      rows: Row[];
      /** True when maxRows or maxBytes cut the result: it is not the whole answer. */
      truncated: boolean;
      /** When truncated: the cap that cut it, maxRows or maxBytes. */
      truncatedBy?: 'rows' | 'bytes';
      elapsedMs: number;
    }
  | {
      ok: false;
      error: ExecErrorKind;
      message: string;
      elapsedMs: number;
      /** For a timeout: the limit that stopped it (wall clock, CPU time, or the wait for a process). */
      limit?: TimeLimit;
    };

/** The limits of ExecOptions a query can time out on: timeoutMs, cpuMs, maxWaitMs. */
export type TimeLimit = 'wall' | 'cpu' | 'wait';

/** Runs read-only SQL against database files. The pool implementation is in pool.ts. */
/**
 * A variant database being filled (factory/augment.ts decides the rows): a SQLite file, or a schema on a
 * PostgreSQL server (pg-variants.ts). Tables are named as the original's.
 */
export interface VariantWriter {
  /** Up to `limit` rows of the original table's columns, in its stored order. */
  readOriginal(table: string, columns: string[], limit: number): Promise<SqlValue[][]>;
  /** What the variant's table holds so far (the columns asked), in insertion order. */
  readVariant(table: string, columns: string[]): Promise<SqlValue[][]>;
  /** Inserts the rows in order; a row a key or constraint refuses is skipped (SQLite's INSERT OR IGNORE). */
  insert(table: string, columns: string[], rows: SqlValue[][]): Promise<void>;
}

export interface SqlExecutor {
  execute(dbPath: string, sql: string, opts?: ExecOptions): Promise<ExecResult>;
  close(): Promise<void>;
}

// ---- Schema model (introspect.ts produces it, render.ts prints it for prompts) ----

export interface ColumnStats {
  nullCount: number;
  distinctCount: number;
  min: SqlValue;
  max: SqlValue;
  /** A few distinct non-null values, most frequent first (strings cut to a sane length). */
  samples: SqlValue[];
}

export interface Column {
  name: string;
  /** Declared type as written in the DDL (may be ''). */
  type: string;
  /** SQLite type affinity derived from the declared type. */
  affinity: 'INTEGER' | 'REAL' | 'TEXT' | 'BLOB' | 'NUMERIC';
  notNull: boolean;
  /** 1-based position in the primary key, 0 when not part of it. */
  pk: number;
  stats: ColumnStats;
}

export interface ForeignKey {
  fromTable: string;
  fromColumns: string[];
  toTable: string;
  toColumns: string[];
  /** True when not declared in the DDL but inferred from names, types and value containment. */
  inferred: boolean;
}

export interface Table {
  name: string;
  kind: 'table' | 'view';
  columns: Column[];
  primaryKey: string[];
  foreignKeys: ForeignKey[];
  rowCount: number;
}

export interface DbSchema {
  dbId: string;
  path: string;
  tables: Table[];
}

// ---- Result comparison (compare.ts) ----

/**
 * bird: set equality of rows (BIRD's official `set(pred) == set(gold)`).
 * spider: multiset equality; order matters when the gold query has ORDER BY (Spider's exec eval).
 */
export type CompareMode = 'bird' | 'spider';
