/**
 * What the model sees of a database, as a public surface: its documentation (readers of every format and a
 * PostgreSQL database's COMMENTs), its value index, schema linking, the rendered and the grounded schema text.
 * Import from here (`agro/prompt`) rather than from the individual modules.
 *
 * @module agro/prompt
 */
export { renderSchema, type RenderOptions } from './render.ts';
export { readDocs, readDocsWithFormat, findDocs, docsLookup, type DocsFormat, type FoundDocs, type DocsLookup } from './docs.ts';
export { dbDocsSchema, type DbDocs, type TableDoc, type ColumnDoc } from './docs-types.ts';
export { pgDocs } from './pg-docs.ts';
export { ValueIndex, buildValueIndex, buildValueIndexFrom, type ValueIndexOptions, type ValueMatch, type MatchKind, type LookupOptions } from './value-index.ts';
export { buildValueIndexPostgres } from './pg-value-index.ts';
export { databaseDocs, databaseValueIndex } from './sources.ts';
export { linkSchema, type SchemaLink, type TableLink, type ColumnLink, type ValueHint, type LinkOptions } from './schema-link.ts';
export { groundedSchema, renderGrounded, type GroundedOptions } from './grounded.ts';
