/**
 * Suggested questions: after an answer, a few other questions the memory holds about the same tables, as the
 * next thing a person might ask. Only stored pairs are suggested (each verified on the database when it was
 * stored), so a suggestion clicked is a question the answer path has a checked answer for.
 */
import { sqlSkeleton } from '../sql/features.ts';
import { tablesRead } from '../sql/lexer.ts';
import { fold } from '../prompt/words.ts';
import type { MemoryEntry } from '../memory/entry.ts';

/** Suggestions after an answer: few enough to read at a glance. */
export const SUGGESTIONS = 3;

const tableSet = (sql: string): Set<string> => new Set(tablesRead(sql).map((t) => t.toLowerCase()));

/**
 * Up to `k` questions of the memory about the tables the answered SQL reads: the entries sharing most of its
 * tables first (Jaccard of the table sets), a person's pair before the factory's at a tie, then the memory's own
 * order. One question per query shape (literals masked), none of the answered query's shape, none the question
 * just asked: a list of different things to ask, not one template with other values.
 */
export function suggestQuestions(entries: readonly MemoryEntry[], answered: { sql: string; question: string }, k = SUGGESTIONS): string[] {
  const tables = tableSet(answered.sql);
  if (tables.size === 0 || k <= 0) return [];
  const asked = fold(answered.question);
  const shapes = new Set([sqlSkeleton(answered.sql)]);
  const scored: Array<{ question: string; shape: string; overlap: number; person: number; i: number }> = [];
  entries.forEach((e, i) => {
    const own = tableSet(e.sql);
    let shared = 0;
    for (const t of own) if (tables.has(t)) shared++;
    if (shared === 0) return;
    const question = e.questions.find((q) => fold(q) !== asked);
    if (!question) return;
    scored.push({ question, shape: sqlSkeleton(e.sql), overlap: shared / (tables.size + own.size - shared), person: e.source === 'person' ? 1 : 0, i });
  });
  scored.sort((a, b) => b.overlap - a.overlap || b.person - a.person || a.i - b.i);
  const out: string[] = [];
  for (const s of scored) {
    if (out.length >= k) break;
    if (shapes.has(s.shape) || out.some((q) => fold(q) === fold(s.question))) continue;
    shapes.add(s.shape);
    out.push(s.question);
  }
  return out;
}
