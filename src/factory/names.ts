/**
 * Readable names for schema identifiers, shared by the realizer (AST -> question) and the
 * round-trip parser (question -> AST) so both sides agree on how a column is spoken.
 */
import type { DbSchema } from '../sql/types.ts';

/** snake_case / camelCase / spaced identifiers -> lowercase words ("InvoiceLine_id" -> "invoice line id"). */
export function words(name: string): string {
  return name
    .replace(/([\p{Ll}\d])(\p{Lu})/gu, '$1 $2')
    .replace(/(\p{Lu})(\p{Lu}\p{Ll})/gu, '$1 $2')
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim()
    .toLowerCase();
}

export function singular(w: string): string {
  if (/ies$/.test(w)) return w.slice(0, -3) + 'y';
  if (/(sses|xes|zes|ches|shes)$/.test(w)) return w.slice(0, -2);
  if (/[^su]s$/.test(w)) return w.slice(0, -1);
  return w;
}

export function plural(w: string): string {
  if (/[^aeiou]y$/.test(w)) return w.slice(0, -1) + 'ies';
  if (/(s|x|z|ch|sh)$/.test(w)) return w + 'es';
  return w + 's';
}

function lastWord(f: (w: string) => string, phrase: string): string {
  const parts = phrase.split(' ');
  parts[parts.length - 1] = f(parts[parts.length - 1]);
  return parts.join(' ');
}

export function tableSingular(table: string): string {
  return lastWord(singular, words(table) || 'row');
}

export function tablePlural(table: string): string {
  return lastWord(plural, tableSingular(table));
}

/** How a column is spoken: "<table singular> <column words>", without repeating the table name. */
export function columnPhrase(table: string, column: string): string {
  const t = tableSingular(table);
  const c = words(column) || 'value';
  if (c === t || c.startsWith(t + ' ')) return c;
  return `${t} ${c}`;
}

export interface Lexicon {
  /** phrase -> [table, column] for phrases that name exactly one column. */
  columns: Map<string, [string, string]>;
  /** table plural / singular -> table, for phrases naming exactly one table. */
  tables: Map<string, string>;
  /** "table\u0000column" keys whose phrase is ambiguous or unusable (excluded from synthesis). */
  unspeakable: Set<string>;
}

export const colKey = (table: string, column: string) => `${table}\u0000${column}`;

export function buildLexicon(schema: DbSchema): Lexicon {
  const seen = new Map<string, string[]>();
  for (const t of schema.tables) {
    for (const c of t.columns) {
      const p = columnPhrase(t.name, c.name);
      seen.set(p, [...(seen.get(p) ?? []), colKey(t.name, c.name)]);
    }
  }
  const columns = new Map<string, [string, string]>();
  const unspeakable = new Set<string>();
  for (const [p, keys] of seen) {
    // A phrase that contains another construct's keyword would confuse the parser.
    const bad = keys.length > 1 || /\b(where|and|is|of|for|by|sorted|having|each|not|among)\b/.test(p.replace(/^\S+ /, '')) || p.length === 0;
    for (const k of keys) {
      if (bad) unspeakable.add(k);
      else {
        const [t, c] = k.split('\u0000');
        columns.set(p, [t, c]);
      }
    }
  }
  const tables = new Map<string, string>();
  const tcount = new Map<string, number>();
  for (const t of schema.tables) for (const w of [tablePlural(t.name), tableSingular(t.name)]) tcount.set(w, (tcount.get(w) ?? 0) + 1);
  for (const t of schema.tables) {
    for (const w of [tablePlural(t.name), tableSingular(t.name)]) if (tcount.get(w) === 1) tables.set(w, t.name);
  }
  return { columns, tables, unspeakable };
}
