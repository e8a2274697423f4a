/**
 * The grounded schema text of a prompt: the schema as the question needs it, within a character budget.
 *
 * Tables come best-linked first (schema-link.ts). Each column carries its documented name and a short description when
 * there is one, and a few sample values; a last line lists the stored cells the question names
 * (`-- Values: country.name = 'France'`, with a code's documented meaning). Over budget it gives up, in this
 * order and re-checking after each step: sample values, long descriptions, the unlinked columns of the
 * worst-linked tables (keys stay, for joins), the documentation of unlinked columns, descriptions, some value
 * hints; then, rather than leave a table out, it switches to a compact one-line-per-table form
 * (`t(a, b -> u)`) and gives up there: documented names, unlinked columns from the worst-linked table up, value
 * hints but the best, whole worst-linked tables (named on an "Other tables" line while that fits), value hints. Never empty: at the end the
 * best table and as many of its columns as fit (at least one, even past the budget). Deterministic.
 */
import { quoteString, sqlName } from '../sql/lexer.ts';
import type { DbDocs } from './docs-types.ts';
import { docsLookup, type DocsLookup } from './docs.ts';
import { linkSchema, type SchemaLink, type ValueHint } from './schema-link.ts';
import type { DbSchema, SqlValue, Table } from '../sql/types.ts';
import type { ValueIndex, ValueMatch } from './value-index.ts';

export interface GroundedOptions {
  docs?: DbDocs;
  index?: ValueIndex;
  /** Value matches already looked up (instead of `index`). */
  valueMatches?: ValueMatch[];
  /** Character budget. Default 1800. */
  maxChars?: number;
  /** Sample values per column before trimming. Default 2. */
  samples?: number;
  /** Value hints shown at most. Default 5. */
  maxValues?: number;
  /** Characters of a column's description before trimming. Default 60. */
  descriptionChars?: number;
}

type Detail = 'full' | 'keys' | 'omitted';

interface Plan {
  compact: boolean;
  samples: number;
  descriptionChars: number;
  /** Documentation shown on unlinked columns too (linked ones keep theirs longer). */
  docNames: boolean;
  values: number;
  /** By table, best-linked first. */
  detail: Detail[];
  /** Tables left out: named, counted, or not mentioned (the very last resort). */
  otherTables: 'names' | 'count' | 'none';
  /** In the last resort: columns of the best table kept. */
  columnCap?: number;
}

function literal(v: SqlValue): string {
  if (v === null) return 'NULL';
  if (typeof v === 'number' || typeof v === 'bigint') return String(v);
  if (typeof v === 'string' && /^<blob \d+ bytes>$/.test(v)) return v;
  if (typeof v === 'string') return quoteString(v.replace(/[\r\n\t]+/g, ' '));
  return `<blob ${v.byteLength} bytes>`;
}

/** Documentation and cells on one line (a newline would end the `--` comment), cut to n characters. */
function cut(text: string, n = Infinity): string {
  const s = text.replace(/\s+/g, ' ').trim();
  return s.length <= n ? s : `${s.slice(0, Math.max(1, n - 1)).trimEnd()}…`;
}

function keyColumns(t: Table): Set<string> {
  const keys = new Set(t.primaryKey);
  for (const fk of t.foreignKeys) for (const c of fk.fromColumns) keys.add(c);
  return keys;
}

/** `t.c = 'a' (meaning), 'b'; u.d = 'e'`: the hints of one column together, in the order of their best. */
function hintsText(hints: ValueHint[]): string {
  const groups = new Map<string, string[]>();
  for (const h of hints) {
    const k = `${sqlName(h.table)}.${sqlName(h.column)}`;
    groups.set(k, [...(groups.get(k) ?? []), `${quoteString(cut(h.value))}${h.meaning ? ` (${cut(h.meaning, 40)})` : ''}`]);
  }
  return [...groups].map(([col, vs]) => `${col} = ${vs.join(', ')}`).join('; ');
}

class Renderer {
  private readonly tables: Table[];
  private readonly linked: Array<Set<string>>;
  private readonly docs: DocsLookup;

  constructor(
    schema: DbSchema,
    private readonly link: SchemaLink,
    docs: DbDocs | undefined,
  ) {
    const byName = new Map(schema.tables.map((t) => [t.name, t]));
    this.tables = link.tables.map((l) => byName.get(l.table)!);
    this.linked = link.tables.map((l) => new Set(l.columns.filter((c) => c.score > 0).map((c) => c.column)));
    this.docs = docsLookup(docs);
  }

  get count(): number {
    return this.tables.length;
  }

  private shownColumns(i: number, p: Plan): Table['columns'] {
    const t = this.tables[i];
    let cols = t.columns;
    if (p.detail[i] === 'keys') {
      const keys = keyColumns(t);
      cols = cols.filter((c) => keys.has(c.name) || this.linked[i].has(c.name));
      if (cols.length === 0) cols = t.columns.slice(0, 1);
    }
    if (i === 0 && p.columnCap !== undefined) {
      // Last resort: linked columns first, then the rest in schema order.
      const rank = (name: string): number => (this.linked[0].has(name) ? 0 : 1);
      cols = [...cols].sort((a, b) => rank(a.name) - rank(b.name)).slice(0, Math.max(1, p.columnCap));
      cols = t.columns.filter((c) => cols.includes(c));
    }
    return cols;
  }

  private columnNote(i: number, name: string, p: Plan, samples: SqlValue[]): string {
    const t = this.tables[i];
    const doc = this.docs.column(t.name, name);
    const linked = this.linked[i].has(name);
    const parts: string[] = [];
    if (doc?.name && (p.docNames || linked)) parts.push(cut(doc.name));
    if (doc?.description && p.descriptionChars > 0 && (p.docNames || linked)) parts.push(cut(doc.description, p.descriptionChars));
    const shown = samples.filter((v) => v !== null && v !== '').slice(0, p.samples);
    if (shown.length > 0) parts.push(`e.g. ${shown.map(literal).join(', ')}`);
    return parts.join('; ');
  }

  private tableNote(i: number, p: Plan): string {
    const d = this.docs.table(this.tables[i].name);
    const parts = [d?.name && cut(d.name), d?.description && p.descriptionChars > 0 ? cut(d.description, p.descriptionChars) : undefined].filter((s) => s);
    return parts.join('; ');
  }

  private ddl(i: number, p: Plan): string {
    const t = this.tables[i];
    const cols = this.shownColumns(i, p);
    const hidden = t.columns.length - cols.length;
    const constraints: string[] = [];
    if (t.kind === 'table' && t.primaryKey.length > 0) constraints.push(`  PRIMARY KEY (${t.primaryKey.map(sqlName).join(', ')})`);
    for (const fk of t.foreignKeys) {
      constraints.push(`  FOREIGN KEY (${fk.fromColumns.map(sqlName).join(', ')}) REFERENCES ${sqlName(fk.toTable)} (${fk.toColumns.map(sqlName).join(', ')})`);
    }
    const items = cols.map((c) => ({ text: `  ${[sqlName(c.name), c.type, c.notNull ? 'NOT NULL' : ''].filter((s) => s).join(' ')}`, note: this.columnNote(i, c.name, p, c.stats.samples) }));
    const all = [...items, ...constraints.map((text) => ({ text, note: '' }))];
    const body = all.map((it, j) => `${it.text}${j < all.length - 1 ? ',' : ''}${it.note ? ` -- ${it.note}` : ''}`);
    if (hidden > 0) body.splice(items.length, 0, `  -- … ${hidden} more column${hidden === 1 ? '' : 's'}`);
    const note = this.tableNote(i, p);
    return [`CREATE ${t.kind === 'view' ? 'VIEW' : 'TABLE'} ${sqlName(t.name)} (${note ? ` -- ${note}` : ''}`, ...body, ');'].join('\n');
  }

  private line(i: number, p: Plan): string {
    const t = this.tables[i];
    const cols = this.shownColumns(i, p);
    const fkOf = new Map<string, string>();
    for (const fk of t.foreignKeys) {
      // `-> branch` when the reference is the target's one-column primary key (the usual case), else `-> t.c`.
      const pk = this.tables.find((x) => x.name === fk.toTable)?.primaryKey;
      const toPk = fk.fromColumns.length === 1 && pk?.length === 1 && pk[0] === fk.toColumns[0];
      fk.fromColumns.forEach((c, j) => fkOf.set(c, toPk ? sqlName(fk.toTable) : `${sqlName(fk.toTable)}.${sqlName(fk.toColumns[j] ?? '')}`));
    }
    const parts = cols.map((c) => {
      const note = this.columnNote(i, c.name, { ...p, samples: 0, descriptionChars: 0 }, []);
      return `${sqlName(c.name)}${fkOf.has(c.name) ? ` -> ${fkOf.get(c.name)}` : ''}${note ? ` "${note}"` : ''}`;
    });
    if (cols.length < t.columns.length) parts.push('…');
    return `${sqlName(t.name)}(${parts.join(', ')})`;
  }

  /** A table's text under a plan, memoized: successive plans change few tables, and a large schema has hundreds. */
  private readonly memo = new Map<string, string>();
  private table(i: number, p: Plan): string {
    const key = `${i}|${p.compact}|${p.samples}|${p.descriptionChars}|${p.docNames}|${p.detail[i]}|${i === 0 ? p.columnCap : ''}`;
    let text = this.memo.get(key);
    if (text === undefined) this.memo.set(key, (text = p.compact ? this.line(i, p) : this.ddl(i, p)));
    return text;
  }

  /** The pieces of the text and the separator between them: their joined length is known without joining. */
  private pieces(p: Plan): { parts: string[]; sep: string } {
    const parts: string[] = [];
    const sep = p.compact ? '\n' : '\n\n';
    const overview = this.docs.overview;
    if (overview && p.descriptionChars > 0 && !p.compact) parts.push(`-- ${cut(overview, 2 * p.descriptionChars)}`);
    for (let i = 0; i < this.tables.length; i++) if (p.detail[i] !== 'omitted') parts.push(this.table(i, p));
    const blocks = parts;
    const omitted = this.tables.filter((_, i) => p.detail[i] === 'omitted').map((t) => sqlName(t.name));
    if (omitted.length > 0 && p.otherTables !== 'none') {
      blocks.push(p.otherTables === 'names' ? `-- Other tables: ${omitted.join(', ')}` : `-- … ${omitted.length} more table${omitted.length === 1 ? '' : 's'}`);
    }
    const hints = this.link.values.slice(0, p.values);
    if (hints.length > 0) blocks.push(`-- Values: ${hintsText(hints)}`);
    return { parts, sep };
  }

  length(p: Plan): number {
    const { parts, sep } = this.pieces(p);
    return parts.reduce((n, s) => n + s.length, 0) + sep.length * Math.max(0, parts.length - 1);
  }

  render(p: Plan): string {
    const { parts, sep } = this.pieces(p);
    return parts.join(sep);
  }

  /**
   * Successive phases of plans. Within a phase each plan is (nearly always) no longer than the one before, so the
   * first that fits is found by bisection; a phase none of whose plans fits hands its last plan to the next.
   */
  phases(samples: number, descriptionChars: number, maxValues: number): Phase[] {
    const n = this.count;
    const out: Phase[] = [];
    const copy = (x: Plan, more: Partial<Plan> = {}): Plan => ({ ...x, detail: [...x.detail], ...more });
    const one = (x: Plan): void => {
      const snap = copy(x);
      out.push({ count: 1, at: () => snap });
    };
    /** Plans base, then base with detail[order[0]] = d, then also order[1], …; base ends with all of them set. */
    const each = (x: Plan, order: number[], d: Detail): void => {
      const base = copy(x);
      out.push({
        count: order.length,
        at: (k) => {
          const q = copy(base);
          for (let j = 0; j <= k; j++) q.detail[order[j]] = d;
          return q;
        },
      });
      for (const i of order) x.detail[i] = d;
    };
    const worstFirst = (from: number): number[] => Array.from({ length: Math.max(0, n - from) }, (_, j) => n - 1 - j);
    const p: Plan = { compact: false, samples, descriptionChars, docNames: true, values: maxValues, detail: Array<Detail>(n).fill('full'), otherTables: 'names' };
    one(p);
    while (p.samples > 0) {
      p.samples--;
      one(p);
    }
    if (p.descriptionChars > 30) {
      p.descriptionChars = 30;
      one(p);
    }
    each(p, worstFirst(1), 'keys');
    p.docNames = false;
    one(p);
    p.descriptionChars = 0;
    one(p);
    p.detail[0] = 'keys';
    one(p);
    if (p.values > 3) {
      p.values = 3;
      one(p);
    }
    // Compact form rather than dropping tables: every table on one line again, then the same giving up.
    const c: Plan = { ...p, compact: true, docNames: true, detail: Array<Detail>(n).fill('full'), values: Math.min(maxValues, 3) };
    one(c);
    c.docNames = false;
    one(c);
    each(c, worstFirst(0), 'keys');
    if (c.values > 1) {
      c.values = 1;
      one(c);
    }
    each(c, worstFirst(1), 'omitted');
    c.otherTables = 'count';
    one(c);
    while (c.values > 0) {
      c.values--;
      one(c);
    }
    c.detail[0] = 'full';
    const cols = this.tables[0]?.columns.length ?? 1;
    out.push({ count: cols, at: (k) => copy(c, { columnCap: cols - k }) });
    out.push({ count: 1, at: () => copy(c, { columnCap: 1, otherTables: 'none' }) });
    return out;
  }
}

interface Phase {
  count: number;
  at(k: number): Plan;
}

/** Renders a linked schema within the budget (see the header); the pure half of groundedSchema. */
export function renderGrounded(schema: DbSchema, link: SchemaLink, opts: Omit<GroundedOptions, 'index' | 'valueMatches'> = {}): string {
  if (schema.tables.length === 0) return '-- (no tables)';
  const maxChars = opts.maxChars ?? 1800;
  const r = new Renderer(schema, link, opts.docs);
  let last: Plan | undefined;
  for (const phase of r.phases(Math.max(0, opts.samples ?? 2), opts.descriptionChars ?? 60, opts.maxValues ?? 5)) {
    last = phase.at(phase.count - 1);
    if (r.length(last) > maxChars) continue;
    let [lo, hi] = [0, phase.count - 1];
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (r.length(phase.at(mid)) <= maxChars) hi = mid;
      else lo = mid + 1;
    }
    return r.render(phase.at(lo));
  }
  return r.render(last!);
}

/** The schema text a question needs: linkSchema (names, documentation, stored values) then renderGrounded. */
export function groundedSchema(schema: DbSchema, question: string, opts: GroundedOptions = {}): string {
  const link = linkSchema(schema, question, { docs: opts.docs, index: opts.index, valueMatches: opts.valueMatches, maxValues: opts.maxValues ?? 5 });
  return renderGrounded(schema, link, opts);
}
