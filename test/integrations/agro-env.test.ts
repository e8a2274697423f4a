/**
 * integrations/python/agro_env.py, TRL's `environment_factory` class, from Python against a real environment server:
 * the checks TRL 1.13 makes of the environment and the tokenizer, reset's question, execute_sql's observation,
 * get_reward on the database and its variant; then every episode the Python side scored is scored again here by
 * agro's own reward code (scoreItems, as agro train), and must be equal part by part.
 * Needs a Python with trl and transformers (the venv of npm run e2e:trl, or AGRO_E2E_VENV): without one it is
 * skipped with one line. It is not required under CI (the CI machine has no such venv).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { runPython } from '../support/python.ts';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { serveEnv, type RunningEnvServer } from '../../src/server/env.ts';
import { catalogFromDbRoot } from '../../src/data/catalog.ts';
import { SqlEnvironment } from '../../src/agent/sql-env.ts';
import { SqlPool } from '../../src/sql/pool.ts';
import { scoreItems, type RewardItem } from '../../src/server/env-reward.ts';
import { makeEnvFixture } from '../support/env-server.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const venvPython = resolve(process.env.AGRO_E2E_VENV ?? join(ROOT, 'runs/e2e-trl/venv'), 'bin/python');
const hasTrl = existsSync(venvPython) && spawnSync(venvPython, ['-c', 'import trl, transformers'], { encoding: 'utf8' }).status === 0;
if (!hasTrl) console.log(`# SKIP agro_env test: no Python with trl and transformers at ${venvPython} (npm run e2e:trl creates it, or set AGRO_E2E_VENV)`);

const REWARDS = [
  { name: 'execution', weight: 1 },
  { name: 'format', weight: 0.25 },
  { name: 'sql_overlap', weight: 0.25 },
];
const fx = makeEnvFixture();
let srv: RunningEnvServer | undefined;
before(async () => {
  if (hasTrl) srv = await serveEnv({ catalog: catalogFromDbRoot(fx.dbRoot, fx.variants) });
});
after(async () => {
  await srv?.close();
  rmSync(fx.dir, { recursive: true, force: true });
});

interface Episode { db_id: string; question: string; gold_sql: string; turns: string[]; tool_calls: number; observations: string[]; total: number; parts: Record<string, number> }

test('agro_env.AgroEnv under TRL\'s checks: reset, execute_sql, get_reward equal to agro\'s reward of the same turns', { skip: !hasTrl && 'no Python with trl and transformers', timeout: 180_000 }, async () => {
  const data = join(fx.dir, 'q.json');
  const { writeFileSync } = await import('node:fs');
  writeFileSync(data, JSON.stringify([
    { db_id: 'concert', question: 'Singers over 40?', evidence: 'over 40 means age > 40', SQL: 'SELECT name FROM singer WHERE age > 40' },
    { db_id: 'club', question: 'Members?', SQL: 'SELECT COUNT(*) FROM member' },
  ]));
  const exp = join(fx.dir, 'trl');
  const e = spawnSync(process.execPath, [join(ROOT, 'bin/agro.js'), 'export', '--format', 'trl', '--data', data, '--db-root', fx.dbRoot, '--out', exp, '--val', '0'], { encoding: 'utf8' });
  assert.equal(e.status, 0, e.stderr);
  const outPath = join(fx.dir, 'episodes.json');
  const { code, out } = await runPython(venvPython, [join(ROOT, 'integrations/python/test_agro_env.py')], {
    TMPDIR: fx.dir, HF_HUB_OFFLINE: '1', AGRO_URL: srv!.url, AGRO_ROWS: join(exp, 'train.jsonl'), AGRO_TOKENIZER: join(ROOT, 'models/base/tokenizer.json'), AGRO_OUT: outPath,
  });
  assert.equal(code, 0, out);
  assert.match(out, /Ran 7 tests/);

  const episodes = JSON.parse(readFileSync(outPath, 'utf8')) as Episode[];
  assert.equal(episodes.length, 2);
  const catalog = catalogFromDbRoot(fx.dbRoot, fx.variants);
  const pool = new SqlPool({ size: 1 });
  try {
    const env = new SqlEnvironment(pool);
    const tasks = episodes.map((ep, i) => {
      const db = catalog.resolve(ep.db_id);
      return { id: String(i), dbId: ep.db_id, dbPath: db.path, question: ep.question, goldSql: ep.gold_sql, variantPaths: db.variants };
    });
    const items: RewardItem[] = episodes.map((ep) => ({ db_id: ep.db_id, gold_sql: ep.gold_sql, tool_calls: ep.tool_calls, ...(ep.turns.length > 1 ? { turns: ep.turns } : { completion: ep.turns[0] }) }));
    const scored = await scoreItems(env, (_, i) => tasks[i], items, REWARDS);
    scored.results.forEach((r, i) => {
      assert.equal(episodes[i].total, r.total, `episode ${i}: get_reward ${episodes[i].total}, agro ${r.total}`);
      assert.deepEqual(episodes[i].parts, Object.fromEntries(Object.entries(r.parts).map(([k, v]) => [k, v.value])));
    });
    // The first episode looked at the data once: its observation is agro's own episode's for that turn.
    const ep = await env.start(tasks[0]);
    assert.equal((await ep.step(episodes[0].turns[0])).observation, episodes[0].observations[0]);
    assert.equal(episodes[0].parts.execution, 1);
    assert.equal(episodes[1].parts.execution, 0);
  } finally {
    await pool.close();
  }
});
