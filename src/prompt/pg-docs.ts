/**
 * A PostgreSQL database's documentation: its `COMMENT`s, read over one read-only connection with the catalog
 * queries of its introspection (src/sql/pg-introspect.ts), in the DbDocs shape every documentation reader
 * produces (docs-types.ts).
 */
import { AgroError } from '../errors.ts';
import { COLUMNS_SQL, TABLES_SQL, connect, rows } from '../sql/pg-introspect.ts';
import { redactUrl } from '../sql/postgres.ts';
import type { DbDocs } from './docs-types.ts';

/**
 * The database's `COMMENT`s as its documentation: the database's comment is the overview, a table's
 * and a column's comment their descriptions. Tables with no comment anywhere are left out.
 */
export async function pgDocs(url: string): Promise<DbDocs> {
  const c = await connect(url);
  try {
    const [[overview]] = await rows(c, `SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = current_database()`);
    const objects = await rows(c, TABLES_SQL);
    const byOid = new Map(objects.map((r) => [Number(r[0]), String(r[1])]));
    const cols = await rows(c, COLUMNS_SQL, [[...byOid.keys()]]);
    const tables: DbDocs['tables'] = [];
    for (const obj of objects) {
      const oid = Number(obj[0]);
      const columns = cols.filter((r) => Number(r[0]) === oid && typeof r[4] === 'string' && r[4] !== '').map((r) => ({ column: String(r[1]), description: String(r[4]) }));
      const description = typeof obj[3] === 'string' && obj[3] !== '' ? obj[3] : undefined;
      if (description || columns.length > 0) tables.push({ table: String(obj[1]), ...(description ? { description } : {}), columns });
    }
    return { ...(typeof overview === 'string' && overview !== '' ? { overview } : {}), tables };
  } catch (err) {
    throw new AgroError('invalid_input', `cannot read the comments of ${redactUrl(url)}: ${err instanceof Error ? err.message : String(err)}`);
  } finally {
    await c.end().catch(() => undefined);
  }
}
