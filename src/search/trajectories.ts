/**
 * Cold-start trajectories for the search agent without a teacher model (the search counterpart of
 * src/agent/cold-start/trajectories.ts). Each synthesized question becomes a scripted episode played through the
 * REAL SearchEnvironment, so every observation is exactly what the RL trainer will show the policy:
 *   search the anchor's title → open its page → for each next entity of the chain: search its title
 *   (read off the previous page) → open it → … → answer.
 * An entity answer is read off the last opened page, so its own page is never opened. Page ids come from
 * the search results when the wanted document is among them, else from the question's chainDocIds (the
 * synthesizer guarantees the titles to search are unique, so this fallback is rare). The thinking names
 * every chain entity as it is found, so E-GRPO's entity match rate of the reasoning is 1.
 */
import { formatAction } from '../agent/protocol.ts';
import type { ChatMessage } from '../agent/types.ts';
import { AgroError } from '../errors.ts';
import { reasoningText, type SearchEnvironment, type SearchTask } from './env.ts';
import type { SearchQuestion } from './synthesize.ts';

export interface SearchTrajectory {
  id: string;
  messages: ChatMessage[];
  /** The reasoning text as the environment scores it (think blocks and search queries). */
  reasoning: string;
  difficulty: string;
  /** Share of the opened pages whose id the preceding search listed (1 = no id came from the answer key). */
  foundBySearch: number;
}

/** A synthesized question as a search task (the same mapping `agro train --task search` uses). */
export function searchTaskOf(q: SearchQuestion): SearchTask & { difficulty: string } {
  return { id: q.id, question: q.question, answer: q.answer, aliases: q.aliases, entities: q.entities, difficulty: `${q.hops}-hop` };
}

/** Ids listed by a search observation (`[id] title: snippet` lines), in rank order. */
export function resultIds(observation: string): string[] {
  return [...observation.matchAll(/^(?:<observation>)?\[([^\]\n]+)\] /gm)].map((m) => m[1]);
}

/** One scripted episode for a synthesized question, run through `env`. */
export async function searchTrajectory(q: SearchQuestion, env: SearchEnvironment): Promise<SearchTrajectory> {
  if (q.chain.length === 0 || q.chain.length !== q.chainDocIds.length) {
    throw new AgroError('invalid_input', `question ${q.id}: chain and chainDocIds must be non-empty and of the same length`);
  }
  const task = searchTaskOf(q);
  const ep = await env.start(task);
  const messages: ChatMessage[] = [...ep.opening];
  const act = async (kind: 'search' | 'open', content: string, think: string): Promise<string> => {
    const text = formatAction({ kind, content, think });
    messages.push({ role: 'assistant', content: text });
    const r = await ep.step(text);
    if (r.done) throw new AgroError('internal', `question ${q.id}: the episode ended early (${r.reason}); raise the environment's maxTurns/maxToolCalls`);
    messages.push({ role: 'tool', content: r.observation });
    return r.observation;
  };

  // An entity answer is the title on the previous page: its own page need not be opened.
  let found = 0;
  const toOpen = q.kind === 'entity' ? q.chain.length - 1 : q.chain.length;
  for (let i = 0; i < toOpen; i++) {
    const title = q.chain[i];
    const think =
      i === 0
        ? `The question starts from "${title}". Search for it.`
        : `The page of ${q.chain[i - 1]} points to ${title}. Search for ${title}.`;
    const hits = resultIds(await act('search', title, think));
    // The id shown by the search when the page is there (it is the chain's id); else the known id.
    const id = hits.find((h) => h === q.chainDocIds[i]) ?? q.chainDocIds[i];
    if (hits.includes(id)) found++;
    await act('open', id, `Open the page of ${title} (${id}).`);
  }
  const last = q.chain[q.chain.length - 1];
  const think =
    q.kind === 'entity'
      ? `The page of ${q.chain[q.chain.length - 2]} names ${last}, which answers the question.`
      : `The page of ${last} gives the answer: ${q.answer}.`;
  const final = formatAction({ kind: 'answer', content: q.answer, think });
  messages.push({ role: 'assistant', content: final });
  const r = await ep.step(final);
  if (!r.done || r.reason !== 'answer') throw new AgroError('internal', `question ${q.id}: the answer turn did not end the episode`);
  return { id: q.id, messages, reasoning: reasoningText(messages), difficulty: task.difficulty, foundBySearch: found / Math.max(1, toOpen) };
}

/** One trajectory per question, in order. */
export async function synthesizeSearchTrajectories(questions: readonly SearchQuestion[], env: SearchEnvironment): Promise<SearchTrajectory[]> {
  const out: SearchTrajectory[] = [];
  for (const q of questions) out.push(await searchTrajectory(q, env));
  return out;
}
