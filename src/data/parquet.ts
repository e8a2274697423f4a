/**
 * Parquet files of nested rows (lists of structs, structs of structs) through hyparquet-writer, read
 * back with hyparquet. A column is described once (PqType) and both the parquet schema and the check
 * of each row follow from it, so a row that does not fit fails here, not in pyarrow on a cluster.
 */
import { parquetWriteBuffer } from 'hyparquet-writer';
import { parquetReadObjects } from 'hyparquet';
import { readFileSync } from 'node:fs';
import { AgroError } from '../errors.ts';
import { writeFileAtomic } from '../util/fs.ts';

export type PqType = 'string' | 'int64' | 'bool' | { list: PqType } | { struct: Record<string, PqType> };
export type PqSchema = Record<string, PqType>;

interface SchemaElement {
  name: string;
  type?: 'BYTE_ARRAY' | 'INT64' | 'BOOLEAN';
  converted_type?: 'UTF8' | 'LIST';
  repetition_type?: 'REQUIRED' | 'OPTIONAL' | 'REPEATED';
  num_children?: number;
}

/** Schema elements of one field, depth first; lists in the 3-level form pyarrow and Spark write. */
function elements(name: string, t: PqType, repetition: 'REQUIRED' | 'OPTIONAL'): SchemaElement[] {
  if (t === 'string') return [{ name, type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: repetition }];
  if (t === 'int64') return [{ name, type: 'INT64', repetition_type: repetition }];
  if (t === 'bool') return [{ name, type: 'BOOLEAN', repetition_type: repetition }];
  if ('list' in t) {
    return [
      { name, repetition_type: repetition, converted_type: 'LIST', num_children: 1 },
      { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
      ...elements('element', t.list, 'REQUIRED'),
    ];
  }
  const fields = Object.entries(t.struct);
  return [{ name, repetition_type: repetition, num_children: fields.length }, ...fields.flatMap(([k, v]) => elements(k, v, 'REQUIRED'))];
}

export function parquetSchema(schema: PqSchema): SchemaElement[] {
  const cols = Object.entries(schema);
  return [{ name: 'root', num_children: cols.length }, ...cols.flatMap(([k, t]) => elements(k, t, 'REQUIRED'))];
}

/** A value as the writer wants it (int64 as bigint), or an error naming the path that does not fit. */
function conform(value: unknown, t: PqType, path: string): unknown {
  const bad = (what: string): never => {
    throw new AgroError('invalid_input', `parquet row: ${path} must be ${what}, got ${value === null ? 'null' : typeof value}`);
  };
  if (t === 'string') return typeof value === 'string' ? value : bad('a string');
  if (t === 'bool') return typeof value === 'boolean' ? value : bad('a boolean');
  if (t === 'int64') return typeof value === 'number' && Number.isInteger(value) ? BigInt(value) : typeof value === 'bigint' ? value : bad('an integer');
  if ('list' in t) return Array.isArray(value) ? value.map((v, i) => conform(v, t.list, `${path}[${i}]`)) : bad('an array');
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return bad('an object');
  const obj = value as Record<string, unknown>;
  for (const k of Object.keys(obj)) if (!(k in t.struct)) throw new AgroError('invalid_input', `parquet row: ${path}.${k} is not in the schema`);
  return Object.fromEntries(Object.entries(t.struct).map(([k, ft]) => [k, conform(obj[k], ft, `${path}.${k}`)]));
}

/** Parquet bytes of `rows` (every column required, no nulls), in one snappy-compressed file. */
export function parquetBytes(schema: PqSchema, rows: readonly Record<string, unknown>[]): Uint8Array {
  if (rows.length === 0) throw new AgroError('invalid_input', 'parquet: no rows to write');
  const names = Object.keys(schema);
  const columnData = names.map((name) => ({ name, data: rows.map((r, i) => conform(r[name], schema[name], `row ${i}.${name}`)) }));
  const buf = parquetWriteBuffer({ columnData, schema: parquetSchema(schema) as never, createdBy: 'agro' });
  return new Uint8Array(buf);
}

export function writeParquet(path: string, schema: PqSchema, rows: readonly Record<string, unknown>[]): void {
  writeFileAtomic(path, parquetBytes(schema, rows));
}

/** All rows of a parquet file as plain objects (int64 as bigint). */
export async function readParquet(path: string): Promise<Record<string, unknown>[]> {
  const b = readFileSync(path);
  const file = b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength);
  return (await parquetReadObjects({ file })) as Record<string, unknown>[];
}
