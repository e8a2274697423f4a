import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { closedPortUrl } from './support/fake-openai.ts';
import { saveTinyCheckpoint } from './support/tiny-checkpoint.ts';

const BIN = fileURLToPath(new URL('../bin/agro.js', import.meta.url));
const tmp = mkdtempSync(join(tmpdir(), 'agro-cli-use-'));
const DB = 'data/databases/music_store/music_store.sqlite';
const agro = (...args: string[]) => spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8' });

test('predict, ask, serve: bad policies and endpoints are one line with the documented exit code, nothing written', async () => {
  const out = join(tmp, 'run');
  const cases: [string[], number, RegExp][] = [
    [['predict', '--policy', join(tmp, 'nope'), '--data', 'data/dev.json', '--out', out], 3, /^agro: policy not found: /],
    [['ask', '--policy', 'data/dev.json', '--db', DB, 'How many?'], 4, /^agro: data\/dev.json is neither a checkpoint folder nor a GGUF file\n$/],
    [['serve', '--policy', 'data', '--port', '0'], 4, /^agro: data is not a checkpoint: it has no config.json/],
    [['predict', '--llm-url', await closedPortUrl(), '--data', 'data/dev.json', '--out', out], 3, /^agro: endpoint .* is unreachable/],
  ];
  for (const [args, code, re] of cases) {
    const r = agro(...args);
    assert.equal(r.status, code, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, re);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
  }
  assert.equal(spawnSync('ls', [out]).status, 2, 'no run directory was created');
});

test('agro serve answers, then shuts down gracefully on SIGTERM', { timeout: 180_000 }, async () => {
  const ck = join(tmp, 'ck');
  await saveTinyCheckpoint(ck, ['SELECT name FROM artists'], { vocabSize: 300 });
  const child = spawn(process.execPath, [BIN, 'serve', '--policy', ck, '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    const t = setInterval(() => {
      const m = /OpenAI API: (http:\/\/\S+\/v1)/.exec(stdout);
      if (m) {
        clearInterval(t);
        resolve(m[1]);
      }
    }, 100);
    child.once('exit', (c) => reject(new Error(`serve exited ${c}`)));
  });
  const models = (await (await fetch(`${url}/models`)).json()) as { data: { id: string }[] };
  assert.deepEqual(models.data.map((m) => m.id), ['ck']);
  const reply = await fetch(`${url}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 }) });
  assert.equal(reply.status, 200);
  const exited = new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
  child.kill('SIGTERM');
  assert.equal(await exited, 0);
  assert.match(stdout, /shutting down/);
});

test.after(() => rmSync(tmp, { recursive: true, force: true }));
