// The SQL environment's public surface: import from here rather than from the individual modules.
export type * from './types.ts';
export { SqlPool, EXEC_DEFAULTS, type SqlPoolOptions } from './pool.ts';
export { assertSingleReadQuery, assertReadOnlyStatement } from './guard.ts';
export { tokenize, quoteIdent, quoteString, sqlName, SQL_KEYWORDS, type Token } from './lexer.ts';
export { introspectSchema, affinityOf, type IntrospectOptions } from './introspect.ts';
export { renderSchema, type RenderOptions } from './render.ts';
export { resultsMatch, hasOrderBy, cellsEqual, type CompareOptions } from './compare.ts';
export { testSuiteMatch, type TestSuiteOptions, type TestSuiteResult } from './testsuite.ts';
