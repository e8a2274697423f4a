/**
 * Prints a DbSchema as DDL-like text for prompts, within a character and/or token budget.
 *
 * Over budget, it degrades in this order, re-checking after each step: fewer sample values per
 * column, then none; then the non-key columns of the least-connected tables (fewest foreign keys in
 * and out), one table at a time; then whole least-connected tables; and as a last resort it stops
 * at the last whole line that fits. Deterministic: same schema and options, same text.
 */
import type { Column, DbSchema, SqlValue, Table } from '../sql/types.ts';
import { sqlName } from '../sql/lexer.ts';

export interface RenderOptions {
  maxChars?: number;
  maxTokens?: number;
  /** Token counter for maxTokens; default: characters / 4, rounded up. */
  countTokens?: (s: string) => number;
  /** Sample values shown per column before any trimming. Default 3. */
  samples?: number;
}


function literal(v: SqlValue): string {
  if (v === null) return 'NULL';
  if (typeof v === 'number' || typeof v === 'bigint') return String(v);
  // introspect.ts summarizes blobs as this text; show it as a description, not a string literal.
  if (typeof v === 'string' && /^<blob \d+ bytes>$/.test(v)) return v;
  if (typeof v === 'string') return `'${v.replace(/'/g, "''").replace(/[\r\n\t]+/g, ' ')}'`;
  return `<blob ${v.byteLength} bytes>`;
}

interface Plan {
  samples: number;
  /** Tables shown with key columns only. */
  stripped: Set<string>;
  /** Tables left out entirely. */
  dropped: Set<string>;
}

function columnLine(c: Column, samples: number, last: boolean): string {
  const parts = [sqlName(c.name)];
  if (c.type) parts.push(c.type);
  if (c.notNull) parts.push('NOT NULL');
  let line = `  ${parts.join(' ')}${last ? '' : ','}`;
  const shown = c.stats.samples.filter((v) => v !== null).slice(0, samples);
  if (shown.length > 0) line += ` -- e.g. ${shown.map(literal).join(', ')}`;
  return line;
}

function keyColumns(t: Table): Set<string> {
  const keys = new Set(t.primaryKey);
  for (const fk of t.foreignKeys) for (const c of fk.fromColumns) keys.add(c);
  return keys;
}

function renderTable(t: Table, plan: Plan): string[] {
  const keys = keyColumns(t);
  const cols = plan.stripped.has(t.name) ? t.columns.filter((c) => keys.has(c.name)) : t.columns;
  const hidden = t.columns.length - cols.length;
  const constraints: string[] = [];
  if (t.kind === 'table' && t.primaryKey.length > 0) constraints.push(`  PRIMARY KEY (${t.primaryKey.map(sqlName).join(', ')})`);
  for (const fk of t.foreignKeys) {
    constraints.push(`  FOREIGN KEY (${fk.fromColumns.map(sqlName).join(', ')}) REFERENCES ${sqlName(fk.toTable)} (${fk.toColumns.map(sqlName).join(', ')})`);
  }
  const body: string[] = cols.map((c, i) => columnLine(c, plan.samples, i === cols.length - 1 && constraints.length === 0));
  if (hidden > 0) body.push(`  -- … ${hidden} more column${hidden === 1 ? '' : 's'}`);
  body.push(...constraints.map((l, i) => (i === constraints.length - 1 ? l : `${l},`)));
  const rows = t.kind === 'table' ? `-- ${t.rowCount} row${t.rowCount === 1 ? '' : 's'}` : '-- view';
  return [rows, `CREATE ${t.kind === 'view' ? 'VIEW' : 'TABLE'} ${sqlName(t.name)} (`, ...body, ');'];
}

function renderAll(tables: Table[], plan: Plan): string {
  const blocks = tables.filter((t) => !plan.dropped.has(t.name)).map((t) => renderTable(t, plan).join('\n'));
  if (plan.dropped.size > 0) blocks.push(`-- … ${plan.dropped.size} more table${plan.dropped.size === 1 ? '' : 's'} not shown`);
  return blocks.join('\n\n');
}

/** Tables ordered from least to most connected (foreign keys in + out), ties by name: the trimming order. */
function trimOrder(tables: Table[]): Table[] {
  const degree = new Map(tables.map((t) => [t.name, 0]));
  for (const t of tables) {
    for (const fk of t.foreignKeys) {
      degree.set(t.name, (degree.get(t.name) ?? 0) + 1);
      if (fk.toTable !== t.name) degree.set(fk.toTable, (degree.get(fk.toTable) ?? 0) + 1);
    }
  }
  return [...tables].sort((a, b) => degree.get(a.name)! - degree.get(b.name)! || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

export function renderSchema(schema: DbSchema, opts: RenderOptions = {}): string {
  const count = opts.countTokens ?? ((s: string) => Math.ceil(s.length / 4));
  const fits = (s: string): boolean =>
    (opts.maxChars === undefined || s.length <= opts.maxChars) && (opts.maxTokens === undefined || count(s) <= opts.maxTokens);
  const tables = [...schema.tables].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const plan: Plan = { samples: Math.max(0, opts.samples ?? 3), stripped: new Set(), dropped: new Set() };
  let text = renderAll(tables, plan);
  while (!fits(text) && plan.samples > 0) {
    plan.samples--;
    text = renderAll(tables, plan);
  }
  const order = trimOrder(tables);
  for (const t of order) {
    if (fits(text)) return text;
    if (keyColumns(t).size === t.columns.length) continue;
    plan.stripped.add(t.name);
    text = renderAll(tables, plan);
  }
  for (const t of order) {
    if (fits(text)) return text;
    plan.dropped.add(t.name);
    text = renderAll(tables, plan);
  }
  if (fits(text)) return text;
  // Last resort: whole lines only, never a cut inside one.
  const lines = text.split('\n');
  let kept = '';
  for (const line of lines) {
    const next = kept ? `${kept}\n${line}` : line;
    if (!fits(next)) break;
    kept = next;
  }
  return kept;
}
