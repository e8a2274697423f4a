/**
 * Every distinct text a SQLite database stores, so that constrained decoding can hold a query's string
 * literals to what the question says or the database holds (src/agent/decoding/sql-names.ts). A small model copies
 * values badly ('Hollow Rivers' comes out 'Hurning Roads'); a literal found nowhere can only match nothing.
 *
 * All or nothing: a literal refused because its value was never read would be a right answer lost, so a
 * database whose text exceeds the budget (or a table with more rows than are read) gives null, and the
 * literals are then left free.
 */
import { openReadOnly, storedTables, tableColumns } from '../../sql/introspect.ts';
import { quoteIdent } from '../../sql/lexer.ts';

export interface StoredTextOptions {
  /** Characters of distinct text read in all before giving up. Default 4,000,000 (≈ 8 MB of heap). */
  maxChars?: number;
  /** A table with more rows than this is not read whole: the result is null. Default 1,000,000. */
  maxRows?: number;
}

/** The distinct text values stored in any column of any table, or null when they exceed the budget. */
export function storedText(dbPath: string, opts: StoredTextOptions = {}): string[] | null {
  const maxChars = opts.maxChars ?? 4_000_000;
  const maxRows = opts.maxRows ?? 1_000_000;
  const db = openReadOnly(dbPath);
  try {
    const seen = new Set<string>();
    let chars = 0;
    for (const table of storedTables(db)) {
      const t = quoteIdent(table);
      const rows = db.prepare(`SELECT count(*) FROM (SELECT 1 FROM ${t} LIMIT ${maxRows + 1})`).pluck().get() as number;
      if (rows > maxRows) return null;
      for (const column of tableColumns(db, table)) {
        const c = quoteIdent(column);
        for (const v of db.prepare(`SELECT DISTINCT ${c} FROM ${t} WHERE typeof(${c}) = 'text'`).pluck().iterate() as Iterable<string>) {
          if (seen.has(v)) continue;
          chars += v.length + 1;
          if (chars > maxChars) return null;
          seen.add(v);
        }
      }
    }
    return [...seen];
  } finally {
    db.close();
  }
}
