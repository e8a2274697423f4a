/**
 * Identifier-form augmentation for pretraining episodes. A model trained on many databases can still
 * learn each database's table and column names by heart (it recognizes the database from its schema and
 * writes the names it remembers) instead of copying them from the schema in its prompt: agro's first base
 * model did, writing `FROM device` for "How many singers are there?" on a database it had never seen while
 * its loss on held-out databases stayed at 2.5 against 0.4 on the training ones. Here an episode's names
 * are respelled (case, snake_case ↔ camelCase, a plural, a `tbl_` prefix), the same way in its schema, SQL,
 * reasoning and observations, and never in the question: the word stays, so the question still says
 * which table it means, but only the prompt says how it is spelled, so copying from it is the one way to
 * be right. Pure: the same episode, names and seed give the same respelling.
 */
import type { ChatMessage } from '../types.ts';
import type { DbSchema } from '../../sql/types.ts';
import { Rng } from '../../util/rng.ts';

/** The ways a name may be respelled; identity is left to the caller's share. */
export const FORMS = ['lower', 'upper', 'title', 'snake', 'camel', 'plural', 'prefix'] as const;
export type Form = (typeof FORMS)[number];

const words = (name: string): string[] =>
  name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean);

/** One respelling of a name; null when the form does not change it. */
export function respell(name: string, form: Form, isTable: boolean): string | null {
  const ws = words(name);
  if (ws.length === 0) return null;
  let out: string;
  switch (form) {
    case 'lower':
      out = name.toLowerCase();
      break;
    case 'upper':
      out = name.toUpperCase();
      break;
    case 'title':
      out = ws.map((w) => w[0].toUpperCase() + w.slice(1).toLowerCase()).join('_');
      break;
    case 'snake':
      out = ws.map((w) => w.toLowerCase()).join('_');
      break;
    case 'camel':
      out = ws.map((w, i) => (i === 0 ? w.toLowerCase() : w[0].toUpperCase() + w.slice(1).toLowerCase())).join('');
      break;
    case 'plural':
      if (!isTable || /s$/i.test(name)) return null;
      out = `${name}s`;
      break;
    case 'prefix':
      if (!isTable) return null;
      out = `tbl_${name}`;
      break;
  }
  // A name must still read as one identifier (starts with a letter or _).
  return out !== name && /^[A-Za-z_]/.test(out) ? out : null;
}

/**
 * A respelling for a share of a database's names: table names and column names (a column name shared by
 * several tables is respelled the same everywhere, as it appears once in SQL text). Names that would
 * collide with another name (case-insensitively, as SQLite compares them) are left as they are.
 */
export function respellings(schema: DbSchema, share: number, rng: Rng): Map<string, string> {
  const tables = schema.tables.map((t) => t.name);
  const columns = [...new Set(schema.tables.flatMap((t) => t.columns.map((c) => c.name)))];
  const taken = new Set([...tables, ...columns].map((n) => n.toLowerCase()));
  const out = new Map<string, string>();
  for (const [name, isTable] of [...tables.map((n) => [n, true] as const), ...columns.map((n) => [n, false] as const)]) {
    if (out.has(name) || rng.next() >= share) continue;
    const to = respell(name, rng.pick(FORMS), isTable);
    if (!to) continue;
    // A change of case alone keeps the same SQLite name; anything else must not be another name.
    if (to.toLowerCase() !== name.toLowerCase() && taken.has(to.toLowerCase())) continue;
    out.set(name, to);
    taken.add(to.toLowerCase());
  }
  return out;
}

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Every whole-identifier occurrence of a name replaced, in one pass (so a respelling is never respelled). */
export function applyRespellings(text: string, map: ReadonlyMap<string, string>): string {
  if (map.size === 0) return text;
  const names = [...map.keys()].sort((a, b) => b.length - a.length).map(escape);
  const re = new RegExp(`(?<![A-Za-z0-9_])(${names.join('|')})(?![A-Za-z0-9_])`, 'g');
  return text.replace(re, (m) => map.get(m) ?? m);
}

/** The episode with its names respelled everywhere but in the user's question. */
export function respellEpisode(messages: readonly ChatMessage[], map: ReadonlyMap<string, string>): ChatMessage[] {
  return messages.map((m) => (m.role === 'user' ? m : { ...m, content: applyRespellings(m.content, map) }));
}
