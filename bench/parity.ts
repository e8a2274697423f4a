// `npm run bench -- parity [--parts spider,bird,suite] [--suite-dbs N] [--variants K] [--keep]`
// Question-by-question agreement of `agro eval --mode spider` with the official Spider execution
// evaluator (../shared/tools/spider_ex.py = test-suite-sql-eval eval_exec_match, default flags) on the
// Spider train gold (../shared/data/spider-train): gold vs gold, perturbed predictions (perturb_preds.py,
// seed 0) vs gold, and the same predictions in test-suite mode on agro's own variant databases (built
// here with the factory's augmentation for the first N databases, K variants each, laid out as upstream
// reads a suite: every .sqlite in <db_id>/). Prints disagreements (the goal is 0) and both evaluators'
// times. Needs Debian's python3-sqlparse and python3-tqdm (/usr/bin/python3); skips with the reason if absent.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { buildVariants } from '../src/factory/augment.ts';
import { buildSchemaGraph } from '../src/factory/schema-graph.ts';
import { evaluate, type EvaluateOptions } from '../src/eval/run.ts';
import { writeBirdFiles } from '../src/data/bird-files.ts';
import { readDataset } from '../src/data/read-dataset.ts';
import { readPredictions } from '../src/data/read-predictions.ts';
import { introspectSchema } from '../src/sql/introspect.ts';
import { legacyQuotesAvailable, LEGACY_QUOTES_MISSING } from '../src/sql/open-database.mjs';
import { SqlPool } from '../src/sql/pool.ts';
import { num } from './_args.ts';

const PY = '/usr/bin/python3';
const TOOLS = resolve('../shared/tools');
const DATA = resolve('../shared/data/spider-train');

function python(args: string[]): { ok: boolean; out: string; seconds: number } {
  const t0 = performance.now();
  const r = spawnSync(PY, args, { encoding: 'utf8', maxBuffer: 1 << 26 });
  return { ok: r.status === 0, out: `${r.stdout ?? ''}${r.stderr ?? ''}`.trim(), seconds: (performance.now() - t0) / 1000 };
}

interface Side {
  correct: number;
  perItem: number[];
  seconds: number;
}

function official(gold: string, pred: string, root: string, out: string): Side {
  const r = python([join(TOOLS, 'spider_ex.py'), gold, pred, root, out]);
  if (!r.ok) throw new Error(`spider_ex.py failed: ${r.out.split('\n').slice(-3).join(' | ')}`);
  const perItem = JSON.parse(readFileSync(out, 'utf8')) as number[];
  return { correct: perItem.reduce((a, b) => a + b, 0), perItem, seconds: r.seconds };
}

/**
 * BIRD's comparison as bird-bench/mini_dev evaluation_ex.py does it, restated (not copied) for this
 * check: predictions from predict_dev.json split on the separator, gold from dev_gold.sql split on the
 * tab, both run through Python's sqlite3 on the gold's database, `set(pred) == set(gold)`, any exception 0;
 * argv[4] == 'sorted' sorts each row's values by str() first (DAMO-ConvAI PR #159).
 */
const BIRD_HARNESS = `
import json, sqlite3, sys
pred = [v.split('\\t----- bird -----\\t')[0] for v in json.load(open(sys.argv[1])).values()]
gold = [l.strip().split('\\t') for l in open(sys.argv[2])]
out = []
for p, (g, db) in zip(pred, gold):
    try:
        c = sqlite3.connect(sys.argv[3] + '/' + db + '/' + db + '.sqlite')
        pr = c.execute(p).fetchall(); gr = c.execute(g).fetchall(); c.close()
        if sys.argv[4] == 'sorted':
            pr = [tuple(sorted(t, key=lambda x: str(x))) for t in pr]; gr = [tuple(sorted(t, key=lambda x: str(x))) for t in gr]
        out.append(int(set(pr) == set(gr)))
    except Exception:
        out.append(0)
json.dump(out, open(sys.argv[5], 'w'))
`;

function officialBird(files: { pred: string; gold: string }, root: string, sorted: boolean, out: string): Side {
  const r = python(['-c', BIRD_HARNESS, files.pred, files.gold, root, sorted ? 'sorted' : 'plain', out]);
  if (!r.ok) throw new Error(`BIRD harness failed: ${r.out.split('\n').slice(-3).join(' | ')}`);
  const perItem = JSON.parse(readFileSync(out, 'utf8')) as number[];
  return { correct: perItem.reduce((a, b) => a + b, 0), perItem, seconds: r.seconds };
}

async function agro(gold: string, predictions: string[], root: string, opts: Partial<EvaluateOptions> = {}): Promise<Side & { outcomes: string[] }> {
  const ds = readDataset(gold);
  const pool = new SqlPool({ size: 2 });
  const t0 = performance.now();
  try {
    const rep = await evaluate(ds, predictions, pool, { dbRoot: root, mode: 'spider', concurrency: 4, ...opts });
    const perItem = rep.questions.map((q) => (q.outcome === 'match' ? 1 : 0));
    return { correct: rep.summary.correct, perItem, seconds: (performance.now() - t0) / 1000, outcomes: rep.questions.map((q) => `${q.outcome}${q.message ? `: ${q.message}` : ''}`) };
  } finally {
    await pool.close();
  }
}

function compare(label: string, off: Side, ours: Side & { outcomes: string[] }, preds: string[], golds: string[]): number {
  const diff = off.perItem.flatMap((v, i) => (v !== ours.perItem[i] ? [i] : []));
  console.log(
    `${label}: official ${off.correct}/${off.perItem.length} in ${off.seconds.toFixed(1)} s | agro ${ours.correct}/${ours.perItem.length} in ${ours.seconds.toFixed(1)} s | disagreements ${diff.length}`,
  );
  for (const i of diff.slice(0, 5)) {
    console.log(`  #${i} official ${off.perItem[i]} agro ${ours.outcomes[i]}\n    gold: ${golds[i]}\n    pred: ${preds[i]}`);
  }
  return diff.length;
}

export async function run(args: string[]): Promise<void> {
  const suiteDbs = num(args, '--suite-dbs', 30);
  const nVariants = num(args, '--variants', 2);
  const pi = args.indexOf('--parts');
  const parts = new Set((pi >= 0 ? args[pi + 1] ?? '' : 'spider,bird,suite').split(','));
  const probe = python(['-c', 'import sqlparse, tqdm']);
  if (!probe.ok) {
    console.log(`skipped: ${PY} cannot import sqlparse/tqdm (apt-get install -y python3-sqlparse python3-tqdm): ${probe.out.split('\n').pop()}`);
    return;
  }
  if (!existsSync(join(DATA, 'gold.jsonl'))) {
    console.log(`skipped: ${DATA}/gold.jsonl not found`);
    return;
  }
  if (!legacyQuotesAvailable()) {
    console.log(`skipped: ${LEGACY_QUOTES_MISSING}`);
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), 'agro-parity-'));
  let total = 0;
  try {
    const goldPath = join(DATA, 'gold.jsonl');
    const golds = readDataset(goldPath).items.map((it) => it.gold);
    const predPath = join(dir, 'pred.json');
    const pp = python([join(TOOLS, 'perturb_preds.py'), goldPath, predPath, '0']);
    if (!pp.ok) throw new Error(`perturb_preds.py failed: ${pp.out}`);
    const preds = JSON.parse(readFileSync(predPath, 'utf8')) as string[];
    const goldAsPred = join(dir, 'gold-pred.json');
    writeFileSync(goldAsPred, JSON.stringify(golds));
    const root = join(DATA, 'database');
    console.log(`load before: ${loadavg().map((x) => x.toFixed(1)).join(' ')} (shared machine)`);

    if (parts.has('spider')) total += compare('gold vs gold', official(goldPath, goldAsPred, root, join(dir, 'o-gold.json')), await agro(goldPath, golds, root), golds, golds);
    if (parts.has('spider')) total += compare('perturbed (seed 0)', official(goldPath, predPath, root, join(dir, 'o-pred.json')), await agro(goldPath, preds, root), preds, golds);

    // BIRD: the same gold and predictions in BIRD's own files, scored by agro --mode bird (read back from
    // those files) and by the official comparison in Python, plain and with PR #159's sorted rows.
    const birdDir = join(dir, 'bird');
    mkdirSync(birdDir);
    const ds = readDataset(goldPath);
    const files = writeBirdFiles(birdDir, ds.items, preds);
    const birdGold = readDataset(files.gold);
    const birdPreds = readPredictions(files.pred, birdGold.items);
    const birdGolds = birdGold.items.map((it) => it.gold);
    for (const sorted of parts.has('bird') ? [false, true] : []) {
      total += compare(
        `BIRD files, perturbed, --mode bird${sorted ? ' --bird-sorted-rows' : ''}`,
        officialBird(files, root, sorted, join(dir, `o-bird-${sorted}.json`)),
        await agro(files.gold, birdPreds, root, { mode: 'bird', birdSortedRows: sorted }),
        birdPreds,
        birdGolds,
      );
    }

    // Test suite: the first N databases, each folder = original + K variants built by agro's augmentation.
    const items = readFileSync(goldPath, 'utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l) as { db_id: string; query: string });
    const ids = parts.has('suite') ? [...new Set(items.map((r) => r.db_id))].slice(0, suiteDbs) : [];
    const suiteRoot = join(dir, 'suite');
    const t0 = performance.now();
    for (const id of ids) {
      const src = join(root, id, `${id}.sqlite`);
      mkdirSync(join(suiteRoot, id), { recursive: true });
      symlinkSync(src, join(suiteRoot, id, `${id}.sqlite`));
      const schema = introspectSchema(src);
      await buildVariants(src, schema, buildSchemaGraph(schema), { count: nVariants, seed: 1, dir: join(suiteRoot, id) });
    }
    if (ids.length > 0) console.log(`test suite: ${ids.length} databases x (1 + ${nVariants} variants) built in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    const keep = items.flatMap((r, i) => (ids.includes(r.db_id) ? [i] : []));
    const subGold = join(dir, 'suite-gold.jsonl');
    writeFileSync(subGold, keep.map((i) => JSON.stringify(items[i])).join('\n') + '\n');
    const subPreds = keep.map((i) => preds[i]);
    const subPredPath = join(dir, 'suite-pred.json');
    writeFileSync(subPredPath, JSON.stringify(subPreds));
    if (ids.length > 0) total += compare(
      `test suite, perturbed (${keep.length} questions)`,
      official(subGold, subPredPath, suiteRoot, join(dir, 'o-suite.json')),
      await agro(subGold, subPreds, suiteRoot),
      subPreds,
      keep.map((i) => items[i].query),
    );
    console.log(`load after: ${loadavg().map((x) => x.toFixed(1)).join(' ')}`);
    console.log(`total disagreements: ${total} (goal 0)`);
  } finally {
    if (args.includes('--keep')) console.log(`kept ${dir}`);
    else rmSync(dir, { recursive: true, force: true });
  }
  if (total > 0) process.exitCode = 1;
}
