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

export interface SqlToken {
  /** 'word' for keywords/bare identifiers (upper-cased in `text`), 'ident' for quoted identifiers, 'string', 'number', 'punct'. */
  kind: 'word' | 'ident' | 'string' | 'number' | 'punct';
  text: string;
  /** Parenthesis depth at which the token sits (0 = top level). */
  depth: number;
}

/** Splits SQL into tokens, skipping whitespace and comments and keeping strings whole. */
export function tokenizeSql(sql: string): SqlToken[] {
  const tokens: SqlToken[] = [];
  let depth = 0;
  let i = 0;
  const n = sql.length;
  const quoted = (close: string, kind: SqlToken['kind']): void => {
    // SQL doubles the closing quote to escape it ('it''s', "a""b"); brackets cannot be escaped.
    let j = i + 1;
    let text = '';
    for (;;) {
      if (j >= n) break; // unterminated: SQLite will refuse it at prepare time
      if (sql[j] === close) {
        if (close !== ']' && sql[j + 1] === close) {
          text += close;
          j += 2;
          continue;
        }
        j++;
        break;
      }
      text += sql[j++];
    }
    tokens.push({ kind, text, depth });
    i = j;
  };
  while (i < n) {
    const c = sql[i];
    if (/\s/.test(c)) {
      i++;
    } else if (c === '-' && sql[i + 1] === '-') {
      const end = sql.indexOf('\n', i);
      i = end < 0 ? n : end + 1;
    } else if (c === '/' && sql[i + 1] === '*') {
      const end = sql.indexOf('*/', i + 2);
      i = end < 0 ? n : end + 2;
    } else if (c === "'") {
      quoted("'", 'string');
    } else if (c === '"') {
      quoted('"', 'ident');
    } else if (c === '`') {
      quoted('`', 'ident');
    } else if (c === '[') {
      quoted(']', 'ident');
    } else if (/[A-Za-z_\u0080-\uffff]/.test(c)) {
      let j = i + 1;
      while (j < n && /[A-Za-z0-9_$\u0080-\uffff]/.test(sql[j])) j++;
      tokens.push({ kind: 'word', text: sql.slice(i, j).toUpperCase(), depth });
      i = j;
    } else if (/[0-9]/.test(c) || (c === '.' && /[0-9]/.test(sql[i + 1] ?? ''))) {
      let j = i + 1;
      while (j < n && /[0-9A-Za-z_.]/.test(sql[j])) j++;
      tokens.push({ kind: 'number', text: sql.slice(i, j), depth });
      i = j;
    } else {
      if (c === ')') depth = Math.max(0, depth - 1);
      tokens.push({ kind: 'punct', text: c, depth });
      if (c === '(') depth++;
      i++;
    }
  }
  return tokens;
}

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
 * Throws AgroError('refused') unless `sql` is a single statement starting with SELECT, WITH or VALUES;
 * AgroError('sql_error') when the first word starts no SQLite statement at all (a syntax error).
 * A trailing semicolon and comments anywhere are fine. Returns the SQL unchanged for chaining.
 */
export function assertSingleReadQuery(sql: string): string {
  const tokens = tokenizeSql(sql);
  if (tokens.length === 0 || tokens.every((t) => t.kind === 'punct' && t.text === ';')) {
    throw new AgroError('refused', 'refused: empty query');
  }
  const semi = tokens.findIndex((t) => t.kind === 'punct' && t.text === ';');
  if (semi >= 0 && tokens.slice(semi + 1).some((t) => !(t.kind === 'punct' && t.text === ';'))) {
    throw new AgroError('refused', 'refused: several statements (send one query at a time)');
  }
  const first = tokens[0];
  const word = first.kind === 'word' ? first.text : '';
  if (!ALLOWED_FIRST.has(word)) {
    const why = REFUSED_FIRST[word];
    if (why) throw new AgroError('refused', `refused: ${why}`);
    // Every statement SQLite knows is listed above, so this is no statement at all (`SELEC ...`,
    // a leading string): SQLite would reject it at prepare time, and it is reported the same way.
    throw new AgroError('sql_error', `near "${word || first.text}": syntax error`);
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
