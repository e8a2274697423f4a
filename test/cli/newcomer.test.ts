// Issue #50's newcomer path, through the real CLI: numbers worded as numbers, a next step after each data-writing
// command, a warning when RL never saw a correct answer, a run folder as --policy, a hint towards --db-root, and
// EX tables without empty rows.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { agro, assertOneLine, DEV, MUSIC, tempDir } from '../adversarial/support.ts';
import { saveTinyCheckpoint } from '../support/tiny-checkpoint.ts';
import { agroBatch } from '../support/cli-batch.ts';

const tmp = tempDir();
after(() => tmp.cleanup());
const ck = join(tmp.dir, 'ck');

before(async () => {
  // And a run folder as the trainers leave it: checkpoints/step-N with their trainer state.
  await saveTinyCheckpoint(ck, ['SELECT name FROM artists', 'music store albums'], { maxPositions: 2048, also: [{ dir: join(tmp.dir, 'run', 'checkpoints', 'step-3'), trainerState: { step: 3 } }] });
});

test('a numeric flag given a word is one line in the words of every numeric flag, not a validator\'s', () => {
  const cases: [string[], RegExp][] = [
    [['synth', '--db', MUSIC, '--out', join(tmp.dir, 's'), '--n', 'abc'], /^agro: synth: --n must be an integer from 1 to 1000000, got "abc"\n$/],
    [['synth', '--db', MUSIC, '--out', join(tmp.dir, 's'), '--people', '2'], /^agro: synth: --people must be a number from 0 to 1, got "2"\n$/],
    [['synth', '--db', MUSIC, '--out', join(tmp.dir, 's'), '--timeout', '0'], /^agro: synth: --timeout must be an integer > 0 and <= \d+, got "0"\n$/],
    [['eval', '--data', DEV, '--gold', '--workers', 'abc'], /^agro: eval: --workers must be an integer from 1 to 64, got "abc"\n$/],
    [['synth-search', '--db', MUSIC, '--out', join(tmp.dir, 'ss'), '--n', '1.5'], /^agro: synth-search: --n must be an integer from 1 to \d+, got "1.5"\n$/],
  ];
  const runs = agroBatch(cases.map(([args]) => args));
  for (const [i, [, re]] of cases.entries()) {
    const r = runs[i];
    assertOneLine(r, 2, re);
    assert.doesNotMatch(r.stderr, /Invalid input|expected number|NaN/);
  }
});

test('eval and predict without --db-root, where the databases are not, say to pass --db-root', () => {
  const cwd = join(tmp.dir, 'elsewhere');
  mkdirSync(cwd, { recursive: true });
  writeFileSync(join(cwd, 'questions.json'), readFileSync(DEV));
  for (const args of [['eval', '--data', 'questions.json', '--gold'], ['predict', '--data', 'questions.json', '--out', 'p']]) {
    assertOneLine(agro(args, { cwd }), 3, /not found: data\/databases \(without --db-root .*pass --db-root <folder holding <db_id>\/<db_id>\.sqlite>\)/);
  }
  // Given, the flag is the user's own: no hint.
  const given = agro(['eval', '--data', 'questions.json', '--gold', '--db-root', 'nowhere'], { cwd });
  assertOneLine(given, 3, /^agro: database root not found: nowhere\n$/);
});

test('the EX table has no row for a difficulty without questions', () => {
  const simple = join(tmp.dir, 'simple.json');
  writeFileSync(simple, JSON.stringify((JSON.parse(readFileSync(DEV, 'utf8')) as { difficulty: string }[]).filter((q) => q.difficulty === 'simple')));
  const r = agro(['eval', '--data', simple, '--gold']);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^simple +\d+/m);
  assert.doesNotMatch(r.stdout, /moderate|challenging/);
});

test('ask --policy takes a run folder (its newest checkpoint), as train --init does', { timeout: 120_000 }, () => {
  const r = agro(['ask', '--policy', join(tmp.dir, 'run'), '--db', MUSIC, '--max-turns', '1', '--max-turn-tokens', '4', 'How many artists are there?']);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /turn 1/);
  assertOneLine(agro(['ask', '--policy', tmp.dir, '--db', MUSIC, 'How many?']), 4, /is not a checkpoint: it has no config\.json \(expected .*a run folder with checkpoints\/step-N/);
});

test('synth, sft and train print the next command; train warns when no step saw a correct answer', { timeout: 300_000 }, () => {
  const data = join(tmp.dir, 'runs', 'music-data');
  const s = agro(['synth', '--db', MUSIC, '--out', data, '--n', '12', '--variants', '0']);
  assert.equal(s.status, 0, s.stderr);
  assert.ok(s.stdout.includes(`next: agro sft --data ${data} --init base --out ${data}-sft\nsee it: agro dashboard ${join(tmp.dir, 'runs')}\n`), s.stdout);
  // sft from a run folder (its newest checkpoint), as train --init and ask --policy take it.
  const sftOut = join(tmp.dir, 'runs', 'music-sft');
  const f = agro(['sft', '--data', data, '--init', join(tmp.dir, 'run'), '--out', sftOut, '--steps', '1', '--backend', 'wasm']);
  assert.equal(f.status, 0, f.stderr);
  assert.ok(f.stdout.includes(`next: agro train --data ${data} --init ${sftOut} --out ${sftOut}-grpo`), f.stdout);
  const out = join(tmp.dir, 'runs', 'music-grpo');
  const t = agro(['train', '--data', data, '--init', ck, '--out', out, '--steps', '1', '--group-size', '2', '--prompts', '1', '--schema-chars', '300']);
  assert.equal(t.status, 0, t.stderr);
  assert.match(t.stdout, new RegExp(`next: agro ask --policy ${out} --db \\S+music_store\\.sqlite "<your question>"`));
  // A tiny untrained model answers nothing right: the run says so instead of ending as if it had learned.
  assert.match(t.stderr, /agro: warning: accuracy was 0\.00 on every step/);
});
