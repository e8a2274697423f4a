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
import { tokenize, type Token } from './lexer.ts';
import { PG_ALLOWED_FUNCTIONS, PG_PAREN_KEYWORDS } from './pg-functions.ts';
import { tokenizePg } from './pg-lexer.ts';

/** The SQL dialect a query is checked in: the engine that will run it. */
export type SqlDialect = 'sqlite' | 'postgres';

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

/** PostgreSQL statements besides SQLite's, refused by their first keyword. */
const REFUSED_FIRST_PG: Record<string, string> = {
  ...REFUSED_FIRST,
  MERGE: 'writes are not allowed (MERGE)',
  TRUNCATE: 'writes are not allowed (TRUNCATE)',
  COPY: 'COPY is not allowed (it reads and writes files and tables)',
  GRANT: 'privilege changes are not allowed (GRANT)',
  REVOKE: 'privilege changes are not allowed (REVOKE)',
  SET: 'SET is not allowed (it changes session settings or the role)',
  RESET: 'RESET is not allowed (it changes session settings)',
  SHOW: 'SHOW is not allowed: send a query',
  START: 'transaction control is not allowed (START)',
  ABORT: 'transaction control is not allowed (ABORT)',
  PREPARE: 'PREPARE is not allowed: send the query itself',
  EXECUTE: 'EXECUTE is not allowed: send the query itself',
  DEALLOCATE: 'DEALLOCATE is not allowed',
  DECLARE: 'cursors are not allowed (DECLARE)',
  FETCH: 'cursors are not allowed (FETCH)',
  MOVE: 'cursors are not allowed (MOVE)',
  CLOSE: 'cursors are not allowed (CLOSE)',
  LISTEN: 'LISTEN is not allowed',
  UNLISTEN: 'UNLISTEN is not allowed',
  NOTIFY: 'NOTIFY is not allowed',
  DO: 'DO is not allowed (it runs procedural code)',
  CALL: 'CALL is not allowed (procedures may write)',
  LOCK: 'LOCK is not allowed',
  LOAD: 'LOAD is not allowed (it loads a shared library into the server)',
  DISCARD: 'DISCARD is not allowed',
  CLUSTER: 'CLUSTER is not allowed',
  CHECKPOINT: 'CHECKPOINT is not allowed',
  REFRESH: 'REFRESH is not allowed (it writes a materialized view)',
  COMMENT: 'schema changes are not allowed (COMMENT)',
  SECURITY: 'schema changes are not allowed (SECURITY LABEL)',
  IMPORT: 'foreign data is not allowed (IMPORT FOREIGN SCHEMA)',
  REASSIGN: 'privilege changes are not allowed (REASSIGN OWNED)',
  TABLE: 'TABLE is not allowed: write SELECT * FROM the table',
};

/**
 * Words that make a PostgreSQL query more than a read wherever they stand: a data-modifying CTE
 * (`WITH d AS (DELETE ... RETURNING *) SELECT ...`), `SELECT ... INTO new_table` (creates a table),
 * row locks (`FOR UPDATE`/`FOR SHARE` take locks other sessions wait on).
 */
const REFUSED_WORDS_PG: Record<string, string> = {
  INSERT: 'writes are not allowed (INSERT)',
  UPDATE: 'writes are not allowed (UPDATE)',
  DELETE: 'writes are not allowed (DELETE)',
  MERGE: 'writes are not allowed (MERGE)',
  TRUNCATE: 'writes are not allowed (TRUNCATE)',
  INTO: 'SELECT ... INTO creates a table and is not allowed',
  SHARE: 'row locks are not allowed (FOR SHARE)',
};

/**
 * Longest SQL text run (characters). Real queries are a few thousand; a multi-megabyte one is an attack
 * on memory (one 4 MB literal cost the server about 200 MB on its way through the sandbox and back).
 */
export const MAX_SQL_CHARS = 100_000;

/**
 * Throws AgroError('refused') unless `sql` is a single statement starting with SELECT, WITH or VALUES;
 * AgroError('sql_error') when the first word starts no SQLite statement at all (a syntax error).
 * A trailing semicolon and comments anywhere are fine. Returns the SQL unchanged for chaining.
 * In the `postgres` dialect the query is read with PostgreSQL's lexical rules, and also refused for
 * words that write or lock anywhere in it and for calls to any function not on the allow list (pg-functions.ts).
 */
export function assertSingleReadQuery(sql: string, dialect: SqlDialect = 'sqlite'): string {
  if (sql.length > MAX_SQL_CHARS) throw new AgroError('refused', `refused: the query is ${sql.length} characters long, at most ${MAX_SQL_CHARS}`);
  // The common case, settled without tokenizing (the data factory sends tens of thousands of queries): SQLite
  // SQL that opens with the word SELECT and holds no semicolon and no comment anywhere, so none can end the
  // statement or hide a second one. Everything else, a semicolon inside a string included, is read in full.
  if (dialect === 'sqlite' && /^select /i.test(sql) && !/;|--|\/\*/.test(sql)) return sql;
  const tokens = dialect === 'postgres' ? tokenizePg(sql) : tokenize(sql);
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
    const why = (dialect === 'postgres' ? REFUSED_FIRST_PG : REFUSED_FIRST)[word];
    if (why) throw new AgroError('refused', `refused: ${why}`);
    // Every statement SQLite knows is listed above, so this is no statement at all (`SELEC ...`,
    // a leading string): SQLite would reject it at prepare time, and it is reported the same way.
    throw new AgroError('sql_error', `near "${sql.slice(first.start, first.end)}": syntax error`);
  }
  if (dialect === 'postgres') assertPgReadOnly(tokens);
  return sql;
}

function assertPgReadOnly(tokens: Token[]): void {
  for (let k = 0; k < tokens.length; k++) {
    const t = tokens[k];
    const prev = tokens[k - 1];
    // A column or table named like a keyword is only ever reached qualified (t.update) or quoted.
    const qualified = isPunct(prev, '.');
    if (t.kind === 'word' && !qualified) {
      const why = REFUSED_WORDS_PG[t.text.toUpperCase()];
      if (why) throw new AgroError('refused', `refused: ${why}`);
    }
    if ((t.kind === 'word' || t.kind === 'qid') && isPunct(tokens[k + 1], '(')) {
      const name = calledFunction(tokens, k);
      if (name !== undefined && !PG_ALLOWED_FUNCTIONS.has(name)) {
        throw new AgroError('refused', `refused: function ${name}() is not one agro allows on PostgreSQL (known-pure functions only: src/sql/pg-functions.ts)`);
      }
    }
  }
}

function isPunct(t: Token | undefined, text: string): boolean {
  return t?.kind === 'punct' && t.text === text;
}

/**
 * The function a name followed by `(` calls, as the allow list spells it (unquoted names fold to lower
 * case, a quoted one is exact), or undefined where the parenthesis opens no call: the grammar's own words
 * (IN (, OVER (, CAST (), a type's modifiers (`::numeric(10,2)`, `AS varchar(20)`), an alias's column list
 * (`AS g(n)`) and a CTE's (`t(a, b) AS (`). A name qualified by a schema other than pg_catalog is returned
 * whole, so it is never on the list.
 */
function calledFunction(tokens: Token[], k: number): string | undefined {
  const t = tokens[k];
  const prev = tokens[k - 1];
  const own = t.kind === 'word' ? t.text.toLowerCase() : t.text;
  if (isPunct(prev, '.')) {
    const schema = tokens[k - 2];
    const schemaName = schema?.kind === 'word' ? schema.text.toLowerCase() : schema?.kind === 'qid' ? schema.text : '?';
    return schemaName === 'pg_catalog' && !isPunct(tokens[k - 3], '.') ? own : `${schemaName}.${own}`;
  }
  if (t.kind === 'word' && PG_PAREN_KEYWORDS.has(t.text.toUpperCase())) return undefined;
  if (prev?.kind === 'word' && prev.text.toUpperCase() === 'AS') return undefined;
  if (isPunct(prev, ':') && isPunct(tokens[k - 2], ':')) return undefined;
  // `name(a, b) AS (` / `AS [NOT] MATERIALIZED (`: a CTE's column list (a call followed by AS takes a name, not a parenthesis).
  const open = tokens[k + 1];
  let m = k + 2;
  while (m < tokens.length && !(isPunct(tokens[m], ')') && tokens[m].depth === open.depth)) m++;
  const words = tokens.slice(m + 1, m + 5).map((x) => (x.kind === 'word' ? x.text.toUpperCase() : x.kind === 'punct' ? x.text : '?'));
  if (words[0] === 'AS' && (words[1] === '(' || (words[1] === 'MATERIALIZED' && words[2] === '(') || (words[1] === 'NOT' && words[2] === 'MATERIALIZED' && words[3] === '('))) return undefined;
  return own;
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
