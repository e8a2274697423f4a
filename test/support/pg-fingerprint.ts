/**
 * What a PostgreSQL server holds that a query must never change, as one string to compare before and after:
 * every table's rows (count and md5) in every database, the non-catalog objects and their grants, large
 * objects, roles and their attributes, per-role settings and the server's settings. Read as the superuser.
 */
import pg from 'pg';
import type { PgServer } from './postgres.ts';

export async function pgFingerprint(server: PgServer, home = 'postgres'): Promise<string> {
  const out: string[] = [];
  const c = new pg.Client({ connectionString: server.adminUrl(home) });
  await c.connect();
  try {
    const dbs = (await c.query(`SELECT datname FROM pg_database WHERE NOT datistemplate ORDER BY 1`)).rows.map((r: { datname: string }) => r.datname);
    out.push(`databases ${dbs.join(',')}`);
    for (const db of dbs) {
      const d = new pg.Client({ connectionString: server.adminUrl(db) });
      await d.connect();
      try {
        const tables = (await d.query(`SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname) AS t FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind IN ('r','p','m') AND n.nspname NOT IN ('pg_catalog','information_schema') ORDER BY 1`)).rows.map((r: { t: string }) => r.t);
        for (const t of tables) {
          const r = await d.query(`SELECT count(*) AS n, md5(coalesce(string_agg(x::text, '|' ORDER BY x::text), '')) AS h FROM ${t} x`);
          out.push(`${db} ${t} ${r.rows[0].n} ${r.rows[0].h}`);
        }
        const objs = await d.query(`SELECT count(*) AS n, md5(string_agg(relname::text || relkind::text || coalesce(relacl::text, ''), ',' ORDER BY oid)) AS h FROM pg_class WHERE relnamespace NOT IN ('pg_catalog'::regnamespace, 'information_schema'::regnamespace, 'pg_toast'::regnamespace)`);
        out.push(`${db} objects ${objs.rows[0].n} ${objs.rows[0].h}`);
        const seqs = await d.query(`SELECT coalesce(string_agg(schemaname || '.' || sequencename || '=' || coalesce(last_value::text, 'null'), ',' ORDER BY 1), '') AS s FROM pg_sequences`);
        out.push(`${db} sequences ${seqs.rows[0].s}`);
        const lo = await d.query(`SELECT count(*) AS n FROM pg_largeobject_metadata`);
        out.push(`${db} large objects ${lo.rows[0].n}`);
      } finally {
        await d.end();
      }
    }
    const roles = await c.query(`SELECT string_agg(concat_ws(' ', rolname, rolsuper, rolcreaterole, rolcreatedb, rolcanlogin, rolconfig::text), ',' ORDER BY rolname) AS r FROM pg_roles`);
    out.push(`roles ${roles.rows[0].r}`);
    const settings = await c.query(`SELECT coalesce(string_agg(setconfig::text, ',' ORDER BY setrole, setdatabase), '') AS s FROM pg_db_role_setting`);
    out.push(`role settings ${settings.rows[0].s}`);
    const conf = await c.query(`SELECT string_agg(name || '=' || setting, ',' ORDER BY name) AS s FROM pg_settings WHERE context IN ('sighup', 'postmaster', 'superuser')`);
    out.push(`server settings ${conf.rows[0].s}`);
  } finally {
    await c.end();
  }
  return out.join('\n');
}
