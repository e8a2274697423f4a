// Issue #35: a resumed run cleans what a killed checkpoint write left, and refuses settings other than
// the run's unless told (--allow-changes, recorded). Real CLI runs of sft and train on a tiny model.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { agro, assertOneLine, DB_ROOT, DEV, tempDir } from '../adversarial/support.ts';
import { saveTinyCheckpoint } from '../support/tiny-checkpoint.ts';

const tmp = tempDir();
after(() => tmp.cleanup());
const ck = join(tmp.dir, 'ck');
const rows = join(tmp.dir, 'rows.jsonl');
/** A pid above Linux's pid_max: the process that wrote these temp folders is gone. */
const DEAD = 99_999_999;

before(async () => {
  await saveTinyCheckpoint(ck, ['SELECT name FROM students', 'school music'], { maxPositions: 2048 });
  const lines = Array.from({ length: 8 }, (_, i) => JSON.stringify({ messages: [{ role: 'user', content: `How many rows in t${i}?` }, { role: 'assistant', content: `SELECT count(*) FROM t${i}` }] }));
  writeFileSync(rows, lines.join('\n') + '\n');
});

const sft = (out: string, ...extra: string[]) => agro(['sft', '--data', rows, '--out', out, '--preset', 'tiny', '--vocab-size', '300', '--backend', 'wasm', '--json', ...extra]);

test('sft: stale checkpoint temp folders are removed on resume; --resume with another --lr is refused with what changed; --allow-changes records it', { timeout: 120_000 }, () => {
  const out = join(tmp.dir, 'sft');
  const first = sft(out, '--steps', '2', '--lr', '0.001');
  assert.equal(first.status, 0, first.stderr);
  const cks = join(out, 'checkpoints');
  // What a SIGKILL during saveCheckpoint leaves: a half-written temp folder, and an old copy beside a whole checkpoint.
  mkdirSync(join(cks, `.step-3.tmp-${DEAD}-1-2`));
  writeFileSync(join(cks, `.step-3.tmp-${DEAD}-1-2`, 'model.safetensors'), 'half');
  cpSync(join(cks, 'step-2'), join(cks, `.step-2.old-${DEAD}-1-2`), { recursive: true });
  const changed = sft(out, '--steps', '2', '--lr', '0.01', '--resume');
  assertOneLine(changed, 2, /^agro: resume: the run was trained with other settings: lr 0\.001 → 0\.01 \(.*--allow-changes/);
  assert.deepEqual(readdirSync(cks), ['step-2']);
  assert.equal(JSON.parse(readFileSync(join(out, 'sft_config.json'), 'utf8')).lr, 0.001, 'the refused resume rewrote sft_config.json');
  const allowed = sft(out, '--steps', '3', '--lr', '0.01', '--resume', '--allow-changes');
  assert.equal(allowed.status, 0, allowed.stderr);
  const cfg = JSON.parse(readFileSync(join(out, 'sft_config.json'), 'utf8')) as { lr: number; resumeChanges: unknown };
  assert.equal(cfg.lr, 0.01);
  assert.deepEqual(cfg.resumeChanges, [{ step: 2, changes: ['steps 2 → 3', 'lr 0.001 → 0.01'] }]);
  // The same settings resume as before, without --allow-changes; flags left out keep the run's values.
  assert.equal(sft(out, '--steps', '3', '--lr', '0.01', '--resume').status, 0);
  const bare = sft(out, '--resume');
  assert.equal(bare.status, 0, bare.stderr);
  assert.equal((JSON.parse(bare.stdout) as { steps: number }).steps, 3);
  assert.equal(JSON.parse(readFileSync(join(out, 'sft_config.json'), 'utf8')).lr, 0.01);
});

test('sft: an .old copy whose checkpoint is missing (the swap was cut between its renames) is put back', { timeout: 120_000 }, () => {
  const out = join(tmp.dir, 'sft-swap');
  assert.equal(sft(out, '--steps', '2').status, 0);
  const cks = join(out, 'checkpoints');
  // Cut after `rename(step-2, .old)`, before `rename(.tmp, step-2)`: the old copy is the only whole one.
  renameSync(join(cks, 'step-2'), join(cks, `.step-2.old-${DEAD}-1-2`));
  mkdirSync(join(cks, `.step-2.tmp-${DEAD}-1-2`));
  writeFileSync(join(cks, `.step-2.tmp-${DEAD}-1-2`, 'model.safetensors'), 'half');
  const r = sft(out, '--steps', '2', '--resume');
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(readdirSync(cks), ['step-2']);
  assert.ok(existsSync(join(cks, 'step-2', 'trainer_state.json')));
  assert.equal((JSON.parse(r.stdout) as { steps: number }).steps, 2);
});

const train = (out: string, ...extra: string[]) => agro(['train', '--data', DEV, '--init', ck, '--out', out, '--algo', 'dr_grpo', '--group-size', '2', '--prompts', '1', '--schema-chars', '300', '--json', ...extra]);

test('train: stale temp folders removed; --resume with another --lr refused (exit 2, what changed); --allow-changes records it', { timeout: 300_000 }, () => {
  const out = join(tmp.dir, 'train');
  const first = train(out, '--steps', '1');
  assert.equal(first.status, 0, first.stderr);
  const cks = join(out, 'checkpoints');
  mkdirSync(join(cks, `.step-2.tmp-${DEAD}-1-2`));
  const changed = train(out, '--steps', '1', '--lr', '0.01', '--resume');
  assertOneLine(changed, 2, /the run was trained with other settings: train\.lr 0\.0002 → 0\.01 /);
  assert.deepEqual(readdirSync(cks), ['step-1']);
  // Left out on resume, --algo and --steps keep the run's values: no change to refuse.
  const bare = agro(['train', '--data', DEV, '--init', ck, '--out', out, '--schema-chars', '300', '--resume', '--json']);
  assert.equal(bare.status, 0, bare.stderr);
  const allowed = train(out, '--steps', '2', '--lr', '0.01', '--resume', '--allow-changes');
  assert.equal(allowed.status, 0, allowed.stderr);
  const cfg = JSON.parse(readFileSync(join(out, 'train_config.json'), 'utf8')) as { train: { lr: number }; resumeChanges: unknown };
  assert.equal(cfg.train.lr, 0.01);
  assert.deepEqual(cfg.resumeChanges, [{ step: 1, changes: ['train.steps 1 → 2', 'train.lr 0.0002 → 0.01'] }]);
});

test('pretrain: a rerun after a checkpoint swap cut by a kill resumes from the whole checkpoint, put back, and leaves no temp folder', { timeout: 300_000 }, () => {
  const out = join(tmp.dir, 'pretrain');
  const args = ['pretrain', '--dbs', DB_ROOT, '--out', out, '--pairs', '10', '--held-out-dbs', '1', '--preset', 'tiny', '--vocab-size', '1000', '--steps', '2', '--batch-size', '2', '--checkpoint-every', '1', '--eval-every', '1', '--schema-chars', '200', '--backend', 'wasm'];
  const first = agro(args, { timeoutMs: 240_000 });
  assert.equal(first.status, 0, first.stderr);
  const cks = join(out, 'sft', 'checkpoints');
  const weights = readFileSync(join(cks, 'step-2', 'model.safetensors'));
  // Cut after `rename(step-2, .old)`, before `rename(.tmp, step-2)`: the old copy is the only whole step-2.
  renameSync(join(cks, 'step-2'), join(cks, `.step-2.old-${DEAD}-1-2`));
  mkdirSync(join(cks, `.step-2.tmp-${DEAD}-1-2`));
  writeFileSync(join(cks, `.step-2.tmp-${DEAD}-1-2`, 'model.safetensors'), 'half');
  const again = agro(args, { timeoutMs: 240_000 });
  assert.equal(again.status, 0, again.stderr);
  assert.match(again.stderr, /resuming from .*step-2/);
  assert.deepEqual(readdirSync(cks).sort(), ['step-1', 'step-2']);
  assert.ok(readFileSync(join(cks, 'step-2', 'model.safetensors')).equals(weights), 'step-2 is not the whole checkpoint of the first run');
});
