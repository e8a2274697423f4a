/**
 * Scale-out from Python (integrations/python/test_scaleout.py): two real `agro serve` processes, one killed
 * mid-run; and agro's multi-turn episode played through the server's sessions, its token ids and loss mask
 * compared token by token with `agro train`'s layout of the same turns (src/rl/rollout.ts replay).
 * The second needs a Python with `transformers` (the venv of npm run e2e:trl, or AGRO_E2E_VENV): without
 * one it is skipped with one line.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { runPython } from '../support/python.ts';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { makeEnvFixture } from '../support/env-server.ts';
import { serveEnv } from '../../src/server/env.ts';
import { catalogFromDbRoot } from '../../src/data/catalog.ts';
import { SqlEnvironment, type SqlTask } from '../../src/agent/sql-env.ts';
import { SqlPool } from '../../src/sql/pool.ts';
import { Tokenizer } from '../../src/model/tokenizer.ts';
import { AGENT_SPECIAL_TOKENS } from '../../src/agent/protocol.ts';
import { CHAT_TOKENS } from '../../src/model/chat.ts';
import { replay } from '../../src/rl/rollout.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = join(ROOT, 'bin/agro.js');
const PY_TEST = join(ROOT, 'integrations/python/test_scaleout.py');
const fx = makeEnvFixture();
const children: ChildProcess[] = [];
after(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  rmSync(fx.dir, { recursive: true, force: true });
});

/** A real `agro serve` process over the fixture; resolves with its URL once it listens. */
function agroServe(): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [BIN, 'serve', '--db-root', fx.dbRoot, '--variants', fx.variants, '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  return new Promise((res, rej) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on (http:\/\/\S+?);/.exec(out);
      if (m) res({ url: m[1], child });
    });
    child.once('exit', (c) => rej(new Error(`agro serve exited ${c}: ${out}`)));
  });
}

const python = (py: string, args: string[], env: Record<string, string>) => runPython(py, [PY_TEST, ...args], { TMPDIR: fx.dir, ...env });

test('two agro serve processes: reward batches spread over both, sessions stay home, one killed mid-run loses no reward and crosses no session', async () => {
  const [a, b] = await Promise.all([agroServe(), agroServe()]);
  const r = await python('/usr/bin/python3', ['ClientScaleOut'], { AGRO_URL: `${a.url},${b.url}`, AGRO_KILL_PID: String(b.child.pid) });
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, /Ran 3 tests/);
  assert.ok(b.child.signalCode === 'SIGKILL' || b.child.exitCode !== null, 'the second server was killed by the test');
  a.child.kill('SIGTERM');
});

const venvPython = resolve(process.env.AGRO_E2E_VENV ?? join(ROOT, 'runs/e2e-trl/venv'), 'bin/python');
const hasTransformers = existsSync(venvPython) && spawnSync(venvPython, ['-c', 'import transformers'], { encoding: 'utf8' }).status === 0;
if (!hasTransformers) console.log(`# SKIP multi-turn mask test: no Python with transformers at ${venvPython} (npm run e2e:trl creates it, or set AGRO_E2E_VENV)`);

test('multi-turn episode through the sessions: ids and loss mask equal agro train\'s, token by token; 0 observation tokens carry loss', { skip: !hasTransformers && 'no Python with transformers' }, async () => {
  const corpus = ['SELECT name, age FROM singer ORDER BY age', 'SELECT COUNT(*) FROM singer WHERE age > 40', 'Singers over 40? name age count rows', 'look at the table then answer'];
  const tk = Tokenizer.train(Array.from({ length: 20 }, () => corpus).flat(), { vocabSize: 420, specialTokens: AGENT_SPECIAL_TOKENS });
  const tkPath = join(fx.dir, 'tokenizer.json');
  tk.save(tkPath);
  const task: SqlTask = { id: 'q1', dbId: 'concert', dbPath: join(fx.dbRoot, 'concert/concert.sqlite'), question: 'Singers over 40?', evidence: 'over 40 means age > 40', goldSql: 'SELECT name FROM singer WHERE age > 40', variantPaths: [join(fx.variants, 'concert/variant-1.sqlite')] };
  const turns = [
    '<think>look at the table</think><sql>SELECT name, age FROM singer ORDER BY age</sql>',
    '<think>count them</think><sql>SELECT COUNT(*) FROM singer WHERE age > 40</sql>',
    '<think>then answer</think><answer>SELECT name FROM singer WHERE age > 40</answer>',
  ];
  const pool = new SqlPool({ size: 1 });
  const env = new SqlEnvironment(pool);
  const srv = await serveEnv({ catalog: catalogFromDbRoot(fx.dbRoot, fx.variants) });
  // Two more real servers for the episodes replayed when one of them is killed mid-episode.
  const [a, b] = await Promise.all([agroServe(), agroServe()]);
  try {
    const casePath = join(fx.dir, 'case.json');
    const outPath = join(fx.dir, 'out.json');
    writeFileSync(casePath, JSON.stringify({ db_id: task.dbId, question: task.question, evidence: task.evidence, gold_sql: task.goldSql, prompt: env.openingFor(task), turns }));
    const r = await python(venvPython, ['MultiTurn'], { AGRO_URL: srv.url, AGRO_TOKENIZER: tkPath, AGRO_CASE: casePath, AGRO_OUT: outPath, AGRO_URL_PAIR: `${a.url},${b.url}`, AGRO_KILL_PID_PAIR: String(b.child.pid) });
    assert.equal(r.code, 0, r.out);
    const out = JSON.parse(readFileSync(outPath, 'utf8')) as Record<string, { prompt_ids: number[]; completion_ids: number[]; env_mask: number[]; tool_calls: number }> & { reward: number };
    const agro = await replay(env, task, turns, tk, 0);
    const obsOpen = tk.tokenId('<observation>');
    const toolId = tk.tokenId(CHAT_TOKENS.tool);
    for (const mode of ['plain', 'stop_at_action', 'verl']) {
      const py = out[mode];
      assert.deepEqual(py.prompt_ids, agro.ids.slice(0, agro.promptLength), `${mode}: prompt ids`);
      assert.deepEqual(py.completion_ids, agro.ids.slice(agro.promptLength), `${mode}: completion ids`);
      assert.deepEqual(py.env_mask, agro.mask.slice(agro.promptLength), `${mode}: loss mask`);
      assert.equal(py.tool_calls, 2);
      // The observations are in the sequence, each span from <|tool|> to the next turn, and none carries loss.
      const obsAt = py.completion_ids.flatMap((id, i) => (id === obsOpen ? [i] : []));
      assert.equal(obsAt.length, 2);
      for (const i of obsAt) assert.equal(py.env_mask[i], 0);
      const toolAt = py.completion_ids.flatMap((id, i) => (id === toolId ? [i] : []));
      assert.equal(toolAt.length, 2);
      assert.equal(py.env_mask.filter((m) => m === 1).length, agro.policyTokens);
    }
    assert.equal(out.reward, 1);
    // Episodes whose server was killed after their first turn were replayed on the other one, token for token the same.
    const replayed = (out as unknown as { replayed: { episodes: number; moved: number } }).replayed;
    assert.equal(replayed.episodes, 4);
    assert.ok(replayed.moved >= 1);
  } finally {
    a.child.kill('SIGTERM');
    await srv.close();
    await pool.close();
  }
});
