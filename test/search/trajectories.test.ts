import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseAction, SEARCH_AGENT_ACTIONS } from '../../src/agent/protocol.ts';
import type { Transcript } from '../../src/agent/types.ts';
import { SearchCorpus } from '../../src/search/corpus.ts';
import { SearchEnvironment } from '../../src/search/env.ts';
import { synthesize, type SearchQuestion } from '../../src/search/synthesize.ts';
import { resultIds, searchTrajectory, synthesizeSearchTrajectories, searchTaskOf } from '../../src/search/trajectories.ts';
import { buildMusicDb } from './fixture.ts';

const synth = synthesize(buildMusicDb(), { n: 30, seed: 1 });
const corpus = new SearchCorpus(synth.docs);
const env = new SearchEnvironment(corpus);
const byQuestion = (text: string): SearchQuestion => {
  const q = synth.questions.find((x) => x.question === text);
  assert.ok(q, `fixture question missing: ${text}`);
  return q;
};
const actions = (t: { messages: { role: string; content: string }[] }) =>
  t.messages.filter((m) => m.role === 'assistant').map((m) => {
    const a = parseAction(m.content, SEARCH_AGENT_ACTIONS);
    return a.kind === 'invalid' ? `invalid: ${a.reason}` : `${a.kind} ${a.content}`;
  });

test('a 2-hop attribute question: search and open each page of the chain, then answer', async () => {
  const t = await searchTrajectory(byQuestion('What is the country of the artist of the album "Harbor Lights"?'), env);
  assert.deepEqual(actions(t), ['search Harbor Lights', 'open albums:2', 'search Blue Harbor', 'open artists:2', 'answer Canada']);
  const tools = t.messages.filter((m) => m.role === 'tool').map((m) => m.content);
  assert.equal(tools.length, 4);
  // Real observations: the album page names its artist, the artist page its country.
  assert.match(tools[1], /The artist of Harbor Lights is Blue Harbor\./);
  assert.match(tools[3], /The country of Blue Harbor is Canada\./);
  assert.deepEqual(resultIds(tools[0])[0], 'albums:2');
  assert.equal(t.difficulty, '2-hop');
  assert.equal(t.foundBySearch, 1);
  assert.match(t.reasoning, /Blue Harbor/);
});

test('an entity answer is read off the previous page without opening its own', async () => {
  const t = await searchTrajectory(byQuestion('What is the artist of the album "Harbor Lights"?'), env);
  assert.deepEqual(actions(t), ['search Harbor Lights', 'open albums:2', 'answer Blue Harbor']);
});

test('every synthesized question: turns parse, the answer exact-matches, entity rate 1', async () => {
  assert.ok(synth.questions.length >= 20);
  const trajs = await synthesizeSearchTrajectories(synth.questions, env);
  assert.equal(trajs.length, synth.questions.length);
  for (const [i, t] of trajs.entries()) {
    const q = synth.questions[i];
    assert.equal(t.id, q.id);
    const acts = actions(t);
    for (const a of acts) assert.doesNotMatch(a, /^invalid/, `${q.id}: ${a}`);
    // search + open per page read; an entity answer's own page is not read.
    const pages = q.kind === 'entity' ? q.chain.length - 1 : q.chain.length;
    assert.equal(acts.length, 2 * pages + 1, q.question);
    const answers = t.messages.filter((m) => m.role === 'assistant').length;
    const transcript: Transcript = { messages: t.messages, toolCalls: answers - 1, endReason: 'answer', answer: q.answer, policyTokens: 0, truncated: false };
    const ctx = await env.rewardContext(searchTaskOf(q), transcript);
    assert.equal(ctx.correct, true, q.question);
    assert.equal(ctx.formatOk, true, q.question);
    if (q.entities.length > 0) assert.equal(ctx.entityRate, 1, `${q.question}: ${ctx.reasoning}`);
    assert.equal(t.reasoning, ctx.reasoning);
    assert.equal(t.foundBySearch, 1, q.question);
  }
});

test('an environment that allows too few tool calls is a clear error', async () => {
  const tight = new SearchEnvironment(corpus, { maxToolCalls: 1, maxTurns: 2 });
  await assert.rejects(
    searchTrajectory(byQuestion('What is the country of the artist of the album "Harbor Lights"?'), tight),
    /ended early|maxTurns/,
  );
});
