// `bench adversarial`'s CLI section (issue #35, the command-line failures): each case runs the real CLI
// and has its pass rule: the documented exit code with one `agro:` line, within a wall-clock cap, and
// for the endless inputs (/dev/zero, a FIFO) a peak memory of the whole process tree under 512 MiB.
// `npm run bench -- adversarial --only cli` runs this section alone (about a minute on 2 cores).
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { initBackend } from '../src/model/backend.ts';
import { LlamaModel } from '../src/model/llama.ts';
import { resolveModelConfig } from '../src/model/config.ts';
import { Tokenizer } from '../src/model/tokenizer.ts';
import { saveCheckpoint } from '../src/model/checkpoint.ts';
import { AGENT_SPECIAL_TOKENS } from '../src/agent/protocol.ts';

export interface CliRun {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout?: string;
  stderr: string;
  peakBytes: number;
  seconds: number;
}

export interface CliCase {
  name: string;
  ok: boolean;
  detail: string;
  peakBytes?: number;
}

export interface CliBench {
  root: string;
  dbRoot: string;
  music: string;
  dev: string;
  /** Runs `agro ARGS`, killed after `timeoutMs`; stdout kept. */
  run: (args: string[], timeoutMs: number) => Promise<CliRun>;
  record: (c: CliCase) => void;
}

const MiB = 2 ** 20;
// eslint-disable-next-line no-control-regex -- a control character on the terminal is the failure
const CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;

/** The bad-input rule: exit `code`, one `agro:` line matching `message`, no internal error. */
function oneLine(r: CliRun, code: number, message: RegExp): boolean {
  return r.status === code && /^agro: [^\n]+\n$/.test(r.stderr) && !/internal error|\n\s+at /.test(r.stderr) && message.test(r.stderr) && !CONTROL.test(r.stderr.slice(0, -1));
}

function said(r: CliRun): string {
  return `exit ${r.status ?? r.signal}, ${r.seconds.toFixed(1)} s${r.stderr ? `: ${r.stderr.trim().split('\n')[0].slice(0, 160)}` : ''}`;
}

async function expectLine(b: CliBench, name: string, args: string[], code: number, message: RegExp, timeoutMs = 20_000, maxBytes?: number): Promise<void> {
  const r = await b.run(args, timeoutMs);
  const ok = oneLine(r, code, message) && (maxBytes === undefined || r.peakBytes < maxBytes);
  b.record({ name, ok, detail: `${said(r)}${ok ? '' : ` (wanted exit ${code}, ${message})`}`, peakBytes: r.peakBytes });
}

async function tinyCheckpoint(dir: string): Promise<string> {
  await initBackend();
  const tok = Tokenizer.train(['SELECT name FROM artists', 'music store'], { vocabSize: 400, specialTokens: AGENT_SPECIAL_TOKENS });
  const model = new LlamaModel(resolveModelConfig({ preset: 'tiny', vocabSize: tok.vocabSize, maxPositions: 2048 }), { seed: 1 });
  const ck = join(dir, 'ck');
  saveCheckpoint(ck, { model, tokenizer: tok });
  model.dispose();
  return ck;
}

export async function cliSection(b: CliBench, dir: string): Promise<void> {
  const out = join(dir, 'cli-out');
  const fifo = join(dir, 'fifo');
  execFileSync('mkfifo', [fifo]);
  const ck = await tinyCheckpoint(dir);

  // Endless or non-regular inputs, in every flag that reads a file.
  for (const [kind, input] of [['/dev/zero', '/dev/zero'], ['a FIFO', fifo], ['a directory', dir]] as const) {
    const want = kind === 'a directory' ? /path is a directory, not a file/ : /path is not a regular file/;
    const cmds: Array<[string, string[]]> = [
      ['sft --data', ['sft', '--data', input, '--out', out]],
      ['train --data', ['train', '--data', input, '--out', out, '--init', ck]],
      ['train --config', ['train', '--data', b.dev, '--out', out, '--init', ck, '--config', input]],
      ['eval --gold --data', ['eval', '--gold', '--data', input]],
      ['eval --pred', ['eval', '--data', b.dev, '--pred', input]],
      ['export --data', ['export', '--format', 'trl', '--data', input, '--db-root', b.dbRoot, '--out', out]],
      ['predict --data', ['predict', '--policy', ck, '--data', input, '--out', out]],
    ];
    for (const [what, args] of cmds) await expectLine(b, `${what} ${kind}: exit 4 at once`, args, 4, want, 20_000, 512 * MiB);
    // Documentation may be a folder; a device or a FIFO is refused as the other inputs are.
    if (kind !== 'a directory') {
      await expectLine(b, `synth --docs ${kind}: exit 4 at once`, ['synth', '--db', b.music, '--docs', input, '--out', out], 4, /documentation path is not a regular file/, 20_000, 512 * MiB);
      await expectLine(b, `ask --docs ${kind}: exit 4 at once`, ['ask', 'How many artists?', '--policy', ck, '--db', b.music, '--docs', input, '--max-turns', '1'], 4, /documentation path is not a regular file/, 20_000, 512 * MiB);
    }
  }

  // Missing folders: exit 3 before any work.
  await expectLine(b, 'eval --suite <missing folder>: exit 3', ['eval', '--gold', '--data', b.dev, '--suite', join(dir, 'none')], 3, /--suite: folder not found/);
  await expectLine(b, 'serve --db-root <missing folder>: exit 3 before listening', ['serve', '--db-root', join(dir, 'none'), '--port', '0'], 3, /--db-root: folder not found/);
  await expectLine(b, 'serve --variants <missing folder>: exit 3 before listening', ['serve', '--db-root', b.dbRoot, '--variants', join(dir, 'none'), '--port', '0'], 3, /--variants: folder not found/);

  // Unreadable databases: exit 4 wherever the CLI opens one.
  const truncated = join(dir, 'truncated.sqlite');
  writeFileSync(truncated, readFileSync(b.music).subarray(0, 20_000));
  const zero = join(dir, 'zero.sqlite');
  writeFileSync(zero, '');
  const root = join(dir, 'bad-root');
  mkdirSync(join(root, 'music_store'), { recursive: true });
  cpSync(truncated, join(root, 'music_store', 'music_store.sqlite'));
  const musicData = join(dir, 'music.json');
  writeFileSync(musicData, JSON.stringify([{ db_id: 'music_store', question: 'How many artists?', SQL: 'SELECT count(*) FROM artists' }]));
  await expectLine(b, 'ask --db <truncated database>: exit 4', ['ask', 'How many artists?', '--policy', ck, '--db', truncated, '--max-turns', '1'], 4, /not a readable SQLite database/);
  await expectLine(b, 'schema --db <truncated database>: exit 4', ['schema', '--db', truncated], 4, /not a readable SQLite database/);
  await expectLine(b, 'sql --db <truncated database>: exit 4', ['sql', '--db', truncated, 'SELECT 1'], 4, /malformed/);
  await expectLine(b, 'eval over a db-root with a truncated database: exit 4 before any query', ['eval', '--gold', '--data', musicData, '--db-root', root], 4, /not a readable SQLite database/);
  await expectLine(b, 'predict over a db-root with a truncated database: exit 4', ['predict', '--policy', ck, '--data', musicData, '--db-root', root, '--out', join(dir, 'pred')], 4, /not a readable SQLite database/);
  await expectLine(b, 'schema --db <0-byte file>: exit 4', ['schema', '--db', zero], 4, /has no tables or views/);

  // Unusable output paths: exit 2 before work.
  const file = join(dir, 'a-file');
  writeFileSync(file, 'x');
  await expectLine(b, 'export gguf to /proc: exit 2 before loading', ['export', 'gguf', ck, '/proc/x.gguf'], 2, /cannot write in \/proc/);
  await expectLine(b, 'export gguf under a file: exit 2 before loading', ['export', 'gguf', ck, join(file, 'x.gguf')], 2, /is a file, not a directory/);

  // Control characters from user data.
  const esc = join(dir, 'esc.json');
  writeFileSync(esc, JSON.stringify([{ db_id: 'a\u001b]0;pwned\u0007\u001b[2J\u0000\u009bb', question: 'q', SQL: 'SELECT 1' }]));
  await expectLine(b, 'db_id with OSC title, screen clear, NUL and C1: escaped in the error line', ['eval', '--gold', '--data', esc], 4, /a\\x1b\]0;pwned\\x07\\x1b\[2J\\x00\\x9bb/);
  const cell = await b.run(['sql', '--db', b.music, "SELECT char(27) || ']0;pwned' || char(7) || char(27) || '[2J' AS v"], 20_000);
  b.record({ name: 'a cell with control characters: escaped in the table', ok: cell.status === 0 && !CONTROL.test(cell.stdout ?? '') && /\\x1b\]0;pwned/.test(cell.stdout ?? ''), detail: said(cell) });

  // The result cap in UTF-8 bytes, and the message naming it.
  const euro = "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 3) SELECT replace(hex(zeroblob(2000000)), '00', '€') AS e FROM c";
  const cap = await b.run(['sql', '--db', b.music, '--json', euro], 60_000);
  let capDetail = said(cap);
  let capOk = false;
  if (cap.status === 0) {
    const j = JSON.parse(cap.stdout ?? '{}') as { rows: string[][]; truncated: boolean; truncatedBy?: string };
    const bytes = j.rows.reduce((a, r) => a + Buffer.byteLength(r[0], 'utf8'), 0);
    capOk = j.truncated && j.truncatedBy === 'bytes' && bytes <= 8 * MiB;
    capDetail = `${j.rows.length} rows, ${(bytes / MiB).toFixed(1)} MiB of UTF-8 returned, truncated ${j.truncated} by ${j.truncatedBy ?? '-'}`;
  }
  b.record({ name: '3 rows of 2 M "€" (18 MB of UTF-8) against the 8 MiB cap', ok: capOk, detail: capDetail, peakBytes: cap.peakBytes });
  const capText = await b.run(['sql', '--db', b.music, euro], 60_000);
  b.record({ name: 'a result cut by the byte cap names the byte cap', ok: /8 MiB cap on result bytes/.test(capText.stdout ?? '') && !/--max-rows/.test(capText.stdout ?? ''), detail: (capText.stdout ?? '').trim().split('\n').pop() ?? '' });

  // A query starting with "-".
  await expectLine(b, 'sql "-- comment ...": exit 2 naming agro sql -- "<sql>"', ['sql', '--db', b.music, '-- c\nSELECT 1'], 2, /goes after --: agro sql \[options\] -- "<sql>"/);

  // Resume: stale temp folders and changed settings.
  const rows = join(dir, 'rows.jsonl');
  writeFileSync(rows, Array.from({ length: 8 }, (_, i) => JSON.stringify({ messages: [{ role: 'user', content: `rows in t${i}?` }, { role: 'assistant', content: `SELECT count(*) FROM t${i}` }] })).join('\n') + '\n');
  const sftRun = join(dir, 'sft');
  const sft = (...extra: string[]): string[] => ['sft', '--data', rows, '--out', sftRun, '--preset', 'tiny', '--vocab-size', '300', '--backend', 'cpu', '--steps', '2', '--json', ...extra];
  const first = await b.run(sft('--lr', '0.001'), 120_000);
  const stale = join(sftRun, 'checkpoints', '.step-3.tmp-99999999-1-2');
  mkdirSync(stale, { recursive: true });
  await expectLine(b, 'sft --resume --lr 0.01 on a run trained at 0.001: exit 2 listing the change', sft('--lr', '0.01', '--resume'), 2, /lr 0\.001 → 0\.01/, 120_000);
  b.record({ name: 'a checkpoint temp folder left by SIGKILL is removed on resume', ok: first.status === 0 && !existsSync(stale) && readdirSync(join(sftRun, 'checkpoints')).join() === 'step-2', detail: `first run ${said(first)}; left: ${readdirSync(join(sftRun, 'checkpoints')).join(', ')}` });

  // #36: a factory output's dataset.jsonl names its database.
  const pets = join(dir, 'pets.sqlite');
  const d = new Database(pets);
  d.exec('CREATE TABLE pets (id INTEGER PRIMARY KEY, name TEXT, kind TEXT, age INTEGER)');
  const ins = d.prepare('INSERT INTO pets (name, kind, age) VALUES (?, ?, ?)');
  for (let i = 0; i < 40; i++) ins.run(`pet${i}`, ['cat', 'dog', 'bird'][i % 3], 1 + ((i * 7) % 15));
  d.close();
  const synth = join(dir, 'synth');
  const s = await b.run(['synth', '--db', pets, '--out', synth, '--n', '12', '--variants', '1', '--json'], 120_000);
  const exp = await b.run(['export', '--format', 'verl', '--data', join(synth, 'dataset.jsonl'), '--out', join(dir, 'verl'), '--json'], 60_000);
  b.record({ name: 'export --format verl --data <factory output>/dataset.jsonl (manifest beside it)', ok: s.status === 0 && exp.status === 0 && existsSync(join(dir, 'verl', 'train.parquet')), detail: `synth exit ${s.status}; ${said(exp)}` });
  const ev = await b.run(['eval', '--gold', '--data', join(synth, 'dataset.jsonl'), '--json'], 60_000);
  b.record({ name: 'eval --gold --data <factory output>/dataset.jsonl without --db-root', ok: ev.status === 0, detail: said(ev) });
}
