/**
 * The SQL environment's public surface: the read-only sandbox (`SqlPool`), the guard, the lexer, schema
 * introspection and rendering, result comparison, test suites and the correctness judge, and the grounding of a question in a database
 * (its documentation, a value index, schema linking, the grounded schema text). Import from here (`agro/sql`) rather than
 * from the individual modules.
 *
 * @module agro/sql
 */
export type * from './types.ts';
export { SqlPool, EXEC_DEFAULTS, type SqlPoolOptions } from './pool.ts';
export { assertSingleReadQuery, assertReadOnlyStatement } from './guard.ts';
export { tokenize, quoteIdent, quoteString, sqlName, SQL_KEYWORDS, type Token } from './lexer.ts';
export { introspectSchema, affinityOf, type IntrospectOptions } from './introspect.ts';
export { renderSchema, type RenderOptions } from './render.ts';
export { resultsMatch, hasOrderBy, cellsEqual, type CompareOptions } from './compare.ts';
export { testSuiteMatch, type TestSuiteOptions, type TestSuiteResult } from './testsuite.ts';
export { Judge, JUDGE_DEFAULTS, judgeConfigSchema, type JudgeConfig, type JudgedGold, type Verdict } from './judge.ts';
export { openDatabase, legacyQuotesAvailable } from './open-database.mjs';
export { readDocs, readDocsWithFormat, findDocs, docsLookup, type DocsFormat, type FoundDocs, type DocsLookup } from './docs.ts';
export { dbDocsSchema, type DbDocs, type TableDoc, type ColumnDoc } from './docs-types.ts';
export { ValueIndex, buildValueIndex, buildValueIndexFrom, type ValueIndexOptions, type ValueMatch, type MatchKind, type LookupOptions } from './value-index.ts';
export { linkSchema, type SchemaLink, type TableLink, type ColumnLink, type ValueHint, type LinkOptions } from './link.ts';
export { groundedSchema, renderGrounded, type GroundedOptions } from './grounded.ts';
export { createExecutor, introspectDatabase, databaseDocs, databaseValueIndex, engineOf, EngineRouter, type ExecutorOptions } from './executor.ts';
export { dialectOf, nameIn, asReal, datePart, likeOp, isNotTrue, textLength } from './dialect.ts';
export { buildValueIndexPostgres } from './pg-value-index.ts';
export { PgExecutor, isPostgresUrl, redactUrl, type PgExecutorOptions } from './postgres.ts';
export { introspectPostgres, pgDocs } from './pg-introspect.ts';
export { copySqliteToPostgres, type CopyOptions, type CopyReport } from './pg-copy.ts';
export { sandboxRoleSql, type SandboxRole } from './pg-setup.ts';
export type { SqlDialect } from './guard.ts';
