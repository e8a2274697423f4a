/**
 * The SQL sandbox's public surface: the read-only sandbox (`SqlPool`), the guard, the lexer, schema
 * introspection, result comparison, test suites and the correctness judge, and the executor over SQLite and PostgreSQL. What the model
 * sees of a database (its documentation, value index, schema linking, the rendered schema) is `agro/prompt`.
 * Import from here (`agro/sql`) rather than from the individual modules.
 *
 * @module agro/sql
 */
export type * from './types.ts';
export { SqlPool, EXEC_DEFAULTS, type SqlPoolOptions } from './pool.ts';
export { assertSingleReadQuery, assertReadOnlyStatement } from './guard.ts';
export { tokenize, quoteIdent, quoteString, sqlName, SQL_KEYWORDS, type Token } from './lexer.ts';
export { introspectSchema, affinityOf, type IntrospectOptions } from './introspect.ts';
export { resultsMatch, hasOrderBy, cellsEqual, type CompareOptions } from './compare.ts';
export { testSuiteMatch, type TestSuiteOptions, type TestSuiteResult } from './testsuite.ts';
export { Judge, JUDGE_DEFAULTS, judgeConfigSchema, type JudgeConfig, type JudgedGold, type Verdict } from './judge.ts';
export { openDatabase, legacyQuotesAvailable } from './open-database.mjs';
export { createExecutor, introspectDatabase, engineOf, EngineRouter, type ExecutorOptions } from './executor.ts';
export { dialectOf, nameIn, asReal, datePart, likeOp, isNotTrue, textLength } from './dialect.ts';
export { PgExecutor, isPostgresUrl, redactUrl, type PgExecutorOptions } from './postgres.ts';
export { introspectPostgres } from './pg-introspect.ts';
export { databaseId } from './db-id.ts';
export { copySqliteToPostgres, type CopyOptions, type CopyReport } from './pg-copy.ts';
export { sandboxRoleSql, type SandboxRole } from './pg-setup.ts';
export type { SqlDialect } from './guard.ts';
