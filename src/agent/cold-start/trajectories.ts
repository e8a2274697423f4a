/**
 * Cold-start trajectories for the SQL agent, made from verified (question, SQL) pairs without a teacher
 * model: each pair becomes either a direct answer or a check-then-answer episode whose observation is the
 * real result of the query, produced by the same environment the RL trainer uses (so the cold start
 * teaches exactly the protocol and observation format that RL will see).
 */
import { formatAction } from '../protocol.ts';
import type { SqlEnvironment, SqlTask } from '../sql-env.ts';
import type { ChatMessage } from '../types.ts';
import { Rng } from '../../util/rng.ts';
import { tablesRead } from '../../sql/lexer.ts';
import { valueLookup } from './lookups.ts';

export interface AgentTrajectory {
  id: string;
  messages: ChatMessage[];
  /** Every SQL the agent wrote (tool calls and answer), for diversity-aware selection. */
  sqls: string[];
  /** The agent's reasoning text, for diversity-aware selection. */
  reasoning: string;
  difficulty?: string;
  /** 'direct', 'verify' (the query run once before the answer) or 'lookup' (a value looked up before the answer). */
  kind: 'direct' | 'verify' | 'lookup';
}

function planNote(sql: string): string {
  const tables = tablesRead(sql);
  const parts = [tables.length ? `The answer reads ${tables.join(', ')}` : 'The answer needs no table'];
  if (/\bGROUP\s+BY\b/i.test(sql)) parts.push('grouped');
  if (/\bORDER\s+BY\b/i.test(sql)) parts.push('ordered');
  if (/\(\s*SELECT\b/i.test(sql)) parts.push('with a subquery');
  return `${parts.join(', ')}.`;
}

/**
 * One trajectory per task; a `verifyShare` fraction (chosen by seed) runs the query once as a tool call,
 * reads the real observation, then answers. Tasks whose query fails in the environment stay direct.
 */
export async function synthesizeTrajectories(
  tasks: readonly SqlTask[],
  env: SqlEnvironment,
  opts: { verifyShare: number; seed: number },
): Promise<AgentTrajectory[]> {
  const rng = new Rng(opts.seed);
  const out: AgentTrajectory[] = [];
  for (const task of tasks) {
    const sql = task.goldSql.trim();
    const plan = planNote(sql);
    await env.prepare(task.dbPath);
    const opening = env.openingFor(task);
    const answer = (think: string): ChatMessage => ({ role: 'assistant', content: formatAction({ kind: 'answer', content: sql, think }) });
    // A value asked for in other words than stored: look it up, read the stored form, answer with it.
    const lookup = valueLookup(task.question, sql, env.schemaOf(task.dbPath));
    if (lookup) {
      const ep = await env.start(task);
      const call = formatAction({ kind: 'sql', content: lookup.sql, think: `Look up how ${lookup.column} stores "${lookup.probe}".` });
      const r = await ep.step(call);
      if (!r.done && r.observation.includes(lookup.stored.slice(0, 37))) {
        const think = `${lookup.column} stores it as '${lookup.stored}'. ${plan}`;
        out.push({
          id: task.id,
          messages: [...opening, { role: 'assistant', content: call }, { role: 'tool', content: r.observation }, answer(think)],
          sqls: [lookup.sql, sql],
          reasoning: `${lookup.column} lookup. ${think}`,
          difficulty: task.difficulty,
          kind: 'lookup',
        });
        continue;
      }
    }
    if (rng.next() < opts.verifyShare) {
      const ep = await env.start(task);
      // The first words of the think decide between answering and checking, so a greedy policy can still choose to check.
      const call = formatAction({ kind: 'sql', content: sql, think: `Check the result first. ${plan}` });
      const r = await ep.step(call);
      if (!r.done && !r.observation.includes('error (')) {
        const rows = /\((?:over )?(\d+) rows?/.exec(r.observation)?.[1] ?? 'some';
        const think = `The query returned ${rows} rows, which answers the question.`;
        out.push({
          id: task.id,
          messages: [...opening, { role: 'assistant', content: call }, { role: 'tool', content: r.observation }, answer(think)],
          sqls: [sql, sql],
          reasoning: `${plan} ${think}`,
          difficulty: task.difficulty,
          kind: 'verify',
        });
        continue;
      }
    }
    out.push({ id: task.id, messages: [...opening, answer(plan)], sqls: [sql], reasoning: plan, difficulty: task.difficulty, kind: 'direct' });
  }
  return out;
}
