import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, existsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { saveTinyCheckpoint } from '../support/tiny-checkpoint.ts';

const BIN = fileURLToPath(new URL('../../bin/agro.js', import.meta.url));
const SCHOOL = fileURLToPath(new URL('../../data/databases/school/school.sqlite', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'agro-train-cli-'));
const ck = join(dir, 'init');

function agro(...args: string[]) {
  return spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8' });
}

before(async () => {
  await saveTinyCheckpoint(ck, ['SELECT name FROM students', 'Which course? <search>x</search>', 'school music'], { maxPositions: 2048 });
});

test('agro train --task sql runs GRPO steps from a checkpoint and writes metrics and a checkpoint', { timeout: 300_000 }, () => {
  const out = join(dir, 'sql-run');
  const r = agro('train', '--data', 'data/dev.json', '--init', ck, '--out', out, '--algo', 'dr_grpo', '--steps', '2', '--group-size', '2', '--prompts', '1', '--schema-chars', '300', '--json');
  assert.equal(r.status, 0, r.stderr);
  const summary = JSON.parse(r.stdout) as { steps: number; checkpoint: string };
  assert.equal(summary.steps, 2);
  assert.ok(existsSync(join(summary.checkpoint, 'optimizer.safetensors')));
  const lines = readFileSync(join(out, 'metrics.jsonl'), 'utf8').trim().split('\n');
  assert.equal(lines.length, 2);
  // A second run into the same folder without --resume is refused, naming the way out.
  const again = agro('train', '--data', 'data/dev.json', '--init', ck, '--out', out, '--steps', '2');
  assert.equal(again.status, 2);
  assert.match(again.stderr, /^agro: .*already has checkpoints.*--resume/);
});

test('agro train --task search trains the search agent with E-GRPO on synth-search output', { timeout: 300_000 }, () => {
  const data = join(dir, 'search-data');
  const s = agro('synth-search', '--db', SCHOOL, '--out', data, '--n', '30', '--seed', '1', '--json');
  assert.equal(s.status, 0, s.stderr);
  const out = join(dir, 'search-run');
  const r = agro('train', '--task', 'search', '--data', data, '--init', ck, '--out', out, '--algo', 'egrpo', '--steps', '2', '--group-size', '2', '--prompts', '2', '--json');
  assert.equal(r.status, 0, r.stderr);
  const summary = JSON.parse(r.stdout) as { steps: number; eval: { n: number; accuracy: number } | null };
  assert.equal(summary.steps, 2);
  assert.ok(summary.eval && summary.eval.n > 0, 'evaluated on the held-out split');
  const rec = JSON.parse(readFileSync(join(out, 'metrics.jsonl'), 'utf8').trim().split('\n')[0]) as { rewards: Record<string, number> };
  assert.ok('entity_match' in rec.rewards || 'exact_match' in rec.rewards, `reward components: ${Object.keys(rec.rewards)}`);
});

test('agro train --algo reinforce_pp_kl loads --init as the KL reference and logs the KL-in-reward hook', { timeout: 300_000 }, () => {
  const out = join(dir, 'kl-run');
  const r = agro('train', '--data', 'data/dev.json', '--init', ck, '--out', out, '--algo', 'reinforce_pp_kl', '--steps', '1', '--group-size', '2', '--prompts', '1', '--schema-chars', '300', '--json');
  assert.equal(r.status, 0, r.stderr);
  const rec = JSON.parse(readFileSync(join(out, 'metrics.jsonl'), 'utf8').trim()) as { hooks?: Record<string, number> };
  assert.equal(rec.hooks?.kl_reward_beta, 0.001);
  assert.equal(rec.hooks?.kl_reward_kl, 0, 'the first step\'s policy is the reference');
});

test('agro train --anchor mixes an SFT loss into every step, records it, and a resume keeps it or refuses another', { timeout: 300_000 }, () => {
  // Anchor rows as `agro sft` reads them: a BIRD-style row (rendered with the agent's prompt) and ready messages.
  const anchor = join(dir, 'anchor.jsonl');
  writeFileSync(anchor, [
    JSON.stringify({ db_id: 'school', question: 'How many students are there?', SQL: 'SELECT count(*) FROM students' }),
    JSON.stringify({ messages: [{ role: 'system', content: 'Answer with SQL.' }, { role: 'user', content: 'List the students.' }, { role: 'assistant', content: '<answer>SELECT name FROM students</answer>' }] }),
  ].join('\n') + '\n');
  const out = join(dir, 'anchor-run');
  const base = ['train', '--data', 'data/dev.json', '--init', ck, '--out', out, '--algo', 'dr_grpo', '--group-size', '2', '--prompts', '1', '--schema-chars', '300', '--json'];
  const r = agro(...base, '--steps', '2', '--anchor', anchor, '--anchor-weight', '2', '--anchor-batch', '1');
  assert.equal(r.status, 0, r.stderr);
  const steps = () => readFileSync(join(out, 'metrics.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { anchor_loss?: number });
  assert.equal(steps().length, 2);
  for (const m of steps()) assert.ok(Number.isFinite(m.anchor_loss) && m.anchor_loss! > 0, `anchor_loss ${m.anchor_loss}`);
  const cfg = JSON.parse(readFileSync(join(out, 'train_config.json'), 'utf8')) as { anchor?: unknown; init?: string };
  assert.deepEqual(cfg.anchor, { coef: 2, batch: 1, samples: 2, hash: `sha256:${createHash('sha256').update(readFileSync(anchor)).digest('hex')}` });
  assert.equal(cfg.init, resolve(ck), 'the starting policy (the KL reference) is recorded');
  // Resumed with the file alone: the run's weight and batch carry over.
  const resumed = agro(...base, '--steps', '3', '--resume', '--allow-changes', '--anchor', anchor);
  assert.equal(resumed.status, 0, resumed.stderr);
  assert.equal(steps().length, 3);
  assert.ok(steps()[2].anchor_loss! > 0);
  // Without the anchor, or with another weight, a resume is another objective: refused, naming it.
  const without = agro(...base, '--steps', '3', '--resume');
  assert.equal(without.status, 2);
  assert.match(without.stderr, /^agro: resume: the run was trained with other settings: anchor\.coef 2 → \(none\)/);
  const heavier = agro(...base, '--steps', '3', '--resume', '--anchor', anchor, '--anchor-weight', '5');
  assert.equal(heavier.status, 2);
  assert.match(heavier.stderr, /anchor\.coef 2 → 5/);
  // Another anchor file of as many samples, or another starting policy, is another objective too (issue #47).
  const other = join(dir, 'anchor-other.jsonl');
  writeFileSync(other, readFileSync(anchor, 'utf8').replace('How many students are there?', 'Count the students.'));
  const swapped = agro(...base, '--steps', '3', '--resume', '--anchor', other);
  assert.equal(swapped.status, 2, swapped.stderr);
  assert.match(swapped.stderr, /^agro: resume: the run was trained with other settings: anchor\.hash "sha256:\w+" → "sha256:\w+" \(.*--allow-changes/);
  assert.equal(swapped.stderr.trim().split('\n').length, 1, swapped.stderr);
  const ck2 = join(dir, 'init-2');
  cpSync(ck, ck2, { recursive: true });
  const reinit = agro(...base.map((a) => (a === ck ? ck2 : a)), '--steps', '3', '--resume', '--anchor', anchor);
  assert.equal(reinit.status, 2, reinit.stderr);
  assert.match(reinit.stderr, /^agro: resume: the run was trained with other settings: init ".*init" → ".*init-2"/);
  // Left out on resume, --init keeps the run's (the KL reference included).
  const bare = agro(...base.filter((a, i) => a !== ck && base[i + 1] !== ck), '--steps', '3', '--resume', '--anchor', anchor);
  assert.equal(bare.status, 0, bare.stderr);
  // Anchor settings without an anchor are a usage error.
  const stray = agro(...base.map((a) => (a === out ? join(dir, 'stray') : a)), '--steps', '1', '--anchor-weight', '2');
  assert.equal(stray.status, 2);
  assert.match(stray.stderr, /--anchor-weight and --anchor-batch apply to --anchor only/);
});

test('agro train refuses bad input with one line', () => {
  const r = agro('train', '--data', 'nope.json', '--init', ck, '--out', join(dir, 'x'));
  assert.equal(r.status, 3);
  assert.equal(r.stderr.trim().split('\n').length, 1);
  const t = agro('train', '--task', 'chess', '--data', 'data/dev.json', '--init', ck, '--out', join(dir, 'y'));
  assert.equal(t.status, 2);
  assert.match(t.stderr, /--task must be sql or search/);
});
