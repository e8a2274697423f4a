import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { runPython } from '../support/python.ts';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { serveEnv, type RunningEnvServer } from '../../src/server/env.ts';
import { catalogFromDbRoot } from '../../src/data/catalog.ts';
import { readParquet } from '../../src/data/parquet.ts';
import { SqlEnvironment } from '../../src/agent/sql-env.ts';
import { SqlPool } from '../../src/sql/pool.ts';
import { makeEnvFixture } from '../support/env-server.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = join(ROOT, 'bin/agro.js');
const fx = makeEnvFixture();
const data = join(fx.dir, 'questions.json');
writeFileSync(
  data,
  JSON.stringify([
    { question_id: 10, db_id: 'concert', question: 'Singers over 40?', evidence: 'over 40 means age > 40', SQL: 'SELECT name FROM singer WHERE age > 40', difficulty: 'simple' },
    { question_id: 11, db_id: 'concert', question: 'How many singers?', evidence: '', SQL: 'SELECT COUNT(*) FROM singer', difficulty: 'simple' },
    { question_id: 12, db_id: 'club', question: 'Nicknames?', SQL: 'SELECT nickname FROM member', difficulty: 'moderate' },
    { question_id: 13, db_id: 'club', question: 'Members?', SQL: 'SELECT COUNT(*) FROM member', difficulty: 'simple' },
  ]),
);
let srv: RunningEnvServer;
before(async () => {
  srv = await serveEnv({ catalog: catalogFromDbRoot(fx.dbRoot, fx.variants) });
});
after(async () => {
  await srv.close();
  rmSync(fx.dir, { recursive: true, force: true });
});

function agro(...args: string[]) {
  return spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8' });
}

const bigintSafe = (_: string, v: unknown): unknown => (typeof v === 'bigint' ? Number(v) : v);

test('agro export --format verl: parquet with verl\'s columns, agro\'s prompt, the tool kwargs; read back', async () => {
  const out = join(fx.dir, 'verl');
  const r = agro('export', '--format', 'verl', '--data', data, '--db-root', fx.dbRoot, '--variants', fx.variants, '--out', out, '--val', '0.25', '--json');
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout).train, 3);
  const train = await readParquet(join(out, 'train.parquet'));
  const val = await readParquet(join(out, 'val.parquet'));
  assert.equal(train.length + val.length, 4);
  const rows = [...train, ...val];
  const pool = new SqlPool({ size: 1 });
  const env = new SqlEnvironment(pool);
  for (const row of rows) {
    const x = row.extra_info as Record<string, unknown>;
    assert.equal(row.data_source, 'agro_sql');
    assert.equal(row.ability, 'sql');
    assert.equal(row.agent_name, 'tool_agent');
    assert.deepEqual(x.tools_kwargs, { run_sql: { create_kwargs: { db_id: x.db_id } } });
    const task = { id: '', dbId: x.db_id as string, dbPath: join(fx.dbRoot, x.db_id as string, `${x.db_id}.sqlite`), question: x.question as string, evidence: x.evidence as string, goldSql: '' };
    assert.deepEqual(row.prompt, env.openingFor(task));
    assert.deepEqual((row.reward_model as { style: string }).style, 'rule');
    assert.equal((x.variant_paths as string[]).length, x.db_id === 'concert' ? 1 : 0);
  }
  await pool.close();
  assert.deepEqual(train.map((t) => Number((t.extra_info as { index: bigint }).index)), [0, 1, 2]);
  writeFileSync(join(fx.dir, 'rows.json'), JSON.stringify(rows, bigintSafe));
});

test('agro export --format trl: JSONL chat prompts and the reward columns', () => {
  const out = join(fx.dir, 'trl');
  const r = agro('export', '--format', 'trl', '--data', data, '--db-root', fx.dbRoot, '--out', out, '--val', '0');
  assert.equal(r.status, 0, r.stderr);
  const rows = readFileSync(join(out, 'train.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  assert.equal(rows.length, 4);
  assert.deepEqual(Object.keys(rows[0]).sort(), ['db_id', 'db_path', 'difficulty', 'evidence', 'gold_sql', 'id', 'prompt', 'question', 'variant_paths']);
  assert.equal(rows[0].prompt[1].content, 'Singers over 40?\nEvidence: over 40 means age > 40');
  assert.equal(rows[2].gold_sql, 'SELECT nickname FROM member');
});

test('agro export: bad input is one line with its exit code', () => {
  const noRoot = agro('export', '--format', 'trl', '--data', data, '--out', join(fx.dir, 'x'));
  assert.equal(noRoot.status, 2);
  assert.match(noRoot.stderr, /^agro: --db-root is required/);
  const badFormat = agro('export', '--format', 'rllib', '--data', data, '--out', join(fx.dir, 'x'));
  assert.equal(badFormat.status, 2);
  const unknownDb = agro('export', '--format', 'trl', '--data', data, '--db-root', join(fx.dir, 'variants'), '--out', join(fx.dir, 'x'));
  assert.equal(unknownDb.status, 3);
  assert.equal(unknownDb.stderr.split('\n').filter(Boolean).length, 1);
});

test('the Python glue (TRL reward and environment, verl reward and tool) against the server, standard library only', async () => {
  const { code, out } = await runPython('/usr/bin/python3', [join(ROOT, 'integrations/python/test_integrations.py')], { AGRO_URL: srv.url, AGRO_TEST_ROWS: join(fx.dir, 'rows.json'), TMPDIR: fx.dir });
  assert.equal(code, 0, out);
  assert.match(out, /Ran 7 tests/);
});
