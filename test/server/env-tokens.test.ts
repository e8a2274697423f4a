/**
 * The environment API's token ids (`tokens`, `agro serve --tokenizer`): every text the environment writes comes
 * with its ids under the named tokenizer, so a trainer appends them and never re-tokenizes. Checked against agro's
 * own tokenizer always, and, when a Python with transformers is at hand (the venv of npm run e2e:trl, or
 * AGRO_E2E_VENV; skipped with one line otherwise), against transformers' tokenizer on the same text, for the
 * built-in checkpoint's tokenizer and for a byte-level BPE tokenizer.json made by Hugging Face `tokenizers`.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { serveEnv } from '../../src/server/env.ts';
import { catalogFromDbRoot } from '../../src/data/catalog.ts';
import { Tokenizer } from '../../src/model/tokenizer.ts';
import { makeEnvFixture } from '../support/env-server.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BASE_TOKENIZER = join(ROOT, 'models/base/tokenizer.json');
const venvPython = resolve(process.env.AGRO_E2E_VENV ?? join(ROOT, 'runs/e2e-trl/venv'), 'bin/python');
const hasTransformers = existsSync(venvPython) && spawnSync(venvPython, ['-c', 'import transformers, tokenizers'], { encoding: 'utf8' }).status === 0;
if (!hasTransformers) console.log(`# SKIP token ids against transformers: no Python with transformers at ${venvPython} (npm run e2e:trl creates it, or set AGRO_E2E_VENV)`);

const fx = makeEnvFixture();
after(() => rmSync(fx.dir, { recursive: true, force: true }));

/** One episode through the API with token ids: the opening's and one observation's texts and ids, and a /v1/sql observation. */
async function episode(tokenizerPath: string, name: string) {
  const srv = await serveEnv({ catalog: catalogFromDbRoot(fx.dbRoot, fx.variants), tokens: { name, tokenizer: Tokenizer.load(tokenizerPath) } });
  try {
    const post = async (path: string, body: unknown) => (await fetch(srv.url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })).json() as Promise<Record<string, unknown>>;
    const open = await post('/v1/env/sessions', { db_id: 'concert', question: 'Which singers are over 40? Ünïcode ✓', gold_sql: 'SELECT name FROM singer WHERE age > 40' });
    const step = await post(`/v1/env/sessions/${open.session_id as string}/step`, { text: '<think>look</think>\n<sql>SELECT name, age FROM singer</sql>' });
    const sql = await post('/v1/sql', { db_id: 'concert', sql: 'SELECT name FROM singer ORDER BY age DESC' });
    const texts = [...(open.messages as { content: string }[]).map((m) => m.content), step.observation as string, sql.observation as string];
    const ids = [...(open.message_ids as number[][]), step.observation_ids as number[], sql.observation_ids as number[]];
    for (const r of [open, step, sql]) assert.equal(r.tokenizer, name);
    return { texts, ids };
  } finally {
    await srv.close();
  }
}

test('the environment API returns each prompt and observation with its ids under the named tokenizer (agro\'s own)', async () => {
  const tk = Tokenizer.load(BASE_TOKENIZER);
  const { texts, ids } = await episode(BASE_TOKENIZER, 'base');
  assert.equal(texts.length, 4);
  assert.match(texts[2], /Bob/);
  texts.forEach((t, i) => {
    assert.deepEqual(ids[i], tk.encode(t));
    assert.equal(tk.decode(ids[i]), t);
  });
  // Without a tokenizer the replies carry no ids.
  const srv = await serveEnv({ catalog: catalogFromDbRoot(fx.dbRoot, fx.variants) });
  const r = (await (await fetch(srv.url + '/v1/sql', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ db_id: 'concert', sql: 'SELECT 1' }) })).json()) as Record<string, unknown>;
  await srv.close();
  assert.equal(r.observation_ids, undefined);
});

test('agro serve --tokenizer without the environment API is a usage error', () => {
  const r = spawnSync(process.execPath, [join(ROOT, 'bin/agro.js'), 'serve', '--tokenizer', BASE_TOKENIZER, '--port', '0'], { encoding: 'utf8', timeout: 60_000 });
  assert.equal(r.status, 2, r.stderr);
  assert.equal(r.stderr.trim().split('\n').length, 1);
});

test('the ids equal transformers\' on the same text: the checkpoint\'s tokenizer and a Hugging Face tokenizers one', { skip: !hasTransformers && 'no Python with transformers', timeout: 120_000 }, async () => {
  const hfFile = join(fx.dir, 'hf-tokenizer.json');
  // A byte-level BPE trained by Hugging Face tokenizers (not agro): what a foreign model's tokenizer.json looks like.
  const make = spawnSync(venvPython, ['-c', `
import sys
from tokenizers import Tokenizer, models, pre_tokenizers, decoders, trainers
tk = Tokenizer(models.BPE())
tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tk.decoder = decoders.ByteLevel()
text = ["SELECT name, age FROM singer WHERE age > 40 ORDER BY age DESC", "Which singers are over 40? name | age", "You answer questions about a SQLite database."] * 50
tk.train_from_iterator(text, trainers.BpeTrainer(vocab_size=400, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=["<observation>", "</observation>"]))
tk.save(sys.argv[1])
`, hfFile], { encoding: 'utf8' });
  assert.equal(make.status, 0, make.stderr);
  for (const [file, name] of [[BASE_TOKENIZER, 'base'], [hfFile, 'hf']] as const) {
    const { texts, ids } = await episode(file, name);
    const py = spawnSync(venvPython, ['-c', `
import json, sys
from transformers import PreTrainedTokenizerFast
tok = PreTrainedTokenizerFast(tokenizer_file=sys.argv[1])
print(json.dumps([tok.encode(t, add_special_tokens=False) for t in json.loads(sys.stdin.read())]))
`, file], { input: JSON.stringify(texts), encoding: 'utf8', env: { ...process.env, HF_HUB_OFFLINE: '1' } });
    assert.equal(py.status, 0, py.stderr);
    assert.deepEqual(ids, JSON.parse(py.stdout) as number[][], `${name}: agro's ids differ from transformers'`);
  }
});
