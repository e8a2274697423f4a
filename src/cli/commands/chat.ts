/**
 * `agro chat --db FILE [--policy ...]`: a conversation on a terminal. Each line is a question; the next one
 * may follow it up ("only the top three", "and in 2009?"): the earlier questions and their SQL go into the
 * prompt (src/prompt/conversation.ts), as `agro ask --session FILE` (for scripts), the Playground and `POST /v1/ask` do. The policy
 * is loaded once. `:new` starts a new conversation, `:quit` (or Ctrl-D) ends it.
 */
import { createInterface } from 'node:readline';
import { basename, resolve } from 'node:path';
import type { Command } from 'commander';
import { askWithAnswerPath } from '../../answer/ask.ts';
import { SEARCH_SAMPLES } from '../../answer/answer.ts';
import { Answerer } from '../../answer/resources.ts';
import { SqlEnvironment, type SqlTask } from '../../agent/sql-env.ts';
import { formatResultTable } from '../../prompt/observation.ts';
import type { PreviousTurn } from '../../prompt/conversation.ts';
import { turnTokens } from '../../prompt/contract.ts';
import { assertReadableDatabase } from '../../sql/introspect.ts';
import { numberArg } from '../options.ts';
import { addPolicyOptions, withPolicyAndExecutor, type PolicyCliOptions } from '../policy-options.ts';
import { addPromptOptions, envDepsFromCli, printWarning, promptFromCli, type PromptCliOptions } from '../prompt-options.ts';
import { printOut } from '../print.ts';

interface ChatCliOptions extends PolicyCliOptions, PromptCliOptions {
  db: string;
  rows: number;
  episodeTimeout: number;
}

const indent = (s: string): string => s.split('\n').map((l) => `   ${l}`).join('\n');

async function run(o: ChatCliOptions): Promise<void> {
  assertReadableDatabase(o.db);
  let history: PreviousTurn[] = [];
  const dbPath = resolve(o.db);
  const dbId = basename(dbPath).replace(/\.sqlite3?$|\.db$/i, '');
  await withPolicyAndExecutor(o, 1, { size: 1 }, async (policy, pool) => {
    const env = new SqlEnvironment(pool, promptFromCli(policy.promptContract, o), envDepsFromCli(o, dbId));
    // The answer path, as agro ask's: the policy's memory (a follow-up's candidates come from the policy alone).
    const answerer = new Answerer(pool, { memory: policy.promptContract?.memory ?? [] });
    const tokens = turnTokens(policy.promptContract, undefined);
    if (tokens.warning) printWarning(tokens.warning);
    const tty = process.stdin.isTTY === true;
    const rl = createInterface({ input: process.stdin, output: process.stdout, terminal: tty });
    if (tty) printOut(`agro chat on ${dbId} (${policy.name}): ask a question; a follow-up may refer to the last answer. :new starts over, :quit ends.\n`);
    rl.setPrompt('? ');
    if (tty) rl.prompt();
    for await (const line of rl) {
      const question = line.trim();
      if (question === ':quit' || question === ':q') break;
      if (question === ':new') {
        history = [];
        printOut('(new conversation)\n');
      } else if (question) {
        const task: SqlTask = { id: 'chat', dbId, dbPath, question, goldSql: '', previous: history };
        const { episode: res, chosen, sql } = await askWithAnswerPath(env, task, policy, answerer, { mode: 'agent', maxTurnTokens: tokens.maxTurnTokens, temperature: 0, samples: SEARCH_SAMPLES, timeoutMs: o.episodeTimeout });
        if (sql !== undefined) {
          const r = await pool.execute(dbPath, sql, { timeoutMs: 30_000, maxRows: o.rows + 1 });
          const read = chosen?.reading ? `\nI read this as: ${chosen.reading} (confidence ${chosen.confidence.toFixed(2)})` : '';
          printOut(`sql: ${sql}${read}\n${indent(formatResultTable(r, o.rows, 100_000))}\n`);
        } else printOut(`no answer (${res.endReason}${res.error ? `: ${res.error}` : ''})\n`);
        history = [...history, { question, sql: sql ?? '' }];
      }
      if (tty) rl.prompt();
    }
    rl.close();
  });
}

export function register(program: Command): void {
  const cmd = program
    .command('chat')
    .description('A conversation with a trained agent on a terminal: each line a question, follow-ups refer to the last answer')
    .requiredOption('--db <file>', 'SQLite database');
  addPolicyOptions(cmd)
    .option('--episode-timeout <ms>', 'wall-clock limit per question', numberArg('--episode-timeout', { min: 1 }), 120_000)
    .option('--rows <n>', 'rows of each result to show', numberArg('--rows', { min: 1 }), 20);
  addPromptOptions(cmd).action((o: ChatCliOptions) => run(o));
}
