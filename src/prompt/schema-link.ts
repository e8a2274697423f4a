/**
 * Schema linking: which tables and columns a question is about, ranked, and which stored cells it names.
 *
 * A column matches through its name read as words (snake_case and camelCase split, abbreviations spelled out:
 * src/prompt/words.ts), its documented name and description (DbDocs), the meanings of its documented codes ('PHWR' for
 * "pressurised heavy water reactor"), and the value index's hits in it. Words match on their Porter stem, so
 * "reactors" finds `reactor_type` (and a long word one edit away, a typo or a spelling, counts for 0.8). A table matches through its own names and its best column, and a little
 * through its neighbours by foreign key (the bridge of a join ranks above an unrelated table). Pure and
 * deterministic: ties keep the schema's order.
 */
import { distance } from 'fastest-levenshtein';
import type { DbDocs } from './docs-types.ts';
import { docsLookup } from './docs.ts';
import type { DbSchema } from '../sql/types.ts';
import type { MatchKind, ValueIndex, ValueMatch } from './value-index.ts';
import { STOP_WORDS, stem, tokens, words } from './words.ts';

export interface LinkOptions {
  docs?: DbDocs;
  /** Stored cells matching the question are looked up here. */
  index?: ValueIndex;
  /** Or given directly (already looked up). */
  valueMatches?: ValueMatch[];
  /** Value hints kept, best first. Default 6. */
  maxValues?: number;
}

export interface ColumnLink {
  column: string;
  score: number;
  /** What matched: 'name', 'doc' (documented name or description), 'value' (a stored cell), 'meaning' (a documented code). */
  why: Array<'name' | 'doc' | 'value' | 'meaning'>;
}

export interface TableLink {
  table: string;
  score: number;
  /** Every column of the table, in schema order, with its score (0 when nothing matched). */
  columns: ColumnLink[];
}

export interface ValueHint {
  table: string;
  column: string;
  /** The cell as stored (or the documented code). */
  value: string;
  score: number;
  kind: MatchKind | 'meaning';
  /** The documented meaning of a code, when the hint came from (or has) one. */
  meaning?: string;
}

export interface SchemaLink {
  /** Best first; every table of the schema is here. */
  tables: TableLink[];
  values: ValueHint[];
}

/** The question's content words, as stems (and the folded tokens for phrases). */
interface QuestionWords {
  stems: Set<string>;
}

function questionWords(question: string): QuestionWords {
  const stems = new Set<string>();
  for (const t of tokens(question)) if (!STOP_WORDS.has(t) && t.length > 1) stems.add(stem(t));
  return { stems };
}

/** Content stems of a name or a text ("LastUpdatedAt" -> last, updat; abbreviations expanded). */
function contentStems(text: string, identifier: boolean): string[] {
  const ws = identifier ? tokens(words(text)) : tokens(text);
  return [...new Set(ws.filter((w) => !STOP_WORDS.has(w) && w.length > 1).map(stem))];
}

/** How well the question says one word: 1 its stem, 0.8 a stem one edit away (two for long words; 6 letters at least). */
function wordMatch(s: string, q: QuestionWords): number {
  if (q.stems.has(s)) return 1;
  if (s.length < 6) return 0;
  const k = s.length >= 9 ? 2 : 1;
  for (const x of q.stems) if (Math.abs(x.length - s.length) <= k && distance(x, s) <= k) return 0.8;
  return 0;
}

/** Share of a name's words the question says (1 when it says all of them). */
function nameMatch(stems: string[], q: QuestionWords): number {
  if (stems.length === 0) return 0;
  let sum = 0;
  for (const s of stems) sum += wordMatch(s, q);
  return sum / stems.length;
}

/** A description is long: two of its words in the question is a full match. */
function descriptionMatch(stems: string[], q: QuestionWords): number {
  let sum = 0;
  for (const s of stems) sum += wordMatch(s, q);
  return Math.min(1, sum / 2);
}

/** The stems of every name and text of a schema and its documentation, computed once per (schema, docs). */
interface Prepared {
  tables: Array<{ name: string[]; docName: string[]; docDescription: string[]; columns: Array<{ name: string[]; docName: string[]; docDescription: string[]; meanings: Array<[string, string, string[]]> }> }>;
}

const prepared = new WeakMap<DbSchema, Map<DbDocs | undefined, Prepared>>();

function prepare(schema: DbSchema, docsIn: DbDocs | undefined): Prepared {
  let bySchema = prepared.get(schema);
  if (!bySchema) prepared.set(schema, (bySchema = new Map()));
  const hit = bySchema.get(docsIn);
  if (hit) return hit;
  const docs = docsLookup(docsIn);
  const text = (s: string | undefined): string[] => (s ? contentStems(s, false) : []);
  const p: Prepared = {
    tables: schema.tables.map((t) => {
      const td = docs.table(t.name);
      return {
        name: contentStems(t.name, true),
        docName: text(td?.name),
        docDescription: text(td?.description),
        columns: t.columns.map((c) => {
          const cd = docs.column(t.name, c.name);
          return {
            name: contentStems(c.name, true),
            docName: text(cd?.name),
            docDescription: text(cd?.description),
            meanings: Object.entries(cd?.values ?? {}).map(([code, meaning]): [string, string, string[]] => [code, meaning, text(meaning)]),
          };
        }),
      };
    }),
  };
  bySchema.set(docsIn, p);
  return p;
}

const W_NAME = 1;
const W_DOC_NAME = 0.9;
const W_DESCRIPTION = 0.4;
const W_VALUE = 0.8;
const W_MEANING = 0.8;
const W_NEIGHBOUR = 0.2;

/** Ranks the schema's tables and columns for a question and collects its value hints. */
export function linkSchema(schema: DbSchema, question: string, opts: LinkOptions = {}): SchemaLink {
  const q = questionWords(question);
  const docs = docsLookup(opts.docs);
  const maxValues = opts.maxValues ?? 6;
  const known = new Set(schema.tables.flatMap((t) => t.columns.map((c) => `${t.name}\u0000${c.name}`)));
  const matches = (opts.valueMatches ?? opts.index?.lookup(question, { limit: 4 * maxValues }) ?? []).filter((m) => known.has(`${m.table}\u0000${m.column}`));
  const hints: ValueHint[] = matches.map((m) => ({ ...m }));
  const bestValue = new Map<string, number>();
  for (const m of matches) {
    const k = `${m.table}\u0000${m.column}`;
    bestValue.set(k, Math.max(bestValue.get(k) ?? 0, m.score));
  }

  const prep = prepare(schema, opts.docs);
  const own = new Map<string, TableLink>();
  schema.tables.forEach((t, ti) => {
    const pt = prep.tables[ti];
    const tableScore = Math.max(W_NAME * nameMatch(pt.name, q), W_DOC_NAME * nameMatch(pt.docName, q), W_DESCRIPTION * descriptionMatch(pt.docDescription, q));
    const columns: ColumnLink[] = t.columns.map((c, ci) => {
      const pc = pt.columns[ci];
      const why: ColumnLink['why'] = [];
      const byName = W_NAME * nameMatch(pc.name, q);
      if (byName > 0) why.push('name');
      const byDoc = Math.max(W_DOC_NAME * nameMatch(pc.docName, q), W_DESCRIPTION * descriptionMatch(pc.docDescription, q));
      if (byDoc > 0) why.push('doc');
      const byValue = W_VALUE * (bestValue.get(`${t.name}\u0000${c.name}`) ?? 0);
      if (byValue > 0) why.push('value');
      // A documented code whose meaning the question says: "pressurised heavy water reactors" -> 'PHWR'
      // (all its words, or three in four of a long meaning).
      let byMeaning = 0;
      for (const [code, meaning, stems] of pc.meanings) {
        const m = nameMatch(stems, q);
        if (m < 1 && !(m >= 0.75 && stems.length >= 3)) continue;
        byMeaning = Math.max(byMeaning, W_MEANING * m);
        hints.push({ table: t.name, column: c.name, value: code, score: Math.round(0.9 * m * 1000) / 1000, kind: 'meaning', meaning });
      }
      if (byMeaning > 0) why.push('meaning');
      const score = Math.max(byName, byDoc) + byValue + byMeaning;
      return { column: c.name, score: Math.round(score * 1000) / 1000, why };
    });
    const best = Math.max(0, ...columns.map((c) => c.score));
    own.set(t.name, { table: t.name, score: Math.max(tableScore, best) + 0.25 * tableScore * (best > 0 ? 1 : 0), columns });
  });

  // Neighbours by foreign key (either direction) lend a little of their score: the bridge of a join.
  const neighbours = new Map<string, Set<string>>(schema.tables.map((t) => [t.name, new Set<string>()]));
  for (const t of schema.tables) {
    for (const fk of t.foreignKeys) {
      if (fk.toTable === t.name || !neighbours.has(fk.toTable)) continue;
      neighbours.get(t.name)!.add(fk.toTable);
      neighbours.get(fk.toTable)!.add(t.name);
    }
  }
  const order = new Map(schema.tables.map((t, i) => [t.name, i]));
  const tables = schema.tables.map((t) => {
    const l = own.get(t.name)!;
    const lend = Math.max(0, ...[...neighbours.get(t.name)!].map((n) => own.get(n)!.score));
    // Connectivity breaks ties between unmatched tables: a hub is more likely needed than a leaf.
    const degree = neighbours.get(t.name)!.size;
    return { ...l, score: Math.round((l.score + W_NEIGHBOUR * lend + 0.001 * Math.min(degree, 9)) * 1000) / 1000 };
  });
  tables.sort((a, b) => b.score - a.score || order.get(a.table)! - order.get(b.table)!);

  // Best hint per cell, best first; documented meanings and stored cells of the same code merged.
  const byCell = new Map<string, ValueHint>();
  for (const h of hints) {
    const k = `${h.table}\u0000${h.column}\u0000${h.value}`;
    const prev = byCell.get(k);
    if (!prev || h.score > prev.score) byCell.set(k, { ...h, meaning: h.meaning ?? prev?.meaning });
    else if (h.meaning && !prev.meaning) prev.meaning = h.meaning;
  }
  for (const h of byCell.values()) {
    h.meaning ??= docs.column(h.table, h.column)?.values?.[h.value];
    if (h.meaning === undefined) delete h.meaning;
  }
  const values = [...byCell.values()]
    .sort((a, b) => b.score - a.score || order.get(a.table)! - order.get(b.table)! || (a.column < b.column ? -1 : a.column > b.column ? 1 : 0) || (a.value < b.value ? -1 : a.value > b.value ? 1 : 0))
    .slice(0, maxValues);
  return { tables, values };
}
