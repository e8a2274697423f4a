// The /v1/ask and POST /v1/corrections load of bench/serve.ts (its opening comment is the usage): `agro serve`
// itself, in its own process, on the bundled databases, with the built-in base model and the factory's memories.
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { agroCli } from './_agro.ts';
import { treeRss } from './_tree-rss.ts';
import { MemoryStore } from '../src/memory/store.ts';
import { quantile } from '../src/util/stats.ts';

const BIN = new URL('../bin/agro.js', import.meta.url).pathname;
/** Where corrections go and most asks land: the quickstart's database. */
const LOAD_DB = 'music_store';
/** The fixed questions' database: no correction writes its memory, so its answers under load may be held to the quiet run's. */
const FIXED_DB = 'retail';
const FIXED_QUESTIONS = 8;
/** After every this many asks a client sends one correction. */
const ASKS_PER_CORRECTION = 1;
/** Every this many asks of a client is the next fixed question. */
const FIXED_EVERY = 4;

interface Served {
  child: ChildProcess;
  url: string;
  token: string;
  stopped: Promise<void>;
}

/** `agro serve --policy base` on the bundled databases with these memories, AGRO_TOKEN set to a fresh random value. */
async function startAgroServe(memories: string[]): Promise<Served> {
  const token = randomBytes(18).toString('base64url');
  const child = spawn(process.execPath, [BIN, 'serve', '--policy', 'base', '--host', '127.0.0.1', '--port', '0', ...memories.flatMap((m) => ['--memory', m])], {
    env: { ...process.env, AGRO_TOKEN: token },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const stopped = new Promise<void>((ok) => child.once('exit', () => ok()));
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const url = await new Promise<string>((res, rej) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on (http:\/\/\S+);/.exec(out);
      if (m) res(m[1]);
    });
    child.once('exit', (c) => rej(new Error(`agro serve exited ${c}: ${err.trim().split('\n').slice(-3).join(' ')}`)));
  });
  return { child, url, token, stopped };
}

interface Reply {
  ok: boolean;
  status: number;
  ms: number;
  body?: Record<string, unknown>;
}

async function post(s: Served, path: string, body: unknown): Promise<Reply> {
  const t0 = performance.now();
  try {
    const r = await fetch(`${s.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${s.token}` }, body: JSON.stringify(body) });
    const text = await r.text();
    let parsed: Record<string, unknown> | undefined;
    try {
      parsed = JSON.parse(text) as Record<string, unknown>;
    } catch {
      parsed = undefined;
    }
    return { ok: r.status >= 200 && r.status < 300, status: r.status, ms: performance.now() - t0, body: parsed };
  } catch {
    return { ok: false, status: 0, ms: performance.now() - t0 }; // a socket error
  }
}

/** What "the same answer" means here: the same SQL text and the same rows (in order). */
const answerKey = (b: Record<string, unknown> | undefined): string => JSON.stringify([b?.sql ?? null, b?.rows ?? null]);

function questionsOf(dataset: string): string[] {
  const out: string[] = [];
  for (const line of readFileSync(dataset, 'utf8').split('\n')) {
    if (!line.trim()) continue;
    const r = JSON.parse(line) as { question: string; paraphrases?: string[] };
    // A paraphrase where there is one: the memory holds the question, a person words it otherwise.
    out.push(r.paraphrases?.[0] ?? r.question);
  }
  return out;
}

interface RunResult {
  clients: number;
  /** From the first request to the last answer (the window plus the requests in flight at its end). */
  seconds: number;
  asks: number[];
  corrections: number[];
  askErrors: number;
  correctionErrors: number;
  statuses: Record<string, number>;
  rssMiB: number[];
  warmupS: number;
  lost: number;
  twice: number;
  unacknowledged: number;
  integrity: string;
  fixedAsked: number;
  fixedDiffer: number;
  quietStable: boolean;
}

async function oneRun(clients: number, seconds: number, dir: string, memories: Record<string, string>, loadQs: string[], fixedQs: string[], tag: string): Promise<RunResult> {
  // A fresh copy of each memory per run: every run starts from the factory's memory alone.
  const runDir = join(dir, `run-${clients}`);
  rmSync(runDir, { recursive: true, force: true });
  mkdirSync(runDir, { recursive: true });
  const copies = Object.entries(memories).map(([db, m]) => {
    const to = join(runDir, `${db}.memory.db`);
    copyFileSync(m, to);
    return to;
  });
  const loadStore = copies[0];
  const s = await startAgroServe(copies);
  const pid = s.child.pid!;
  const statuses: Record<string, number> = {};
  const acked = new Map<number, { sql: string; question: string }>();
  const sent: { sql: string; question: string }[] = [];
  const asks: number[] = [];
  const corrections: number[] = [];
  let askErrors = 0;
  let correctionErrors = 0;
  let fixedAsked = 0;
  let fixedDiffer = 0;
  const rss: { t: number; mib: number }[] = [];
  try {
    // Quiet: the fixed questions one at a time, twice (the second says whether the server answers them the same when quiet).
    const quiet: string[] = [];
    let quietStable = true;
    for (const q of fixedQs) quiet.push(answerKey((await post(s, '/v1/ask', { db_id: FIXED_DB, question: q })).body));
    for (const [i, q] of fixedQs.entries()) if (answerKey((await post(s, '/v1/ask', { db_id: FIXED_DB, question: q })).body) !== quiet[i]) quietStable = false;
    for (const q of loadQs.slice(0, 2)) await post(s, '/v1/ask', { db_id: LOAD_DB, question: q }); // the load database's resources open

    const t0 = performance.now();
    const end = t0 + seconds * 1000;
    const sampler = setInterval(() => rss.push({ t: (performance.now() - t0) / 1000, mib: treeRss(pid) / 2 ** 20 }), 1000);
    let nextQ = 0;
    let nextFixed = 0;
    let nextCorrection = 0;
    const client = async (c: number): Promise<void> => {
      for (let n = 1; performance.now() < end; n++) {
        // Offset by client, so a run of few asks per client still asks fixed questions.
        const fixed = (n + c) % FIXED_EVERY === 0 ? nextFixed++ % fixedQs.length : -1;
        const r = fixed >= 0 ? await post(s, '/v1/ask', { db_id: FIXED_DB, question: fixedQs[fixed] }) : await post(s, '/v1/ask', { db_id: LOAD_DB, question: loadQs[nextQ++ % loadQs.length] });
        statuses[r.status] = (statuses[r.status] ?? 0) + 1;
        asks.push(r.ms);
        if (!r.ok) askErrors++;
        else if (fixed >= 0) {
          fixedAsked++;
          if (answerKey(r.body) !== quiet[fixed]) fixedDiffer++;
        }
        if (n % ASKS_PER_CORRECTION !== 0 || performance.now() >= end) continue;
        // Each correction's SQL is its own (a correction of a live pair's SQL replaces that pair, store.ts addPerson).
        const k = nextCorrection++;
        const pair = { question: `Load ${tag} client ${c} correction ${k}: what is track ${1 + (k % 900)} called?`, sql: `SELECT name, ${k} AS correction FROM tracks WHERE track_id = ${1 + (k % 900)}` };
        sent.push(pair);
        const w = await post(s, '/v1/corrections', { db_id: LOAD_DB, ...pair });
        statuses[w.status] = (statuses[w.status] ?? 0) + 1;
        corrections.push(w.ms);
        if (!w.ok) correctionErrors++;
        else if (typeof w.body?.id === 'number') acked.set(w.body.id, pair);
        else correctionErrors++; // acknowledged without the id it must name
      }
    };
    await Promise.all(Array.from({ length: clients }, (_, c) => client(c)));
    clearInterval(sampler);
    // Requests started in the window finish after it: rates are over the whole time, window and drain.
    const wallS = (performance.now() - t0) / 1000;
    const warmupS = Math.min(10, seconds / 4);
    s.child.kill('SIGTERM');
    await s.stopped;

    // Every acknowledged correction in the store exactly once, live, with its question and SQL.
    const store = MemoryStore.open(loadStore, { readonly: true });
    const people = store.list({ source: 'person' });
    const integrity = store.integrity();
    store.close();
    const byId = new Map(people.map((e) => [e.id, e]));
    let lost = 0;
    for (const [id, p] of acked) {
      const e = byId.get(id);
      if (!e || e.sql !== p.sql || e.questions[0] !== p.question) lost++;
    }
    const counts = new Map<string, number>();
    for (const e of people) counts.set(e.sql, (counts.get(e.sql) ?? 0) + 1);
    const twice = [...counts.values()].filter((n) => n > 1).length;
    const ackedSql = new Set([...acked.values()].map((p) => p.sql));
    const unacknowledged = people.filter((e) => !ackedSql.has(e.sql)).length;
    return { clients, seconds: wallS, asks, corrections, askErrors, correctionErrors, statuses, rssMiB: rss.filter((x) => x.t >= warmupS).map((x) => x.mib), warmupS, lost, twice, unacknowledged, integrity, fixedAsked, fixedDiffer, quietStable };
  } finally {
    if (s.child.exitCode === null) {
      s.child.kill('SIGTERM');
      await s.stopped;
    }
  }
}

const ms = (xs: number[], q: number): string => (xs.length ? Math.round(quantile(xs, q)).toString() : '-');
const verdict = (ok: boolean): string => (ok ? 'PASS' : 'FAIL');

/** The section: 8 and 32 clients, `seconds` each, on fresh copies of the factory's memories (made once under `out`). */
export async function askLoad(seconds: number, out: string): Promise<void> {
  mkdirSync(out, { recursive: true });
  const memories: Record<string, string> = {};
  const datasets: Record<string, string> = {};
  for (const db of [LOAD_DB, FIXED_DB]) {
    const synth = join(out, `synth-${db}`);
    // The factory's memory of the database (agro synth's defaults, the quickstart's recipe); kept for reruns.
    if (!existsSync(join(synth, 'memory.db'))) agroCli(['synth', '--db', join('data/databases', db, `${db}.sqlite`), '--out', synth, '--json'], { log: join(out, 'synth.log') });
    memories[db] = join(synth, 'memory.db');
    datasets[db] = join(synth, 'dataset.jsonl');
  }
  const loadQs = questionsOf(datasets[LOAD_DB]);
  const fixedQs = questionsOf(datasets[FIXED_DB]).slice(0, FIXED_QUESTIONS);
  console.log(
    `\n/v1/ask + POST /v1/corrections on agro serve --policy base (bundled databases, the factory's memories), ${seconds} s per point, load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}\n` +
      `  each client: asks about ${LOAD_DB} (${loadQs.length} factory questions, paraphrased), every ${FIXED_EVERY}th one of ${fixedQs.length} fixed ${FIXED_DB} questions, one correction of ${LOAD_DB} after every ${ASKS_PER_CORRECTION} asks`,
  );
  const tag = new Date().toISOString().slice(11, 19);
  const results: RunResult[] = [];
  for (const clients of [8, 32]) results.push(await oneRun(clients, seconds, out, memories, loadQs, fixedQs, tag));
  const rows = results.map((r) => {
    const sorted = [...r.rssMiB].sort((a, b) => a - b);
    const med = sorted.length ? quantile(sorted, 0.5) : 0;
    const flat = sorted.length > 0 && sorted[0] >= med * 0.9 && sorted[sorted.length - 1] <= med * 1.1;
    return { r, med, flat, min: sorted[0] ?? 0, max: sorted[sorted.length - 1] ?? 0 };
  });
  console.table(
    rows.map(({ r, med, flat, min, max }) => ({
      clients: r.clients,
      'wall s': r.seconds.toFixed(0),
      'req/s': ((r.asks.length + r.corrections.length) / r.seconds).toFixed(2),
      'asks/s': (r.asks.length / r.seconds).toFixed(2),
      'ask p50/p99 ms': `${ms(r.asks, 0.5)} / ${ms(r.asks, 0.99)}`,
      'corr/s': (r.corrections.length / r.seconds).toFixed(2),
      'corr p50/p99 ms': `${ms(r.corrections, 0.5)} / ${ms(r.corrections, 0.99)}`,
      errors: r.askErrors + r.correctionErrors,
      statuses: JSON.stringify(r.statuses),
      [`RSS MiB min/med/max (after ${r.warmupS} s)`]: `${Math.round(min)} / ${Math.round(med)} / ${Math.round(max)}`,
      'RSS ±10%': flat ? 'yes' : 'no',
    })),
  );
  for (const { r, flat, min, max, med } of rows) {
    const acked = r.corrections.length - r.correctionErrors;
    console.log(
      `${r.clients} clients: corrections acknowledged ${acked}, lost or altered ${r.lost}, stored twice ${r.twice}, stored but unacknowledged ${r.unacknowledged}, integrity ${r.integrity}; ` +
        `fixed ${FIXED_DB} questions under load ${r.fixedAsked}, answered otherwise than the quiet run ${r.fixedDiffer} (quiet run repeated the same: ${r.quietStable ? 'yes' : 'no'}); RSS ${Math.round(min)}-${Math.round(max)} MiB around ${Math.round(med)}`,
    );
    console.log(`  ${verdict(acked > 0 && r.lost === 0 && r.twice === 0 && r.integrity === 'ok')} ${r.clients} clients: every acknowledged correction in the store exactly once`);
    console.log(`  ${verdict(r.fixedDiffer === 0 && r.fixedAsked > 0)} ${r.clients} clients: fixed questions answered under load as when quiet (same SQL and rows)`);
    if (r.clients !== 8) continue;
    const p99 = r.asks.length ? quantile(r.asks, 0.99) : Infinity;
    console.log(`  ${verdict(p99 <= 3000)} goal: /v1/ask at 8 clients p99 ≤ 3 s (${Math.round(p99)} ms)`);
    console.log(`  ${verdict(r.askErrors + r.correctionErrors === 0)} goal: 0 errors at 8 clients (${r.askErrors} asks, ${r.correctionErrors} corrections)`);
    console.log(`  ${verdict(flat)} goal: RSS flat after warm-up at 8 clients (±10% of the median ${Math.round(med)} MiB: ${Math.round(min)}-${Math.round(max)})`);
  }
  console.log(`load average after: ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
}
