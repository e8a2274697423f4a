/**
 * Reads a database's documentation into DbDocs (docs-types.ts), whatever its format:
 *   - BIRD's `database_description/<table>.csv` folder: one CSV per table with the header
 *     original_column_name,column_name,column_description,data_format,value_description. The files are not
 *     clean: some start with a UTF-8 BOM, a few are Windows-1252 rather than UTF-8, names carry trailing spaces,
 *     data_format is missing in some headers, fields span lines, value descriptions start with
 *     "commonsense evidence:", and a macOS archive leaves `._<table>.csv` metadata files beside them.
 *   - a Spider / KaggleDBQA `tables.json` (an array of entries, one per db_id): table_names(_original),
 *     column_names(_original) and, when present, column_names_manually_normalized_alternative,
 *     column_descriptions, value_enums (column -> code -> meaning) and db_overview.
 *   - agro's own JSON (`dbDocsSchema`).
 * The parsers are pure (text in, DbDocs out); readDocs and findDocs are the file-system edge.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { basename, dirname, extname, join } from 'node:path';
import { Parser as CsvParser } from 'csv-parse';
import { z } from 'zod';
import { AgroError, parseWith } from '../errors.ts';
import { readInputBytes, readInputChunks } from '../util/fs.ts';
import { dbDocsSchema, type ColumnDoc, type DbDocs, type TableDoc } from './docs-types.ts';
import { fold } from './words.ts';
import { databaseId } from '../sql/db-id.ts';

export type DocsFormat = 'bird' | 'spider' | 'agro';

// ---------------------------------------------------------------- text helpers

/** Bytes as text: UTF-8 (BOM dropped) when valid, else Windows-1252, which is what BIRD's non-UTF-8 files are. */
export function decodeText(bytes: Uint8Array): string {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    text = new TextDecoder('windows-1252').decode(bytes);
  }
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/** One line, single spaces, trimmed; undefined when nothing is left. */
function clean(s: unknown): string | undefined {
  if (typeof s !== 'string') return undefined;
  const t = s.replace(/\s+/g, ' ').trim();
  return t === '' ? undefined : t;
}

/** Same words once folded: "Reactor Type" says nothing that `ReactorType` does not. */
function sameWords(a: string, b: string): boolean {
  const squash = (s: string): string => fold(s).replace(/ /g, '');
  return squash(a) === squash(b);
}

// ---------------------------------------------------------------- BIRD value descriptions

const COMMONSENSE = /\s*common\s*sense\s+(evidence|reasoning)\s*:?\s*/gi;

const NOT_CODES = new Set(['note', 'notes', 'e g', 'eg', 'i e', 'ie', 'example', 'examples', 'commonsense evidence', 'hint', 'format', 'unit', 'units']);

/**
 * Splits a BIRD value_description into code -> meaning pairs and the rest. Pairs are read from items separated by
 * newlines, bullets or semicolons written `code: meaning`, `code = meaning` or `code -> meaning`, with a short code
 * (at most 3 words, 24 characters). Two pairs at least: a lone "Note: ..." is prose, not a code list.
 */
export function parseValueDescription(text: string): { values?: Record<string, string>; note?: string } {
  // BIRD's "commonsense evidence:" marks a note, at the start or after a value list; it says nothing itself.
  const t = text.replace(/\r\n?/g, '\n').replace(COMMONSENSE, '\n').replace(/^[ \t]*[-*][ \t]+/gm, '').trim();
  if (t === '' || /^(not useful|useless|none|nan|null|n\/a)\.?$/i.test(t)) return {};
  const items = t
    .split(/\n|•|·|;|\s(?=\d+\s*[:=]\s)|,\s+(?=["']?[\w\s.-]{1,24}["']?\s*[:=]\s)/)
    .map((s) => s.trim())
    .filter((s) => s !== '');
  const values: Record<string, string> = {};
  const rest: string[] = [];
  for (const item of items) {
    const m = /^[-*]?\s*["'‘“`]?([^:=\n"'’”`]{1,24}?)["'’”`]?\s*(?::|=|->|-->|→)\s*(.+)$/.exec(item);
    const code = m ? m[1].trim() : '';
    if (m && code !== '' && code.split(/\s+/).length <= 3 && !NOT_CODES.has(fold(code)) && clean(m[2]) !== undefined) {
      values[code] = clean(m[2].replace(/^["'‘“]|["'’”]$/g, ''))!;
    } else {
      rest.push(item);
    }
  }
  if (Object.keys(values).length < 2) return { note: clean(t.replace(/\n+/g, '; ')) };
  const note = clean(rest.join('; '));
  return note === undefined ? { values } : { values, note };
}

// ---------------------------------------------------------------- BIRD: database_description/*.csv

const BIRD_HEADER = 'original_column_name';

/**
 * The most characters kept of one field of a BIRD description CSV; a longer field is cut as it is read (and
 * ends with " …"). BIRD's own value descriptions stay far below it; without a cap one 100 MB field made
 * `synth` peak at 3.3 GB, the field copied by each cleaning step.
 */
export const DOC_FIELD_MAX_CHARS = 10_000;

/** A field cut to DOC_FIELD_MAX_CHARS, copied out so that the long original can be freed. */
function capField(field: unknown): string {
  const s = typeof field === 'string' ? field : '';
  if (s.length <= DOC_FIELD_MAX_CHARS) return s;
  // A slice would keep the whole field alive (V8 slices share their parent): a round trip through bytes copies it.
  return Buffer.from(s.slice(0, DOC_FIELD_MAX_CHARS), 'utf8').toString('utf8') + ' …';
}

/** A TableDoc built from BIRD CSV records as they come: the header first, then one column per row; nothing else kept. */
function birdTableBuilder(table: string, where: string): { record(fields: string[]): void; done(): TableDoc } {
  let header: string[] | undefined;
  let iOrig = -1, iName = -1, iDesc = -1, iValues = -1;
  const columns: ColumnDoc[] = [];
  const seen = new Set<string>();
  const useHeader = (fields: string[]): void => {
    header = fields.map((h) => h.replace(/^\uFEFF/, '').trim().toLowerCase());
    [iOrig, iName, iDesc, iValues] = ['original_column_name', 'column_name', 'column_description', 'value_description'].map((n) => header!.indexOf(n));
    if (iOrig < 0) throw new AgroError('invalid_input', `${where}: not a BIRD column description file (its header has no ${BIRD_HEADER})`);
  };
  const useRow = (row: string[]): void => {
    const column = clean(row[iOrig]);
    if (column === undefined || seen.has(column.toLowerCase())) return;
    seen.add(column.toLowerCase());
    const doc: ColumnDoc = { column };
    const name = iName >= 0 ? clean(row[iName]) : undefined;
    if (name !== undefined && !sameWords(name, column)) doc.name = name;
    let description = iDesc >= 0 && typeof row[iDesc] === 'string' ? clean(row[iDesc].replace(COMMONSENSE, '. ').replace(/^\.\s*/, '')) : undefined;
    if (description !== undefined && (sameWords(description, column) || (name !== undefined && sameWords(description, name)))) description = undefined;
    const vd = iValues >= 0 && typeof row[iValues] === 'string' ? parseValueDescription(row[iValues]) : {};
    if (vd.values) doc.values = vd.values;
    // DbDocs has one free-text field per column: a value note that is not a code list joins the description.
    const note = vd.note !== undefined && (description === undefined || !fold(description).includes(fold(vd.note))) ? vd.note : undefined;
    const text = [description, note].filter((s) => s !== undefined).join('. Values: ');
    if (text !== '') doc.description = description === undefined && note !== undefined ? `Values: ${note}` : text;
    if (doc.name || doc.description || doc.values) columns.push(doc);
  };
  return {
    record: (fields) => (header === undefined ? useHeader(fields) : useRow(fields)),
    done: () => {
      if (header === undefined) useHeader([]);
      return { table, columns };
    },
  };
}

/**
 * csv-parse's streaming parser fed text in pieces, each record handed to `onRecord` with its fields capped
 * (DOC_FIELD_MAX_CHARS) and then dropped: the parser keeps one field at a time, never the file's records. Its
 * write() and end() run the parse in the caller's turn (records leave through on_record, so it never waits on
 * a reader), so the callers stay synchronous.
 */
function csvFeed(where: string, onRecord: (fields: string[]) => void): { write(text: string): void; end(): void } {
  const parser = new CsvParser({
    bom: true, relax_column_count: true, relax_quotes: true, skip_empty_lines: true,
    on_record: (fields: unknown[]) => { onRecord(fields.map(capField)); return null; },
  });
  // The error is read below from `errored`, in the same turn; this listener only keeps the later event quiet.
  parser.on('error', () => {});
  const check = (): void => {
    const err = parser.errored;
    if (!err) return;
    if (err instanceof AgroError) throw err;
    throw new AgroError('invalid_input', `${where}: not a readable CSV file (${err.message})`);
  };
  return {
    write: (text) => { if (text !== '') parser.write(text); check(); },
    end: () => { parser.end(); check(); },
  };
}

/** One BIRD description CSV (already decoded) as the TableDoc of `table`. `where` names the file in errors. */
export function parseBirdCsv(table: string, text: string, where: string): TableDoc {
  const doc = birdTableBuilder(table, where);
  const feed = csvFeed(where, doc.record);
  feed.write(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  feed.end();
  return doc.done();
}

/**
 * One BIRD description CSV file as the TableDoc of `table`, read a MiB at a time (memory: the longest field,
 * not the file): UTF-8 when the whole file is valid UTF-8 (a BOM dropped), else read again as Windows-1252,
 * which is what BIRD's non-UTF-8 files are (decodeText's rule, applied as the bytes stream by).
 */
export function readBirdCsv(path: string, table: string): TableDoc {
  try {
    return readBirdCsvAs(path, table, 'utf-8');
  } catch (err) {
    if ((err as { code?: unknown }).code !== 'ERR_ENCODING_INVALID_ENCODED_DATA') throw err;
    return readBirdCsvAs(path, table, 'windows-1252');
  }
}

function readBirdCsvAs(path: string, table: string, encoding: 'utf-8' | 'windows-1252'): TableDoc {
  const decoder = new TextDecoder(encoding, { fatal: encoding === 'utf-8' });
  const doc = birdTableBuilder(table, path);
  const feed = csvFeed(path, doc.record);
  readInputChunks(path, 'documentation', (chunk) => feed.write(decoder.decode(chunk, { stream: true })));
  feed.write(decoder.decode());
  feed.end();
  return doc.done();
}

/** A BIRD `database_description` folder: one TableDoc per `<table>.csv` (macOS `._*` files skipped), tables by name. */
export function readBirdFolder(dir: string): DbDocs {
  const files = readdirSync(dir)
    .filter((f) => extname(f).toLowerCase() === '.csv' && !f.startsWith('._'))
    .sort();
  if (files.length === 0) throw new AgroError('invalid_input', `${dir}: no <table>.csv file in this documentation folder`);
  return { tables: files.map((f) => readBirdCsv(join(dir, f), basename(f, extname(f)).trim())) };
}

// ---------------------------------------------------------------- Spider / KaggleDBQA tables.json

const columnRef = z.tuple([z.number().int(), z.string()]);
const spiderEntrySchema = z.object({
  db_id: z.string().min(1),
  table_names_original: z.array(z.string()),
  table_names: z.array(z.string()).optional(),
  column_names_original: z.array(columnRef),
  column_names: z.array(columnRef).optional(),
  column_names_manually_normalized_alternative: z.array(columnRef).optional(),
  column_descriptions: z.array(z.string().nullable()).optional(),
  value_enums: z.union([z.record(z.string(), z.record(z.string(), z.unknown())), z.array(z.unknown()), z.string()]).optional(),
  db_overview: z.string().nullable().optional(),
});
type SpiderEntry = z.infer<typeof spiderEntrySchema>;

/** True when `json` looks like a Spider tables file (an array of entries with db_id and column_names_original). */
function isSpiderTables(json: unknown): json is unknown[] {
  return Array.isArray(json) && json.length > 0 && typeof json[0] === 'object' && json[0] !== null && 'column_names_original' in json[0] && 'db_id' in json[0];
}

/** One tables.json entry as DbDocs. value_enums keys name a column (`Col` or `table.Col`); a bare name applies to every table that has it. */
export function spiderEntryDocs(raw: unknown, where: string): DbDocs {
  const e: SpiderEntry = parseWith(spiderEntrySchema, raw, where);
  const tables: TableDoc[] = e.table_names_original.map((t, i) => {
    const doc: TableDoc = { table: t, columns: [] };
    const name = clean(e.table_names?.[i]);
    if (name !== undefined && !sameWords(name, t)) doc.name = name;
    return doc;
  });
  const readable = e.column_names_manually_normalized_alternative ?? e.column_names;
  e.column_names_original.forEach(([ti, column], i) => {
    const table = tables[ti];
    if (!table || column === '*') return;
    const doc: ColumnDoc = { column };
    const name = clean(readable?.[i]?.[1]);
    if (name !== undefined && !sameWords(name, column)) doc.name = name;
    const description = clean(e.column_descriptions?.[i]);
    if (description !== undefined && !sameWords(description, column) && !(name !== undefined && sameWords(description, name))) doc.description = description;
    table.columns.push(doc);
  });
  if (e.value_enums && typeof e.value_enums === 'object' && !Array.isArray(e.value_enums)) {
    for (const [key, map] of Object.entries(e.value_enums)) {
      const values: Record<string, string> = {};
      for (const [code, meaning] of Object.entries(map)) {
        const m = clean(typeof meaning === 'string' ? meaning : meaning === null ? undefined : String(meaning));
        if (m !== undefined) values[code] = m;
      }
      if (Object.keys(values).length === 0) continue;
      const dot = key.lastIndexOf('.');
      const [tName, cName] = dot > 0 && tables.some((t) => t.table.toLowerCase() === key.slice(0, dot).toLowerCase()) ? [key.slice(0, dot), key.slice(dot + 1)] : [undefined, key];
      for (const t of tables) {
        if (tName !== undefined && t.table.toLowerCase() !== tName.toLowerCase()) continue;
        const c = t.columns.find((col) => col.column.toLowerCase() === cName.toLowerCase());
        if (c) c.values = { ...c.values, ...values };
      }
    }
  }
  for (const t of tables) t.columns = t.columns.filter((c) => c.name || c.description || c.values);
  const overview = clean(e.db_overview);
  return overview === undefined ? { tables } : { overview, tables };
}

/** The entry of `dbId` in a parsed tables.json (the only one when dbId is not given); undefined when it has no such entry. */
function spiderEntryFor(json: unknown[], dbId: string | undefined, where: string): DbDocs | undefined {
  if (dbId === undefined) {
    if (json.length !== 1) {
      const ids = json.map((e) => (e as { db_id?: unknown }).db_id).filter((x) => typeof x === 'string');
      throw new AgroError('usage', `${where} documents ${json.length} databases (${ids.slice(0, 5).join(', ')}${ids.length > 5 ? ', …' : ''}): say which db_id`);
    }
    return spiderEntryDocs(json[0], `${where}: entry 0`);
  }
  const i = json.findIndex((e) => typeof e === 'object' && e !== null && (e as { db_id?: unknown }).db_id === dbId);
  return i < 0 ? undefined : spiderEntryDocs(json[i], `${where}: ${dbId}`);
}

// ---------------------------------------------------------------- files

function readJson(path: string): unknown {
  const text = decodeText(readInputBytes(path, 'documentation'));
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new AgroError('invalid_input', `${path}: not valid JSON (${err instanceof Error ? err.message : String(err)})`);
  }
}

/** A parsed documentation JSON: a tables.json (Spider/KaggleDBQA) or agro's own. */
function docsFromJson(json: unknown, path: string, dbId: string | undefined): { docs: DbDocs; format: DocsFormat } {
  if (isSpiderTables(json)) {
    const docs = spiderEntryFor(json, dbId, path);
    if (docs === undefined) throw new AgroError('not_found', `${path}: no entry for db_id ${dbId}`);
    return { docs, format: 'spider' };
  }
  if (typeof json === 'object' && json !== null && !Array.isArray(json) && 'column_names_original' in json) {
    return { docs: spiderEntryDocs(json, path), format: 'spider' };
  }
  return { docs: parseWith(dbDocsSchema, json, path), format: 'agro' };
}

/**
 * Reads documentation from `path`, detecting its format: a folder of BIRD CSVs (or a folder holding
 * `database_description/`), one BIRD CSV, a tables.json (dbId picks the entry; needed when it has several), or
 * agro's JSON. Missing path: AgroError not_found (exit 3); unreadable or malformed: invalid_input (exit 4).
 */
export function readDocs(path: string, dbId?: string): DbDocs {
  return readDocsWithFormat(path, dbId).docs;
}

export function readDocsWithFormat(path: string, dbId?: string): { docs: DbDocs; format: DocsFormat } {
  if (!existsSync(path)) throw new AgroError('not_found', `documentation not found: ${path}`);
  if (statSync(path).isDirectory()) {
    const inner = join(path, 'database_description');
    if (existsSync(inner) && statSync(inner).isDirectory()) return { docs: readBirdFolder(inner), format: 'bird' };
    if (readdirSync(path).some((f) => extname(f).toLowerCase() === '.csv' && !f.startsWith('._'))) return { docs: readBirdFolder(path), format: 'bird' };
    const tables = join(path, 'tables.json');
    if (existsSync(tables)) return readDocsWithFormat(tables, dbId);
    throw new AgroError('invalid_input', `${path}: no documentation here (expected <table>.csv files, database_description/ or tables.json)`);
  }
  if (extname(path).toLowerCase() === '.csv') {
    return { docs: { tables: [readBirdCsv(path, basename(path, extname(path)).trim())] }, format: 'bird' };
  }
  return docsFromJson(readJson(path), path, dbId);
}

export interface FoundDocs {
  docs: DbDocs;
  format: DocsFormat;
  /** The file or folder read. */
  path: string;
}

/**
 * Documentation beside a database file, looked for in this order: `<db>.docs.json` (agro's), a
 * `database_description/` folder (BIRD's layout), then a `tables.json` in the database's folder, its parent or
 * the parent's parent (Spider's and KaggleDBQA's `database/<db_id>/<db_id>.sqlite` layout) holding an entry whose
 * db_id is the file's name. Undefined when there is none; a found file that is malformed is an error.
 */
export function findDocs(dbPath: string): FoundDocs | undefined {
  const dir = dirname(dbPath);
  const dbId = databaseId(dbPath);
  const own = join(dir, `${dbId}.docs.json`);
  if (existsSync(own)) return { ...readDocsWithFormat(own), path: own };
  const bird = join(dir, 'database_description');
  if (existsSync(bird) && statSync(bird).isDirectory()) return { docs: readBirdFolder(bird), format: 'bird', path: bird };
  for (const d of [dir, dirname(dir), dirname(dirname(dir))]) {
    const tables = join(d, 'tables.json');
    if (!existsSync(tables) || !statSync(tables).isFile()) continue;
    const json = readJson(tables);
    if (!isSpiderTables(json)) continue;
    const docs = spiderEntryFor(json, dbId, tables);
    if (docs) return { docs, format: 'spider', path: tables };
  }
  return undefined;
}

// ---------------------------------------------------------------- lookup

/** Case-insensitive lookup of a table's and a column's documentation (names in docs and databases differ in case). */
export interface DocsLookup {
  overview?: string;
  table(table: string): TableDoc | undefined;
  column(table: string, column: string): ColumnDoc | undefined;
}

export function docsLookup(docs: DbDocs | undefined): DocsLookup {
  const tables = new Map<string, TableDoc>();
  const columns = new Map<string, ColumnDoc>();
  for (const t of docs?.tables ?? []) {
    const tk = t.table.trim().toLowerCase();
    if (!tables.has(tk)) tables.set(tk, t);
    for (const c of t.columns) {
      const ck = `${tk}\u0000${c.column.trim().toLowerCase()}`;
      if (!columns.has(ck)) columns.set(ck, c);
    }
  }
  return {
    overview: docs?.overview,
    table: (t) => tables.get(t.trim().toLowerCase()),
    column: (t, c) => columns.get(`${t.trim().toLowerCase()}\u0000${c.trim().toLowerCase()}`),
  };
}
