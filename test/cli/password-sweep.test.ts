// No password anywhere: every error path below gets a URL with a password (unknown schemes, a typo, a `/` or
// an `@` left unencoded in it, libpq's password= parameter) and the test fails if the password appears in
// stdout, stderr or any file the command wrote. The server at 127.0.0.1:1 refuses connections.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { redactSecrets } from '../../src/errors.ts';
import { redactUrl } from '../../src/sql/postgres.ts';
import { filesUnder } from '../support/files.ts';
import { agroBatch } from '../support/cli-batch.ts';

const BIN = fileURLToPath(new URL('../../bin/agro.js', import.meta.url));
const MUSIC = fileURLToPath(new URL('../../data/databases/music_store/music_store.sqlite', import.meta.url));
const DEV = fileURLToPath(new URL('../../data/dev.json', import.meta.url));
const SECRET = 'Zq9s3cretPW';

const URLS = [
  `postgres://agro_reader:${SECRET}@127.0.0.1:1/music_store`,
  `postgresql://agro_reader:${SECRET}@127.0.0.1:1/music_store`,
  `postgre://agro_reader:${SECRET}@127.0.0.1:1/music_store`,
  `mysql://u:${SECRET}@127.0.0.1:1/music_store`,
  `postgres://agro_reader:ab/${SECRET}@127.0.0.1:1/music_store`,
  `postgres://agro_reader:a@b${SECRET}@127.0.0.1:1/music_store`,
  `postgres://agro_reader@127.0.0.1:1/music_store?password=${SECRET}`,
];

test('redactSecrets masks the password of URLs that parse and of URLs that do not', () => {
  for (const u of URLS) {
    const r = redactSecrets(`cannot connect to ${u}: refused`);
    assert.ok(!r.includes(SECRET), r);
    assert.ok(r.includes('127.0.0.1:1/music_store'), r);
  }
  assert.equal(redactUrl('postgres://u:p@h:5432/db'), 'postgres://u:***@h:5432/db');
  assert.equal(redactUrl('postgres://u:***@h/db'), 'postgres://u:***@h/db');
  assert.equal(redactUrl('postgres://u@h/db'), 'postgres://u@h/db');
  assert.equal(redactUrl('data/databases/x.sqlite'), 'data/databases/x.sqlite');
  assert.equal(redactSecrets('mail me at someone@example.com'), 'mail me at someone@example.com');
  // A URL taken for a file path: resolve() joins its `//`.
  assert.equal(redactSecrets(`not found: /home/x/mysql:/u:${SECRET}@h/db`), 'not found: /home/x/mysql:/u:***@h/db');
});

test('no command prints or writes a password, on any error path', { timeout: 300_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'agro-pw-sweep-'));
  const leaks: string[] = [];
  try {
    let k = 0;
    const cases = URLS.flatMap((url) => {
      const out = (name: string) => join(dir, `${k++}-${name}`);
      return [
        ['sql', '--db', url, 'SELECT 1'],
        ['schema', '--db', url],
        ['db', 'copy', MUSIC, url],
        ['ask', '--db', url, 'How many genres are there?'],
        ['eval', '--data', DEV, '--gold', '--db-root', url.replace(/music_store/, ''), '--out', out('eval.json')],
        ['synth', '--db', url, '--out', out('synth'), '--n', '2'],
      ].map((args) => ({ url, args }));
    });
    const env = { ...process.env, PGCONNECT_TIMEOUT: '2' };
    // The first URL through bin/agro.js itself, a process per command (what Node prints of a process is seen too);
    // the others through the same main() in one process (test/support/cli-batch.ts).
    const first = cases.filter((c) => c.url === URLS[0]);
    const rest = cases.filter((c) => c.url !== URLS[0]);
    const spawned = first.map(({ args }) => spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 60_000, env }));
    const batched = agroBatch(rest.map((c) => c.args), { timeoutMs: 240_000, env });
    [...first, ...rest].forEach(({ url, args }, i) => {
      const r = i < first.length ? spawned[i] : batched[i - first.length];
      const shown = `${r.stdout}\n${r.stderr}`;
      if (shown.includes(SECRET)) leaks.push(`agro ${args.slice(0, 2).join(' ')} (${url.replace(SECRET, '<pw>')}): ${shown.trim().slice(0, 300).replace(SECRET, '<pw>')}`);
      assert.ok(!/\n\s+at /.test(r.stderr), `a stack trace: ${r.stderr.replace(SECRET, '<pw>')}`);
    });
    for (const f of filesUnder(dir)) if (readFileSync(f, 'utf8').includes(SECRET)) leaks.push(`file ${f}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  assert.deepEqual(leaks, []);
});
