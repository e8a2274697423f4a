/**
 * How each engine spells the few constructs where agro's generated SQL differs between SQLite and
 * PostgreSQL, so a printer above src/sql asks for "a name", "a real division" or "the year of a date"
 * and gets the engine's form. Each choice keeps results equal on both engines for the same data:
 *  - names: PostgreSQL folds unquoted names to lower case and reserves more words (USER, ANALYSE,
 *    ...), so a name is bare there only when it is lower case and no keyword of either engine;
 *  - real division: PostgreSQL's REAL is a 4-byte float; FLOAT is double precision there, and a REAL
 *    (8-byte) affinity in SQLite, so CAST(x AS FLOAT) is the same double on both;
 *  - year and month of an ISO date text: strftime is SQLite's; to_char of a timestamp gives the same
 *    zero-padded text ('2009', '03'), and also reads a native date or timestamp column;
 *  - LIKE: SQLite's LIKE ignores ASCII case, PostgreSQL's does not, so PostgreSQL gets ILIKE;
 *  - a condition that is false or NULL: `IS NOT 1` in SQLite, `IS NOT TRUE` in PostgreSQL.
 */
import { quoteIdent, sqlName, SQL_KEYWORDS } from './lexer.ts';
import { isPostgresUrl } from './postgres.ts';
import type { SqlDialect } from './guard.ts';

export type { SqlDialect };

/**
 * PostgreSQL's reserved key words and those that cannot be a bare column name (Appendix C of its manual:
 * "reserved", "reserved (can be function or type)" and "non-reserved (cannot be function or type)").
 */
const PG_KEYWORDS: ReadonlySet<string> = new Set(
  (
    'all analyse analyze and any array as asc asymmetric authorization between bigint binary bit boolean both ' +
    'case cast char character check coalesce collate collation column concurrently constraint create cross ' +
    'current_catalog current_date current_role current_schema current_time current_timestamp current_user dec ' +
    'decimal default deferrable desc distinct do else end except exists extract false fetch float for foreign ' +
    'freeze from full grant greatest group grouping having ilike in initially inner inout int integer intersect ' +
    'interval into is isnull join lateral leading least left like limit localtime localtimestamp national natural ' +
    'nchar none normalize not notnull null nullif numeric offset on only or order out outer overlaps overlay ' +
    'placing position precision primary real references returning right row select session_user setof similar ' +
    'smallint some substring symmetric table tablesample then time timestamp to trailing treat trim true union ' +
    'unique user using values varchar variadic verbose when where window with xmlattributes xmlconcat xmlelement ' +
    'xmlexists xmlforest xmlnamespaces xmlparse xmlpi xmlroot xmlserialize xmltable'
  ).split(' '),
);

/** The dialect of the engine a database string names (a SQLite path or a postgres:// URL). */
export function dialectOf(db: string): SqlDialect {
  return isPostgresUrl(db) ? 'postgres' : 'sqlite';
}

/** A table or column name as written in SQL for the engine: bare when unambiguous, else double-quoted. */
export function nameIn(name: string, d: SqlDialect = 'sqlite'): string {
  if (d === 'postgres') return /^[a-z_][a-z0-9_]*$/.test(name) && !PG_KEYWORDS.has(name) && !SQL_KEYWORDS.has(name) ? name : quoteIdent(name);
  return sqlName(name);
}

/** `expr` as a double, so that a division of integers does not truncate. */
export function asReal(expr: string, d: SqlDialect = 'sqlite'): string {
  return d === 'postgres' ? `CAST(${expr} AS FLOAT)` : `CAST(${expr} AS REAL)`;
}

/** The year ('2009') or the month ('03') of an ISO date or date-time, as text. */
export function datePart(part: 'year' | 'month', expr: string, d: SqlDialect = 'sqlite'): string {
  if (d === 'postgres') return `to_char(CAST(${expr} AS TIMESTAMP), '${part === 'year' ? 'YYYY' : 'MM'}')`;
  return `strftime('${part === 'year' ? '%Y' : '%m'}', ${expr})`;
}

/** The operator of a pattern match that ignores case as SQLite's LIKE does. */
export function likeOp(d: SqlDialect = 'sqlite'): string {
  return d === 'postgres' ? 'ILIKE' : 'LIKE';
}

/** `(cond)` holds neither true: false or NULL. */
export function isNotTrue(cond: string, d: SqlDialect = 'sqlite'): string {
  return d === 'postgres' ? `(${cond}) IS NOT TRUE` : `(${cond}) IS NOT 1`;
}

/** The length of a value as text (PostgreSQL's length() takes text and bytes only). */
export function textLength(expr: string, d: SqlDialect = 'sqlite'): string {
  return d === 'postgres' ? `length(CAST(${expr} AS TEXT))` : `length(${expr})`;
}
