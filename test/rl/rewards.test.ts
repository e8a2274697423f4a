import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgroError } from '../../src/errors.ts';
import type { ExecResult } from '../../src/sql/types.ts';
import { entityMatchRate, normalizeAnswer } from '../../src/search/match.ts';
import {
  otcOptimalCalls,
  otcToolReward,
  prepareRewards,
  scoreBatch,
  scoreEpisode,
  softOverlongPunishment,
} from '../../src/rl/rewards.ts';
import { sqlTouches } from '../../src/sql/touches.ts';
import { setF1 } from '../../src/util/sets.ts';

const rows = (...r: (number | string | null)[][]): ExecResult => ({ ok: true, columns: ['c'], rows: r, truncated: false, elapsedMs: 1 });
const fail = (error: 'syntax' | 'timeout' | 'runtime'): ExecResult => ({ ok: false, error, message: `${error} happened`, elapsedMs: 1 });
/** A real (if simple) comparison: rows as a set of JSON strings, BIRD-style. */
const setMatch = (p: ExecResult, g: ExecResult): boolean => {
  if (!p.ok || !g.ok) return false;
  const key = (r: ExecResult & { ok: true }) => new Set(r.rows.map((x) => JSON.stringify(x)));
  const a = key(p);
  const b = key(g);
  return a.size === b.size && [...a].every((x) => b.has(x));
};
const isInvalid = (re: RegExp) => (e: unknown) => e instanceof AgroError && e.kind === 'invalid_input' && re.test(e.message);

test('execution: 1 on a match, 0 on a mismatch, configurable penalties for errors and timeouts', () => {
  const r = prepareRewards([{ name: 'execution', weight: 1, params: { errorPenalty: -0.5, timeoutPenalty: -1 } }]);
  const deps = { match: setMatch };
  const score = (pred: ExecResult, gold: ExecResult) => scoreEpisode({ exec: { pred: [pred], gold: [gold] } }, r, deps).parts.execution;
  assert.deepEqual(score(rows([1], [2]), rows([2], [1])), { value: 1, reason: 'match' });
  assert.deepEqual(score(rows([1]), rows([2])), { value: 0, reason: 'mismatch' });
  assert.equal(score(fail('syntax'), rows([1])).value, -0.5);
  assert.match(score(fail('syntax'), rows([1])).reason, /sql error on db 0 \(syntax\)/);
  assert.equal(score(fail('timeout'), rows([1])).value, -1);
  assert.equal(score(rows([1]), fail('runtime')).value, 0);
  assert.match(score(rows([1]), fail('runtime')).reason, /gold query failed/);
  // defaults: both penalties 0
  const d = prepareRewards([{ name: 'execution', weight: 1 }]);
  assert.equal(scoreEpisode({ exec: { pred: [fail('timeout')], gold: [rows([1])] } }, d, deps).total, 0);
});

test('execution over a test suite: every database must match', () => {
  const r = prepareRewards([{ name: 'execution', weight: 1 }]);
  const deps = { match: setMatch };
  const all = scoreEpisode({ exec: { pred: [rows([1]), rows([2])], gold: [rows([1]), rows([2])] } }, r, deps).parts.execution;
  assert.deepEqual(all, { value: 1, reason: 'match on all 2 databases' });
  const one = scoreEpisode({ exec: { pred: [rows([1]), rows([3])], gold: [rows([1]), rows([2])] } }, r, deps).parts.execution;
  assert.deepEqual(one, { value: 0, reason: 'mismatch on db 1' });
  assert.throws(() => scoreEpisode({ exec: { pred: [rows([1])], gold: [rows([1]), rows([2])] } }, r, deps), isInvalid(/one pred and one gold/));
  assert.throws(() => scoreEpisode({ exec: { pred: [rows([1])], gold: [rows([1])] } }, r, {}), isInvalid(/injected match/));
});

test('format: the protocol, over one or all turns', () => {
  const r = prepareRewards([{ name: 'format', weight: 1 }]);
  const good = '<think>count them</think><sql>SELECT COUNT(*) FROM t</sql>';
  const bad = '<sql>SELECT 1</sql>';
  assert.equal(scoreEpisode({ response: good }, r).total, 1);
  const b = scoreEpisode({ response: bad }, r).parts.format;
  assert.equal(b.value, 0);
  assert.match(b.reason, /start with <think>/);
  const partial = prepareRewards([{ name: 'format', weight: 1, params: { partial: true } }]);
  assert.equal(scoreEpisode({ turns: [good, bad, good, good] }, partial).total, 0.75);
  const needAnswer = prepareRewards([{ name: 'format', weight: 1, params: { requireAnswer: true } }]);
  assert.equal(scoreEpisode({ turns: [good] }, needAnswer).total, 0);
  assert.equal(scoreEpisode({ turns: [good, '<think></think><answer>SELECT 1</answer>'] }, needAnswer).total, 1);
});

test('sql_overlap: F1 of tables, columns and values', () => {
  const gold = sqlTouches("SELECT T1.name FROM singer AS T1 JOIN concert c ON T1.id = c.singer_id WHERE T1.age > 20 AND c.city = 'Paris'");
  assert.deepEqual([...gold.tables].sort(), ['concert', 'singer']);
  assert.deepEqual([...gold.columns].sort(), ['age', 'city', 'id', 'name', 'singer_id']);
  assert.deepEqual([...gold.values].sort(), ['20', 'paris']);
  // pred: tables {singer} vs {singer, concert} → P 1, R ½ → F1 2/3; columns {name, age} vs 5 → P 1, R 2/5 → F1 4/7;
  // values {30} vs {20, paris} → 0; mean = (2/3 + 4/7 + 0)/3 = 26/63
  const r = prepareRewards([{ name: 'sql_overlap', weight: 1 }]);
  const v = scoreEpisode(
    { predSql: 'SELECT name FROM singer WHERE age > 30', goldSql: "SELECT T1.name FROM singer AS T1 JOIN concert c ON T1.id = c.singer_id WHERE T1.age > 20 AND c.city = 'Paris'" },
    r,
  ).total;
  assert.ok(Math.abs(v - 26 / 63) < 1e-12, String(v));
  assert.equal(setF1(new Set(), new Set()), null);
  // numbers compare by value, strings with doubled quotes unescape
  assert.deepEqual([...sqlTouches("SELECT 1.0, 'O''Neil' FROM t").values].sort(), ['1', "o'neil"]);
  // words in comments are not columns (the lexer drops comments for every caller)
  assert.deepEqual([...sqlTouches('SELECT name -- bogus words here\nFROM t /* more */').columns], ['name']);
});

test('entity match rate and exact match use Search-R1 normalization', () => {
  // Search-R1 deletes punctuation (Python's string.punctuation), it does not turn it into spaces.
  assert.equal(normalizeAnswer('  The Eiffel-Tower, in PARIS! '), 'eiffeltower in paris');
  // 'Paris' found, 'Berlin' not → 1/2; 'Par' must not match inside 'Paris'
  assert.equal(entityMatchRate('The Eiffel Tower is in Paris, France', [{ name: 'Paris' }, { name: 'Berlin' }]).rate, 0.5);
  assert.equal(entityMatchRate('Paris', [{ name: 'Par' }]).rate, 0);
  const r = prepareRewards([{ name: 'entity_match', weight: 1 }, { name: 'exact_match', weight: 2 }]);
  const s = scoreEpisode({ answer: 'The Paris', goldEntities: ['paris', 'france'], goldAnswers: ['Paris'] }, r);
  assert.equal(s.parts.entity_match.value, 0.5);
  // With reasoning given, E-GRPO counts the entities there, not in the answer.
  const withReasoning = scoreEpisode({ answer: 'Paris', reasoning: 'It is in France, capital Paris', goldEntities: ['paris', { name: 'France', aliases: ['FR'] }], goldAnswers: ['Paris'] }, r);
  assert.equal(withReasoning.parts.entity_match.value, 1);
  assert.equal(s.parts.exact_match.value, 1);
  assert.equal(s.total, 0.5 + 2);
});

test('OTC tool reward: peaks at the group optimum, cos branch when the optimum is 0', () => {
  assert.equal(otcToolReward(2, 2), 1); // f = 2·2·2/4 = 2 → sin(π/2)
  assert.equal(otcToolReward(0, 0), 1);
  assert.ok(Math.abs(otcToolReward(1, 0) - 0.5) < 1e-12); // cos(π/(2+1)) = cos(π/3)
  assert.ok(Math.abs(otcToolReward(4, 2) - Math.sqrt(3) / 2) < 1e-12); // f = 16/6 = 8/3 → sin(2π/3)
  assert.ok(Math.abs(otcToolReward(1, 2) - Math.sqrt(3) / 2) < 1e-12); // f = 4/3 → sin(π/3)
  assert.ok(Math.abs(otcToolReward(0, 2)) < 1e-12); // f = 0 → sin 0
  assert.equal(otcOptimalCalls([{ toolCalls: 3, correct: true }, { toolCalls: 1, correct: false }, { toolCalls: 2, correct: true }]), 2);
  assert.equal(otcOptimalCalls([{ toolCalls: 1, correct: false }]), null);
  const r = prepareRewards([{ name: 'tool_efficiency', weight: 1 }]);
  assert.equal(scoreEpisode({ toolCalls: 2, optimalToolCalls: 2, correct: false }, r).total, 0); // gated on correctness
  assert.equal(scoreEpisode({ toolCalls: 2, optimalToolCalls: 2, correct: true }, r).total, 1);
});

test('soft overlong punishment (TRL): L_max 100, L_cache 20', () => {
  assert.equal(softOverlongPunishment(80, 100, 20), 0);
  assert.equal(softOverlongPunishment(90, 100, 20), -0.5); // (80 − 90)/20
  assert.equal(softOverlongPunishment(100, 100, 20), -1); // (80 − 100)/20
  assert.equal(softOverlongPunishment(101, 100, 20), -1);
  const r = prepareRewards([{ name: 'overlong', weight: 1, params: { maxLen: 100, cache: 20 } }]);
  assert.equal(scoreEpisode({ completionTokens: 90 }, r).total, -0.5);
  assert.throws(() => prepareRewards([{ name: 'overlong', weight: 1, params: { maxLen: 10, cache: 20 } }]), isInvalid(/cache must be ≤ maxLen/));
});

test('combiner: weighted sum, every component kept (GDPO rows), clear errors', () => {
  const specs = [
    { name: 'format', weight: 0.5 },
    { name: 'overlong', weight: 1, params: { maxLen: 100, cache: 20 } },
  ];
  const good = '<think>x</think><answer>SELECT 1</answer>';
  const b = scoreBatch([{ response: good, completionTokens: 90 }, { response: 'nope', completionTokens: 10 }], specs);
  assert.deepEqual(b.labels, ['format', 'overlong']);
  assert.deepEqual(b.weights, [0.5, 1]);
  assert.deepEqual(b.components, [[1, -0.5], [0, 0]]);
  assert.deepEqual(b.totals, [0.5 * 1 + -0.5, 0]);
  assert.throws(() => prepareRewards([{ name: 'bleu', weight: 1 }]), isInvalid(/unknown reward "bleu" \(known: execution, format/));
  assert.throws(() => prepareRewards([{ name: 'format', weight: 1, params: { partail: true } }]), isInvalid(/reward "format" params/));
  assert.throws(() => prepareRewards([{ name: 'format', weight: 1 }, { name: 'format', weight: 2 }]), isInvalid(/appears twice/));
  assert.throws(() => prepareRewards([{ name: 'format', weight: Number.NaN }]), isInvalid(/weight NaN/));
  assert.throws(() => scoreBatch([{}], [{ name: 'overlong', weight: 1 }]), isInvalid(/needs completionTokens/));
});
