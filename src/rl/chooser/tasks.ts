/**
 * The chooser's tasks: a question goes through the answer path as a person's would (memory neighbours, edits,
 * question-time synthesis; answer.ts), and its best few result groups, one candidate each in the ranker's order,
 * become the list the chooser reads. Each shown candidate is labelled by the reward's own judgement (the chooser
 * environment's), so the figures beside it (the ranker's choice, the judge's, the oracle) are scored as the chooser is.
 * A list that is all right or all wrong teaches GRPO nothing (every choice gets one reward): `informative` keeps
 * the mixed ones for training.
 */
import type { Answer, CandidateJudge } from '../../answer/answer.ts';
import type { ChatMessage } from '../../agent/types.ts';
import { formatAction } from '../../agent/protocol.ts';
import type { Rng } from '../../util/rng.ts';
import type { ChooserEnvironment, ChooserTask } from './env.ts';

/** Result groups shown to the chooser, at most: the prompt's length is the step's cost on a small model. */
export const CHOOSER_CANDIDATES = 4;

/** A question asked of the answer path, with the gold SQL of its pair. */
export interface ChooserQuestion {
  id: string;
  dbId: string;
  dbPath: string;
  question: string;
  goldSql: string;
  difficulty?: string;
}

export interface LabelledTask {
  task: ChooserTask;
  /** Per shown candidate: its result is the gold's. */
  right: boolean[];
  /** Some candidate of the whole list (not only those shown) is right. */
  anyRight: boolean;
  /** The judge's choice among those shown (0-based), when a judge was given. */
  judge?: number;
}

/** One candidate per result group, best group first, at most `k`: the index of each in the answer's list. */
export function shownCandidates(a: Pick<Answer, 'candidates'>, k: number): number[] {
  const seen = new Set<number>();
  const out: number[] = [];
  a.candidates.forEach((c, i) => {
    if (out.length < k && !seen.has(c.group)) {
      seen.add(c.group);
      out.push(i);
    }
  });
  return out;
}

/**
 * The chooser task of one answered question, each shown candidate labelled, and the judge's choice among them
 * (the group it gives the most); null when the answer path ran no candidate.
 */
export async function labelledTask(env: ChooserEnvironment, q: ChooserQuestion, a: Pick<Answer, 'candidates'>, o: { k?: number; judge?: CandidateJudge } = {}): Promise<LabelledTask | null> {
  if (a.candidates.length === 0) return null;
  const shown = shownCandidates(a, o.k ?? CHOOSER_CANDIDATES);
  const task: ChooserTask = {
    id: q.id,
    dbId: q.dbId,
    dbPath: q.dbPath,
    question: q.question,
    goldSql: q.goldSql,
    candidates: shown.map((i) => ({ sql: a.candidates[i].sql, reading: a.candidates[i].reading })),
    ...(q.difficulty ? { difficulty: q.difficulty } : {}),
  };
  const right: boolean[] = [];
  for (let i = 0; i < task.candidates.length; i++) right.push(await env.isRight(task, i));
  // The rest of the list is labelled per result group: one run each.
  const bySignature = new Map(shown.map((i, j) => [a.candidates[i].signature, right[j]]));
  let anyRight = right.some(Boolean);
  for (const c of a.candidates) {
    if (anyRight) break;
    if (bySignature.has(c.signature)) continue;
    const r = await env.isRight({ ...task, candidates: [{ sql: c.sql, reading: c.reading }] }, 0);
    bySignature.set(c.signature, r);
    anyRight = r;
  }
  let judge: number | undefined;
  if (o.judge) {
    const { rank } = o.judge(q.question, a.candidates);
    judge = shown.reduce((best, i, j) => (rank[i] > rank[shown[best]] ? j : best), 0);
  }
  return { task, right, anyRight, ...(judge !== undefined ? { judge } : {}) };
}

/** The lists GRPO can learn from: some shown candidate right and some wrong. */
export function informative(tasks: readonly LabelledTask[]): LabelledTask[] {
  return tasks.filter((t) => t.right.some(Boolean) && t.right.some((r) => !r));
}

/**
 * The chooser's format cold start: each task's opening answered with a candidate's number drawn at random, never
 * from the labels. The SQL agent answers with SQL; these teach only the answer's form, so what GRPO then learns of
 * which candidate is right is GRPO's alone (the cold-started policy chooses as chance does).
 */
export async function formatColdStart(env: ChooserEnvironment, tasks: readonly ChooserTask[], rng: Rng): Promise<ChatMessage[][]> {
  const out: ChatMessage[][] = [];
  for (const t of tasks) {
    const k = rng.int(t.candidates.length);
    out.push([...(await env.opening(t)), { role: 'assistant', content: formatAction({ kind: 'answer', content: String(k + 1), think: '' }) }]);
  }
  return out;
}

/**
 * The list shown in a seeded random order: candidates, labels and the judge's choice permuted together, so the
 * number the chooser answers still names the candidate it read (the reward reads `task.candidates[chosen]`). In the
 * ranker's order candidate 1 is most often right, and "always 1" pays; shuffled, a position carries no label.
 */
export function shuffledTask(l: LabelledTask, rng: Rng): LabelledTask {
  const order = rng.shuffle(l.task.candidates.map((_, i) => i));
  const judge = l.judge === undefined ? undefined : order.indexOf(l.judge);
  return {
    task: { ...l.task, candidates: order.map((i) => l.task.candidates[i]) },
    right: order.map((i) => l.right[i]),
    anyRight: l.anyRight,
    ...(judge !== undefined ? { judge } : {}),
  };
}
