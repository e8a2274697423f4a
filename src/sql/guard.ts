/**
 * The sandbox's first gate: refuse anything that is not one read-only query, before it runs.
 *
 * Two layers, because neither is enough alone:
 *  - a lexical check here (first keyword, statement count), which catches ATTACH/DETACH (SQLite
 *    reports them as read-only), PRAGMA (`PRAGMA user_version=3` must never reach sqlite3_step) and
 *    transaction control without ever preparing the text;
 *  - a prepared-statement check (`assertReadOnlyStatement`), which catches writes hidden behind an
 *    allowed first keyword such as `WITH x AS (...) DELETE FROM t`.
 * The database is also always opened `readonly`, a third line that needs no parsing at all.
 */
import { AgroError } from '../errors.ts';
import { tokenize } from './lexer.ts';

const ALLOWED_FIRST = new Set(['SELECT', 'WITH', 'VALUES']);

/** Why a first keyword is refused, in words a user understands. */
const REFUSED_FIRST: Record<string, string> = {
  INSERT: 'writes are not allowed (INSERT)',
  UPDATE: 'writes are not allowed (UPDATE)',
  DELETE: 'writes are not allowed (DELETE)',
  REPLACE: 'writes are not allowed (REPLACE)',
  UPSERT: 'writes are not allowed (UPSERT)',
  CREATE: 'schema changes are not allowed (CREATE)',
  DROP: 'schema changes are not allowed (DROP)',
  ALTER: 'schema changes are not allowed (ALTER)',
  ATTACH: 'ATTACH is not allowed: queries may only read the given database',
  DETACH: 'DETACH is not allowed',
  PRAGMA: 'PRAGMA is not allowed (it can change connection or database settings)',
  VACUUM: 'VACUUM is not allowed',
  REINDEX: 'REINDEX is not allowed',
  ANALYZE: 'ANALYZE is not allowed (it writes statistics tables)',
  BEGIN: 'transaction control is not allowed (BEGIN)',
  COMMIT: 'transaction control is not allowed (COMMIT)',
  END: 'transaction control is not allowed (END)',
  ROLLBACK: 'transaction control is not allowed (ROLLBACK)',
  SAVEPOINT: 'transaction control is not allowed (SAVEPOINT)',
  RELEASE: 'transaction control is not allowed (RELEASE)',
  EXPLAIN: 'EXPLAIN is not allowed: send the query itself',
};

/**
 * Throws AgroError('refused') unless `sql` is a single statement starting with SELECT, WITH or VALUES.
 * A trailing semicolon and comments anywhere are fine. Returns the SQL unchanged for chaining.
 */
export function assertSingleReadQuery(sql: string): string {
  const tokens = tokenize(sql);
  if (tokens.length === 0 || tokens.every((t) => t.kind === 'punct' && t.text === ';')) {
    throw new AgroError('refused', 'refused: empty query');
  }
  const semi = tokens.findIndex((t) => t.kind === 'punct' && t.text === ';');
  if (semi >= 0 && tokens.slice(semi + 1).some((t) => !(t.kind === 'punct' && t.text === ';'))) {
    throw new AgroError('refused', 'refused: several statements (send one query at a time)');
  }
  const first = tokens[0];
  const word = first.kind === 'word' ? first.text.toUpperCase() : '';
  if (!ALLOWED_FIRST.has(word)) {
    const why = REFUSED_FIRST[word] ?? `only SELECT, WITH or VALUES queries are allowed (got ${word || first.text})`;
    throw new AgroError('refused', `refused: ${why}`);
  }
  return sql;
}

/** The parts of a better-sqlite3 Statement the second gate looks at. */
export interface PreparedLike {
  reader: boolean;
  readonly: boolean;
}

/** Throws AgroError('refused') when a prepared statement could write or returns no rows. */
export function assertReadOnlyStatement(stmt: PreparedLike): void {
  if (!stmt.readonly) throw new AgroError('refused', 'refused: the statement would write to the database');
  if (!stmt.reader) throw new AgroError('refused', 'refused: the statement returns no rows (not a query)');
}
