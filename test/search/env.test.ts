import { test } from 'node:test';
import assert from 'node:assert/strict';
import { prepareRewards, scoreEpisode } from '../../src/rl/rewards.ts';
import type { ChatMessage, StepResult, Transcript } from '../../src/agent/types.ts';
import { AgroError } from '../../src/errors.ts';
import { SearchCorpus } from '../../src/search/corpus.ts';
import { SearchEnvironment, reasoningText, type SearchEnvConfig, type SearchTask } from '../../src/search/env.ts';
import { synthesize } from '../../src/search/synthesize.ts';
import { buildMusicDb } from './fixture.ts';

const corpus = new SearchCorpus(synthesize(buildMusicDb(), { n: 1, seed: 1 }).docs);

const task: SearchTask = {
  id: 't1',
  question: 'What is the country of the artist of the album "Harbor Lights"?',
  answer: 'Canada',
  aliases: [],
  entities: [{ name: 'Blue Harbor' }],
};

/** Plays a fixed list of turns the way the trainer does and returns the steps and the transcript. */
async function play(turns: string[], config: Partial<SearchEnvConfig> = {}, t: SearchTask = task) {
  const env = new SearchEnvironment(corpus, config);
  const ep = await env.start(t);
  const messages: ChatMessage[] = [...ep.opening];
  const steps: StepResult[] = [];
  let last: StepResult | undefined;
  for (const turn of turns) {
    messages.push({ role: 'assistant', content: turn });
    last = await ep.step(turn);
    steps.push(last);
    if (!last.done) messages.push({ role: 'tool', content: last.observation });
    if (last.done) break;
  }
  assert.ok(last?.done, 'the script must end the episode');
  const transcript: Transcript = {
    messages,
    toolCalls: 0,
    endReason: last.reason,
    ...(last.answer !== undefined ? { answer: last.answer } : {}),
    policyTokens: 0,
    truncated: false,
  };
  return { env, ep, steps, transcript, parts: await env.score(t, transcript), ctx: await env.rewardContext(t, transcript) };
}

const SEARCH = '<think>Find the album Harbor Lights first.</think>\n<search>Harbor Lights</search>';
const OPEN = '<think>The album page says the artist is Blue Harbor; open that artist.</think><open>artists:2</open>';
const ANSWER = '<think>Blue Harbor is from Canada.</think><answer>canada</answer>';

test('the opening lists the tools and the protocol, then asks the question', async () => {
  const ep = await new SearchEnvironment(corpus, { maxTurns: 5, maxToolCalls: 4 }).start(task);
  assert.equal(ep.opening.length, 2);
  assert.equal(ep.opening[0].role, 'system');
  for (const tag of ['<think>', '<search>', '<open>', '<answer>', '<observation>']) assert.ok(ep.opening[0].content.includes(tag), tag);
  assert.match(ep.opening[0].content, /at most 5 turns and 4 tool calls/);
  assert.deepEqual(ep.opening[1], { role: 'user', content: `Question: ${task.question}` });
});

test('a scripted search → open → answer episode: observations, done, and every score part', async () => {
  const { steps, parts, ctx } = await play([SEARCH, OPEN, ANSWER]);
  assert.equal(steps[0].done, false);
  const obs0 = (steps[0] as { observation: string }).observation;
  assert.ok(obs0.startsWith('<observation>[albums:2] Harbor Lights: '), obs0);
  assert.ok(obs0.includes('The artist of Harbor Lights is Blue Harbor.'));
  assert.equal(obs0.split('\n').length, 3, 'topK = 3 results, one per line');
  const obs1 = (steps[1] as { observation: string }).observation;
  assert.equal(obs1, '<observation>[artists:2] Blue Harbor\nBlue Harbor is an artist. The country of Blue Harbor is Canada.</observation>');
  assert.deepEqual(steps[2], { done: true, reason: 'answer', answer: 'canada' });
  assert.equal(parts.answer.value, 1);
  assert.match(parts.answer.reason, /exact match \(F1 1\.00\)/);
  assert.equal(parts.answer_f1.value, 1);
  assert.equal(parts.entity_match.value, 1);
  assert.equal(parts.format.value, 1);
  assert.equal(parts.tool_calls.value, 2);
  assert.equal(ctx.correct, true);
  assert.equal(ctx.formatOk, true);
  assert.equal(ctx.entityRate, 1);
  assert.equal(ctx.toolCalls, 2);
  assert.equal(ctx.answer, 'canada');
  assert.deepEqual(ctx.goldAnswers, ['Canada']);
  assert.deepEqual(ctx.goldEntities, [{ name: 'Blue Harbor' }]);
  assert.equal(ctx.turns?.length, 3);
  // The registry's E-GRPO entity reward reads the same reasoning and agrees with the environment's γ.
  const scored = scoreEpisode(ctx, prepareRewards([{ name: 'entity_match', weight: 1 }, { name: 'exact_match', weight: 1 }]));
  assert.equal(scored.parts.entity_match.value, ctx.entityRate);
  assert.equal(scored.parts.exact_match.value, 1);
});

test('E-GRPO signals: a near miss keeps its entity credit, nonsense gets none, observations do not count', async () => {
  const nearMiss = await play([SEARCH, OPEN, '<think>Blue Harbor, so probably Nigeria.</think><answer>Nigeria</answer>']);
  assert.equal(nearMiss.parts.answer.value, 0);
  assert.equal(nearMiss.parts.entity_match.value, 1);
  assert.equal(nearMiss.parts.format.value, 1);
  assert.equal(nearMiss.ctx.correct, false);

  const nonsense = await play(['<think>no idea</think><answer>Peru</answer>']);
  assert.equal(nonsense.parts.answer.value, 0);
  assert.equal(nonsense.parts.entity_match.value, 0);
  assert.equal(nonsense.parts.tool_calls.value, 0);

  // The artist's name appears in the observations and the <open> id, never in think or search text.
  const silent = await play([
    '<think>look it up</think><search>Harbor Lights</search>',
    '<think>open the artist</think><open>artists:2</open>',
    '<think>done</think><answer>Canada</answer>',
  ]);
  assert.equal(silent.parts.entity_match.value, 0);
  assert.equal(silent.parts.answer.value, 1);
  // A search query does count as reasoning.
  const byQuery = await play(['<think>x</think><search>blue harbor country</search>', '<think>y</think><answer>Canada</answer>']);
  assert.equal(byQuery.parts.entity_match.value, 1);
  assert.equal(reasoningText(byQuery.transcript.messages), 'x\nblue harbor country\ny');
});

test('budgets: tool calls past the limit are refused, the turn limit ends the episode', async () => {
  const limited = await play([SEARCH, OPEN, ANSWER], { maxToolCalls: 1 });
  const refused = (limited.steps[1] as { observation: string }).observation;
  assert.equal(refused, '<observation>No tool calls left (limit 1). Give your final <answer> now.</observation>');
  assert.equal(limited.parts.tool_calls.value, 1);
  assert.match(limited.parts.tool_calls.reason, /1 executed of 2 requested/);
  assert.equal(limited.parts.answer.value, 1);

  const cut = await play([SEARCH, OPEN, ANSWER], { maxTurns: 2 });
  assert.equal(cut.steps.length, 2);
  const end = cut.steps[1];
  assert.ok(end.done && end.reason === 'turn_limit');
  assert.ok(end.observation?.includes('Blue Harbor is an artist.'));
  assert.equal(cut.parts.format.value, 0);
  assert.match(cut.parts.format.reason, /no <answer> \(ended by turn_limit\)/);
  assert.equal(cut.parts.answer.value, 0);
  assert.equal(cut.parts.answer.reason, 'no answer');
  // γ is still measured without an answer; E-GRPO's format gate decides whether it is paid.
  assert.equal(cut.parts.entity_match.value, 1);
});

test('invalid actions end the episode with the reason; bad ids and no-hit queries are observations', async () => {
  const plain = await play(['The answer is Canada.']);
  const end = plain.steps[0];
  assert.ok(end.done && end.reason === 'invalid_action');
  assert.match(end.observation ?? '', /^<observation>Invalid action: no protocol tags/);
  assert.equal(plain.parts.format.value, 0);
  assert.equal(plain.ctx.formatOk, false);

  const sql = await play(['<think>t</think><sql>SELECT 1</sql>']);
  assert.ok(sql.steps[0].done && sql.steps[0].reason === 'invalid_action');
  assert.match(sql.parts.format.reason, /turn 1: action <sql> is not allowed/);

  const misc = await play([
    '<think>t</think><open>artists:999</open>',
    '<think>t</think><search>zzzz qqqq</search>',
    '<think>t</think><answer>Canada</answer>',
  ]);
  assert.equal((misc.steps[0] as { observation: string }).observation, '<observation>No document with id "artists:999". Use an id shown in brackets by <search>.</observation>');
  assert.equal((misc.steps[1] as { observation: string }).observation, '<observation>No documents match "zzzz qqqq".</observation>');
  assert.equal(misc.parts.tool_calls.value, 2);
  assert.equal(misc.parts.format.value, 1);
});

test('observations are bounded; step after the end and bad configs are errors', async () => {
  const small = await play([SEARCH, ANSWER], { observationChars: 100 });
  const obs = (small.steps[0] as { observation: string }).observation;
  assert.equal(obs.length, 100 + '<observation></observation>'.length);
  assert.ok(obs.endsWith('…</observation>'));
  await assert.rejects(() => small.ep.step(ANSWER), (e: unknown) => e instanceof AgroError && e.kind === 'internal');
  assert.throws(() => new SearchEnvironment(corpus, { maxTurns: 0 }), (e: unknown) => e instanceof AgroError && e.kind === 'invalid_input');
});

test('aliases are accepted answers and F1 is kept as information', async () => {
  const t: SearchTask = { ...task, answer: 'Nancy Edwards', aliases: ['Edwards, Nancy'], entities: [] };
  const alias = await play(['<think>t</think><answer>Edwards, Nancy</answer>'], {}, t);
  assert.equal(alias.parts.answer.value, 1);
  const partial = await play(['<think>t</think><answer>Nancy</answer>'], {}, t);
  assert.equal(partial.parts.answer.value, 0);
  // "nancy" vs "nancy edwards": P = 1, R = 1/2 → F1 = 2/3
  assert.ok(Math.abs(partial.parts.answer_f1.value - 2 / 3) < 1e-9);
  assert.equal(partial.parts.entity_match.reason, 'no ground-truth entities');
});
