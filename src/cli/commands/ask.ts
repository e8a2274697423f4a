import { resolve } from 'node:path';
import type { Command } from 'commander';
import { AgroError, exitCodeFor } from '../../errors.ts';
import { EPISODE_TIMEOUT_MS, type EpisodeMode, type EpisodeEvent } from '../../agent/episode.ts';
import { SqlEnvironment, type SqlTask } from '../../agent/sql-env.ts';
import { formatResultTable } from '../../prompt/observation.ts';
import { createExecutor, introspectDatabase } from '../../sql/executor.ts';
import { existsSync } from 'node:fs';
import { storeCorrection } from '../../memory/build.ts';
import { readMemory } from '../../memory/legacy.ts';
import { checkTypedText } from '../../memory/entry.ts';
import { resolveCheckpointDir } from '../../model/checkpoint.ts';
import { assertReadableDatabase } from '../../sql/introspect.ts';
import { EXEC_ERROR_KIND } from '../../sql/types.ts';
import { addPrivilegedRoleOption, type PrivilegedRoleCliOption, numberArg } from '../options.ts';
import { addPolicyOptions, withPolicyAndExecutor, type PolicyCliOptions } from '../policy-options.ts';
import { addAnswerOptions, judgeFromCli } from '../answer-options.ts';
import { readPromptContract, turnTokens } from '../../prompt/contract.ts';
import { addPromptOptions, envDepsFromCli, printWarning, promptFromCli, type PromptCliOptions } from '../prompt-options.ts';
import { printOut } from '../print.ts';
import { answerMemories, askWithAnswerPath, RESULT_TIMEOUT_MS } from '../../answer/ask.ts';
import { Answerer } from '../../answer/resources.ts';
import { addChartOption, writeChartIfAsked } from '../chart-option.ts';
import { addSessionOption, openSession } from '../session-option.ts';
import { EXEC_DEFAULTS } from '../../sql/pool.ts';
import { databaseId } from '../../sql/db-id.ts';

interface AskCliOptions extends PolicyCliOptions, PromptCliOptions, PrivilegedRoleCliOption {
  db: string;
  evidence?: string;
  mode: EpisodeMode;
  maxTurnTokens?: number;
  episodeTimeout: number;
  rows: number;
  temperature: number;
  retries: number;
  json?: boolean;
  search: boolean;
  searchSamples: number;
  memory?: string[];
  judge?: string | boolean;
  correct?: string;
  chart?: string;
  session?: string;
}

const indent = (s: string, pad = '   '): string => s.split('\n').map((l) => pad + l).join('\n');

/** What a person reads as the episode goes: thinking, each SQL and its result, the answer. */
function printer(write: (s: string) => void): (e: EpisodeEvent) => void {
  return (e) => {
    if (e.type !== 'turn') return;
    const r = e.record;
    write(`turn ${r.turn + 1} (${(r.ms / 1000).toFixed(1)}s${r.completionTokens !== undefined ? `, ${r.completionTokens} tokens` : ''})\n`);
    if (r.think) write(`  think: ${r.think}\n`);
    if (r.sql) write(`  sql:   ${r.sql}\n`);
    if (r.retried) write(`  (${r.retried} more draft${r.retried > 1 ? 's' : ''} sampled: the answer's SQL did not run)\n`);
    if (r.observation) write(indent(r.observation.replace(/^<observation>|<\/observation>$/g, ''), '   | ') + '\n');
    if (r.action === 'invalid') write(`  (not a valid turn: ${r.invalid})\n${indent(r.text.slice(0, 400))}\n`);
  };
}

/**
 * `--correct SQL`: the person's answer to the question, stored in the database's memory (after it runs in the
 * sandbox) so that the next similar question finds it; no episode runs. The memory is --memory's, else the one
 * the policy's prompt contract names for this database.
 */
async function correct(question: string, o: AskCliOptions): Promise<void> {
  const dbId = databaseId(o.db);
  let path = o.memory?.[0];
  if (!path && o.policy) path = readPromptContract(resolveCheckpointDir(o.policy))?.memory?.find((m) => existsSync(m) && readMemory(m).dbId === dbId);
  if (!path) throw new AgroError('usage', `ask --correct: no memory of ${dbId} to store it in; give --memory FILE (agro memory build makes one)`);
  const pool = createExecutor({ size: 1, allowPrivilegedRole: o.allowPrivilegedRole });
  try {
    const r = await storeCorrection(path, resolve(o.db), await introspectDatabase(o.db), question, o.correct!, pool);
    printOut(`stored your answer in ${path}: the next question like this one finds it\n`);
    printOut(indent(formatResultTable(r, o.rows, 100_000)) + '\n');
  } finally {
    await pool.close();
  }
}

async function run(question: string, o: AskCliOptions): Promise<void> {
  if (!question.trim()) throw new AgroError('usage', 'ask: the question is empty');
  checkTypedText(question, 'question', 'ask');
  // A missing file is exit 3, an unreadable one (truncated, not SQLite) exit 4: before the policy is loaded.
  assertReadableDatabase(o.db);
  if (o.correct !== undefined) return correct(question, o);
  // A memory given for this database must be of it: another database's, or one built before its schema changed, is refused (exit 4).
  if (o.memory?.length) {
    const schema = await introspectDatabase(o.db);
    for (const m of o.memory) readMemory(m, schema);
  }
  const session = openSession(o);
  const dbId = databaseId(o.db);
  await withPolicyAndExecutor(o, 1, { size: 1, allowPrivilegedRole: o.allowPrivilegedRole }, async (policy, pool) => {
    const prompt = promptFromCli(policy.promptContract, o);
    const env = new SqlEnvironment(pool, { ...prompt, ...(o.mode === 'direct' ? { maxTurns: 1 } : {}) }, envDepsFromCli(o, dbId));
    const dbPath = resolve(o.db);
    const task: SqlTask = { id: 'ask', dbId, dbPath, question, ...(o.evidence ? { evidence: o.evidence } : {}), goldSql: '', previous: session.previous };
    const write = (s: string): void => printOut(s);
    const tokens = turnTokens(policy.promptContract, o.maxTurnTokens);
    if (tokens.warning) printWarning(tokens.warning);
    const memories = answerMemories(policy.promptContract, o.memory);
    const answerer = o.search ? new Answerer(pool, { memory: memories, judge: judgeFromCli(o) }) : undefined;
    const asked = await askWithAnswerPath(env, task, policy, answerer, { mode: o.mode, maxTurnTokens: tokens.maxTurnTokens, retries: o.retries, timeoutMs: o.episodeTimeout, temperature: o.temperature, samples: o.searchSamples, onEvent: o.json ? undefined : printer(write) });
    const { episode: res, chosen } = asked;
    const answerSql = asked.sql;
    const final = answerSql !== undefined && answerSql !== null ? await pool.execute(dbPath, answerSql, { timeoutMs: RESULT_TIMEOUT_MS, maxRows: o.rows + 1 }) : undefined;
    const suggestions = answerer && chosen?.sql ? await answerer.suggestions(dbPath, task.dbId, { sql: chosen.sql, question }) : [];
    const low = chosen?.sql ? chosen.low : false;
    if (o.json) {
      const { messages: _m, ...episode } = res;
      const answer = chosen ? { sql: chosen.sql, reading: chosen.reading, confidence: chosen.confidence, lowConfidence: low, candidates: chosen.candidates.slice(0, 10), memories: memories.length, suggestions } : null;
      process.stdout.write(JSON.stringify({ question, db: o.db, policy: policy.name, ...episode, answer, result: final ?? null }, null, 2) + '\n');
    } else if (answerSql !== undefined && answerSql !== null) {
      if (chosen?.sql && chosen.sql !== asked.policySql) write(`the policy answered ${asked.policySql ?? 'nothing'}; a better-checked candidate was chosen (${chosen.candidates[0].sources.join(', ')})\n`);
      write(`answer: ${answerSql}\n`);
      if (chosen?.reading) write(`I read this as: ${chosen.reading}\n`);
      if (chosen) write(`confidence: ${chosen.confidence.toFixed(2)}${low ? ' (low: check it before trusting it; --correct stores the right SQL)' : ''} (${chosen.tried} candidates tried, ${new Set(chosen.candidates.map((c) => c.group)).size} distinct results${memories.length ? '' : '; no memory: build one with agro memory build'})\n`);
      write(indent(formatResultTable(final!, o.rows, 100_000)) + '\n');
      if (suggestions.length) write(`you might also ask:\n${suggestions.map((q) => `  ${q}\n`).join('')}`);
    } else {
      write(`no answer (${res.endReason}${res.error ? `: ${res.error}` : ''})\n`);
    }
    session.save(question, answerSql ?? undefined);
    await writeChartIfAsked(o, answerSql ? () => pool.execute(dbPath, answerSql, { timeoutMs: RESULT_TIMEOUT_MS, maxRows: EXEC_DEFAULTS.maxRows }) : undefined);
    // A finished episode exits 0 even without an answer (the output says why); a deadline with nothing chosen is a timeout (7), an answer that does not run exits as agro sql would (refused 5, SQL error 6).
    if (res.endReason === 'timeout' && !chosen?.sql) process.exitCode = 7;
    else if (final && !final.ok) process.exitCode = exitCodeFor(EXEC_ERROR_KIND[final.error]);
  });
}

export function register(program: Command): void {
  const cmd = program
    .command('ask')
    .description('Ask a trained agent (checkpoint, GGUF or endpoint) one question about a SQLite database')
    .argument('<question>', 'the question, in quotes')
    .requiredOption('--db <file>', 'SQLite database');
  addAnswerOptions(addPolicyOptions(cmd).option('--evidence <text>', 'a hint, as BIRD gives one'))
    .option('--episode-timeout <ms>', 'wall-clock limit', numberArg('--episode-timeout', { min: 1 }), EPISODE_TIMEOUT_MS)
    .option('--temperature <t>', 'sampling temperature (0 = greedy)', numberArg('--temperature', { min: 0, integer: false }), 0)
    .option('--rows <n>', 'rows of the final result to show', numberArg('--rows', { min: 1 }), 20)
    .option('--no-search', "print the policy's own answer instead of the answer path's (candidates from the policy and the memory, run and ranked)")
    .option('--correct <sql>', "the right SQL for this question: stored in the memory (--memory, else the policy's) after it runs in the sandbox; the next similar question finds it")
    .option('--json', 'print the episode and the result as JSON');
  addChartOption(cmd);
  addSessionOption(cmd);
  addPrivilegedRoleOption(addPromptOptions(cmd)).action((q: string, o: AskCliOptions) => run(q, o));
}
