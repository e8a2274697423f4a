/**
 * What the role behind a PostgreSQL URL may do beyond reading, read once at connect time. Untrusted SQL (a
 * question's answer, a policy's tool call, a dashboard or API request, `agro sql`) runs only as a role that
 * can do nothing else (issue 47: with a superuser or owner URL the lexical guard was all that stood between
 * a query and the server's files); the factory's own verified queries may run as the owner.
 */
import type pg from 'pg';
import { AgroError } from '../errors.ts';

/** The CLI flag that accepts the risk (one home: every command that runs untrusted SQL offers it). */
export const ALLOW_PRIVILEGED_ROLE_FLAG = '--allow-privileged-role';

/** Why a role is more than a reader, in words (empty: a reader). */
export async function rolePrivileges(client: pg.ClientBase): Promise<{ role: string; reasons: string[] }> {
  const r = await client.query<{ role: string; rolsuper: boolean; rolcreaterole: boolean; rolbypassrls: boolean; rolreplication: boolean; files_read: boolean; files_write: boolean; program: boolean; writable: string | null; n_writable: string }>(
    `SELECT current_user AS role, r.rolsuper, r.rolcreaterole, r.rolbypassrls, r.rolreplication,
       pg_has_role(current_user, 'pg_read_server_files', 'MEMBER') AS files_read,
       pg_has_role(current_user, 'pg_write_server_files', 'MEMBER') AS files_write,
       pg_has_role(current_user, 'pg_execute_server_program', 'MEMBER') AS program,
       (SELECT string_agg(t, ', ') FROM (SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname) AS t
          FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%'
            AND (pg_has_role(current_user, c.relowner, 'USAGE') OR has_table_privilege(c.oid, 'INSERT, UPDATE, DELETE, TRUNCATE'))
          ORDER BY 1 LIMIT 3) s) AS writable,
       (SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%'
            AND (pg_has_role(current_user, c.relowner, 'USAGE') OR has_table_privilege(c.oid, 'INSERT, UPDATE, DELETE, TRUNCATE'))) AS n_writable
     FROM pg_roles r WHERE r.rolname = current_user`,
  );
  const row = r.rows[0];
  if (!row) return { role: '?', reasons: [] };
  const reasons: string[] = [];
  // A superuser can do everything else listed: saying so is enough.
  if (row.rolsuper) return { role: row.role, reasons: ['a superuser'] };
  if (row.rolcreaterole) reasons.push('allowed to create roles');
  if (row.rolbypassrls) reasons.push('exempt from row security');
  if (row.rolreplication) reasons.push('a replication role');
  if (row.files_read) reasons.push('a member of pg_read_server_files');
  if (row.files_write) reasons.push('a member of pg_write_server_files');
  if (row.program) reasons.push('a member of pg_execute_server_program');
  if (Number(row.n_writable) > 0) reasons.push(`the owner of, or allowed to write, ${row.n_writable} table${row.n_writable === '1' ? '' : 's'} (${row.writable}${Number(row.n_writable) > 3 ? ', ...' : ''})`);
  return { role: row.role, reasons };
}

/** The one-line refusal (exit 5), naming the role, why, and the two ways on. */
export function privilegedRoleError(role: string, reasons: string[], where: string): AgroError {
  return new AgroError(
    'refused',
    `refused: the PostgreSQL role ${JSON.stringify(role)} on ${where} is ${reasons.join(', ')}; untrusted SQL (questions' answers, a policy's queries, dashboard and API requests, agro sql) runs only as a role that can just read: make one with \`agro db copy <db.sqlite> <url> --reader <name>\` or the GRANTs in docs/postgres.md, or pass ${ALLOW_PRIVILEGED_ROLE_FLAG} to run it anyway (such a query could then change data or read and write the server's files)`,
  );
}

/**
 * Why `role` cannot be made agro's reader (empty: it can): `agro db copy --reader` demotes and re-passwords the
 * role it is given, so the login role itself, or a role that holds more than reading (attributes, server-file
 * roles, membership in other roles, ownership of a database or of objects, write grants), is refused before
 * anything changes (issue 47: `--reader <the login role>` demoted it part-way, then failed).
 */
export async function readerRoleProblems(client: pg.ClientBase, role: string): Promise<string[]> {
  const r = await client.query<{ login: string; exists: boolean; rolsuper: boolean; rolcreaterole: boolean; rolcreatedb: boolean; rolbypassrls: boolean; rolreplication: boolean; server_roles: string | null; member_of: string | null; owns_db: boolean; owns: boolean; writes: boolean }>(
    `SELECT current_user AS login, r.oid IS NOT NULL AS exists, r.rolsuper, r.rolcreaterole, r.rolcreatedb, r.rolbypassrls, r.rolreplication,
       (SELECT string_agg(s, ', ') FROM unnest(ARRAY['pg_read_server_files', 'pg_write_server_files', 'pg_execute_server_program']) s WHERE r.oid IS NOT NULL AND pg_has_role(r.oid, s, 'MEMBER')) AS server_roles,
       (SELECT string_agg(g.rolname, ', ') FROM pg_auth_members m JOIN pg_roles g ON g.oid = m.roleid WHERE m.member = r.oid) AS member_of,
       EXISTS (SELECT 1 FROM pg_database d WHERE d.datdba = r.oid) AS owns_db,
       EXISTS (SELECT 1 FROM pg_class c WHERE c.relowner = r.oid) OR EXISTS (SELECT 1 FROM pg_namespace n WHERE n.nspowner = r.oid) AS owns,
       EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE r.oid IS NOT NULL AND c.relkind IN ('r', 'p', 'v', 'm', 'f') AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND has_table_privilege(r.oid, c.oid, 'INSERT, UPDATE, DELETE, TRUNCATE')) AS writes
     FROM (SELECT 1) one LEFT JOIN pg_roles r ON r.rolname = $1`,
    [role],
  );
  const row = r.rows[0];
  if (role === row.login) return ['it is the role this URL logs in as (the reader must be another role: agro would demote and re-password it)'];
  if (!row.exists) return [];
  const problems: string[] = [];
  if (row.rolsuper) problems.push('a superuser');
  if (row.rolcreaterole) problems.push('allowed to create roles');
  if (row.rolcreatedb) problems.push('allowed to create databases');
  if (row.rolbypassrls) problems.push('exempt from row security');
  if (row.rolreplication) problems.push('a replication role');
  if (row.server_roles) problems.push(`a member of ${row.server_roles}`);
  if (row.member_of) problems.push(`a member of ${row.member_of}`);
  if (row.owns_db) problems.push('the owner of a database');
  if (row.owns) problems.push('the owner of tables or schemas');
  if (row.writes) problems.push('allowed to write tables');
  return problems;
}
