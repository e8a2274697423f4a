/**
 * The SQL that makes a PostgreSQL role fit for agro's sandbox: it may log in and read the tables of one
 * database, and nothing else. Run it as a superuser (or the database's owner) once; docs/postgres.md
 * shows it, `agro db copy --reader` and the tests run it.
 */
import { quoteIdent, quoteString } from './lexer.ts';

/** The large-object functions that create or change one (their signatures, for REVOKE). */
const LARGE_OBJECT_WRITERS = ['lo_create(oid)', 'lo_creat(integer)', 'lo_from_bytea(oid, bytea)', 'lo_put(oid, bigint, bytea)', 'lo_unlink(oid)', 'lowrite(integer, bytea)', 'lo_truncate(integer, integer)', 'lo_truncate64(integer, bigint)'];

export interface SandboxRole {
  role: string;
  password: string;
  database: string;
  /** Schemas whose tables the role reads (default: public). */
  schemas?: string[];
}

/** The statements, in order (each one statement, for drivers that send them one by one). */
export function sandboxRoleSql(r: SandboxRole): string[] {
  const role = quoteIdent(r.role);
  const db = quoteIdent(r.database);
  const schemas = (r.schemas ?? ['public']).map(quoteIdent);
  return [
    // Create or reset: NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS, no inherited roles.
    `DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = ${quoteString(r.role)}) THEN CREATE ROLE ${role} LOGIN; END IF; END $$`,
    `ALTER ROLE ${role} WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS NOINHERIT CONNECTION LIMIT 64 PASSWORD ${quoteString(r.password)}`,
    // Every session of the role is read-only and bounded even if a client forgets to say so.
    `ALTER ROLE ${role} SET default_transaction_read_only = on`,
    `ALTER ROLE ${role} SET statement_timeout = '30s'`,
    `ALTER ROLE ${role} SET idle_in_transaction_session_timeout = '60s'`,
    `ALTER ROLE ${role} SET temp_file_limit = '1GB'`,
    // PUBLIC may create objects and temp tables by default in older servers: take it away on this database.
    `REVOKE ALL ON DATABASE ${db} FROM PUBLIC`,
    `REVOKE CREATE ON SCHEMA public FROM PUBLIC`,
    `GRANT CONNECT ON DATABASE ${db} TO ${role}`,
    ...schemas.flatMap((s) => [`GRANT USAGE ON SCHEMA ${s} TO ${role}`, `GRANT SELECT ON ALL TABLES IN SCHEMA ${s} TO ${role}`]),
    // Before PostgreSQL 17 a read-only transaction may still create large objects (lo_create, lo_creat,
    // lo_from_bytea: the sandbox battery found it), so take those functions from PUBLIC in this database.
    // Only a superuser may; under another owner the guard (which refuses lo_*) is the line that holds.
    `DO $$ BEGIN IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN ${LARGE_OBJECT_WRITERS.map((f) => `REVOKE EXECUTE ON FUNCTION pg_catalog.${f} FROM PUBLIC;`).join(' ')} END IF; END $$`,
  ];
}
