/**
 * `agro chat --db FILE [--policy ...]`: a conversation on a terminal. Each line is a question; the next one
 * may follow it up ("only the top three", "and in 2009?"): the earlier questions and their SQL go into the
 * prompt (src/prompt/conversation.ts), as `agro ask --session FILE` (for scripts), the Playground and `POST /v1/ask` do. The policy
 * is loaded once. Besides questions, a line may be a command (CHAT_COMMANDS): `:correct SQL` stores the right SQL
 * for the last question in the database's memory (as `agro ask --correct` does), `:chart FILE.svg` draws the last
 * answer, `:new` starts a new conversation, `:quit` (or Ctrl-D) ends it.
 */
import { createInterface } from 'node:readline';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { answerMemories, askWithAnswerPath, RESULT_TIMEOUT_MS } from '../../answer/ask.ts';
import { SEARCH_SAMPLES } from '../../answer/answer.ts';
import { Answerer } from '../../answer/resources.ts';
import { SqlEnvironment, type SqlTask } from '../../agent/sql-env.ts';
import { EPISODE_TIMEOUT_MS } from '../../agent/episode.ts';
import { formatResultTable } from '../../prompt/observation.ts';
import type { PreviousTurn } from '../../prompt/conversation.ts';
import { turnTokens } from '../../prompt/contract.ts';
import { assertReadableDatabase } from '../../sql/introspect.ts';
import { EXEC_DEFAULTS } from '../../sql/pool.ts';
import type { ExecResult } from '../../sql/types.ts';
import { AgroError } from '../../errors.ts';
import { checkTypedText } from '../../memory/entry.ts';
import { addJudgeOption, addMemoryOption, judgeFromCli } from '../answer-options.ts';
import { checkChartPath, writeChartIfAsked } from '../chart-option.ts';
import { numberArg } from '../options.ts';
import { addPolicyOptions, withPolicyAndExecutor, type PolicyCliOptions } from '../policy-options.ts';
import { addPromptOptions, envDepsFromCli, printWarning, promptFromCli, type PromptCliOptions } from '../prompt-options.ts';
import { printOut } from '../print.ts';
import { databaseId } from '../../sql/db-id.ts';

interface ChatCliOptions extends PolicyCliOptions, PromptCliOptions {
  db: string;
  rows: number;
  episodeTimeout: number;
  memory?: string[];
  judge?: string | boolean;
}

/** What a line may be besides a question. */
const CHAT_COMMANDS = `commands: :correct SQL (the right SQL for the last question, stored in the memory), :chart FILE.svg (the last answer as a chart), :new (a new conversation), :quit`;

const indent = (s: string): string => s.split('\n').map((l) => `   ${l}`).join('\n');

async function run(o: ChatCliOptions): Promise<void> {
  assertReadableDatabase(o.db);
  let history: PreviousTurn[] = [];
  const dbPath = resolve(o.db);
  const dbId = databaseId(dbPath);
  await withPolicyAndExecutor(o, 1, { size: 1 }, async (policy, pool) => {
    const env = new SqlEnvironment(pool, promptFromCli(policy.promptContract, o), envDepsFromCli(o, dbId));
    // The answer path, as agro ask's: the policy's memory and --memory's (a follow-up's candidates come from the policy alone).
    const answerer = new Answerer(pool, { memory: answerMemories(policy.promptContract, o.memory), judge: judgeFromCli(o) });
    let last: { question: string; sql?: string } | undefined;
    const tokens = turnTokens(policy.promptContract, undefined);
    if (tokens.warning) printWarning(tokens.warning);
    const tty = process.stdin.isTTY === true;
    const rl = createInterface({ input: process.stdin, output: process.stdout, terminal: tty });
    if (tty) printOut(`agro chat on ${dbId} (${policy.name}): ask a question; a follow-up may refer to the last answer.\n${CHAT_COMMANDS}\n`);
    rl.setPrompt('? ');
    if (tty) rl.prompt();
    for await (const line of rl) {
      const question = line.trim();
      if (question === ':quit' || question === ':q') break;
      const refused = question && !question.startsWith(':') ? notAQuestion(question) : undefined;
      if (question === ':new') {
        history = [];
        printOut('(new conversation)\n');
      } else if (question.startsWith(':')) {
        // A command's mistake is one line and the conversation goes on.
        try {
          await command(question, last, { answerer, dbPath, dbId, run: (sql) => pool.execute(dbPath, sql, { timeoutMs: RESULT_TIMEOUT_MS, maxRows: EXEC_DEFAULTS.maxRows }) });
        } catch (err) {
          if (!(err instanceof AgroError)) throw err;
          printOut(`${err.message}\n`);
        }
      } else if (refused) {
        printOut(`${refused}\n`);
      } else if (question) {
        const task: SqlTask = { id: 'chat', dbId, dbPath, question, goldSql: '', previous: history };
        const { episode: res, chosen, sql } = await askWithAnswerPath(env, task, policy, answerer, { mode: 'agent', maxTurnTokens: tokens.maxTurnTokens, temperature: 0, samples: SEARCH_SAMPLES, timeoutMs: o.episodeTimeout });
        if (sql !== undefined) {
          const r = await pool.execute(dbPath, sql, { timeoutMs: RESULT_TIMEOUT_MS, maxRows: o.rows + 1 });
          const low = chosen?.low ? ' low: check it, and :correct SQL if it is wrong' : '';
          const read = chosen?.reading ? `\nI read this as: ${chosen.reading} (confidence ${chosen.confidence.toFixed(2)}${low})` : '';
          printOut(`sql: ${sql}${read}\n${indent(formatResultTable(r, o.rows, 100_000))}\n`);
          const more = chosen?.sql && !history.length ? await answerer.suggestions(dbPath, dbId, { sql: chosen.sql, question }) : [];
          if (more.length) printOut(`you might also ask:\n${more.map((q) => `  ${q}\n`).join('')}`);
        } else printOut(`no answer (${res.endReason}${res.error ? `: ${res.error}` : ''})\n`);
        history = [...history, { question, sql: sql ?? '' }];
        last = { question, ...(sql !== undefined ? { sql } : {}) };
      }
      if (tty) rl.prompt();
    }
    rl.close();
  });
}

/** Why a line is no question agro takes (too long, a control character: one line, and the conversation goes on), or undefined. */
function notAQuestion(line: string): string | undefined {
  try {
    checkTypedText(line, 'question', 'chat');
    return undefined;
  } catch (err) {
    if (err instanceof AgroError) return err.message;
    throw err;
  }
}

/** A `:command` line: a correction of the last question, or a chart of its answer. */
async function command(
  line: string,
  last: { question: string; sql?: string } | undefined,
  c: { answerer: Answerer; dbPath: string; dbId: string; run: (sql: string) => Promise<ExecResult> },
): Promise<void> {
  const name = line.split(/\s+/)[0];
  const arg = line.slice(name.length).trim();
  if (name === ':correct' || name === ':chart') {
    if (!last) throw new AgroError('usage', `${name}: ask a question first`);
    if (!arg) throw new AgroError('usage', name === ':correct' ? ':correct needs the right SQL: :correct SELECT …' : ':chart needs a file: :chart answer.svg');
  }
  if (name === ':correct' && last) {
    const r = await c.answerer.correct(c.dbPath, c.dbId, last.question, arg);
    printOut(`stored in ${r.path} (${r.rows} row${r.rows === 1 ? '' : 's'}): the next question like "${last.question}" finds it\n`);
  } else if (name === ':chart' && last) {
    const sql = last.sql;
    await writeChartIfAsked({ chart: checkChartPath(arg, ':chart') }, sql ? () => c.run(sql) : undefined, ':chart');
  } else throw new AgroError('usage', `${name}: not a command; ${CHAT_COMMANDS}`);
}

export function register(program: Command): void {
  const cmd = program
    .command('chat')
    .description('A conversation with a trained agent on a terminal: each line a question, follow-ups refer to the last answer')
    .requiredOption('--db <file>', 'SQLite database');
  addPolicyOptions(cmd)
    .option('--episode-timeout <ms>', 'wall-clock limit per question', numberArg('--episode-timeout', { min: 1 }), EPISODE_TIMEOUT_MS)
    .option('--rows <n>', 'rows of each result to show', numberArg('--rows', { min: 1 }), 20);
  addJudgeOption(addMemoryOption(cmd));
  addPromptOptions(cmd).action((o: ChatCliOptions) => run(o));
}
