/**
 * The thing a question counts, read in the schema's words: "how many X", "the number of X", "the most X". A candidate
 * whose reading (the factory's words for its SQL) counts another table's rows than the question does answers another
 * question ("Which artist has the most albums?" answered by a count of artists), however close the rest of its words:
 * the answer path holds such a choice to the low mark. Only a table both sides name decides; a question whose words
 * after "most" are no table's ("the most expensive") names no counted thing, and nothing is said of it.
 */
import { singular, tableSingular } from '../factory/language/names.ts';

/** Words after which a question names what it counts. */
const COUNTING = /\b(?:how many|number of|count of|(?:the )?most|(?:the )?fewest|(?:the )?least|more|fewer)\s+((?:[\p{L}\p{N}_]+\s*){1,3})/giu;

/** Each table by its spoken singular ("invoice line") and, when no other table shares it, by its head noun ("line"). */
export function countedNames(tables: readonly string[]): Map<string, string> {
  const out = new Map<string, string>();
  const heads = new Map<string, string[]>();
  for (const t of tables) {
    const s = tableSingular(t);
    out.set(s, t);
    const head = s.split(' ').at(-1)!;
    heads.set(head, [...(heads.get(head) ?? []), t]);
  }
  for (const [head, ts] of heads) if (ts.length === 1 && !out.has(head)) out.set(head, ts[0]);
  return out;
}

/** The tables a text counts (those named right after a counting phrase), in order. */
export function countedTables(text: string, names: ReadonlyMap<string, string>): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(COUNTING)) {
    const w = m[1].trim().toLowerCase().split(/\s+/).map((x) => singular(x));
    // The longest phrase that is a table's name: "invoice lines" before "invoice".
    for (let n = Math.min(3, w.length); n >= 1; n--) {
      const t = names.get(w.slice(0, n).join(' '));
      if (t !== undefined) {
        if (!out.includes(t)) out.push(t);
        break;
      }
    }
  }
  return out;
}

/** Whether the reading counts tables the question does not, and none it does: another counted thing. */
export function countsAnotherThing(question: string, reading: string | null, names: ReadonlyMap<string, string>): boolean {
  if (!reading) return false;
  const asked = countedTables(question, names);
  const read = countedTables(reading, names);
  return asked.length > 0 && read.length > 0 && !read.some((t) => asked.includes(t));
}
