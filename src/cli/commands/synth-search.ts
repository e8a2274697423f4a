import type { Command } from 'commander';
import { join } from 'node:path';
import { z } from 'zod';
import { parseCliOptions, synthOptionsSchema } from '../options.ts';
import { prepareOutDir } from '../out-path.ts';
import { SearchCorpus } from '../../search/corpus.ts';
import { SYNTH_DEFAULTS, synthesize, type SearchQuestion } from '../../search/synthesize.ts';
import { writeFileAtomic, writeJsonAtomic } from '../../util/fs.ts';
import { printOut } from '../print.ts';

const optionsSchema = synthOptionsSchema.extend({
  n: z.coerce.number().int().min(1).max(100000),
  maxHops: z.coerce.number().int().min(1).max(3),
});

function parseOptions(raw: unknown): z.infer<typeof optionsSchema> {
  const o = parseCliOptions(optionsSchema, raw, 'synth-search');
  prepareOutDir({ flag: '--out', path: o.out }, [{ flag: '--db', path: o.db }]);
  return o;
}

function showQuestion(q: SearchQuestion): string {
  return [
    `[${q.hops} hop${q.hops > 1 ? 's' : ''}, ${q.split}] ${q.question}`,
    `  answer: ${q.answer}${q.aliases.length ? `  (also: ${q.aliases.join(' | ')})` : ''}`,
    `  chain:  ${q.chain.join(' → ')}`,
  ].join('\n');
}

function run(raw: unknown): void {
  const o = parseOptions(raw);
  const t0 = Date.now();
  const r = synthesize(o.db, { n: o.n, seed: o.seed, maxHops: o.maxHops });
  // Build the index once so a corpus that cannot be indexed fails here, not at training time.
  const corpus = new SearchCorpus(r.docs);
  corpus.save(join(o.out, 'corpus.jsonl'));
  writeFileAtomic(join(o.out, 'questions.jsonl'), r.questions.map((q) => JSON.stringify(q) + '\n').join(''));
  const byHops: Record<string, number> = {};
  const bySplit: Record<string, number> = { train: 0, heldout: 0 };
  for (const q of r.questions) {
    byHops[q.hops] = (byHops[q.hops] ?? 0) + 1;
    bySplit[q.split]++;
  }
  const manifest = {
    dbId: r.dbId,
    db: o.db,
    seed: o.seed,
    requested: o.n,
    maxHops: o.maxHops,
    documents: corpus.size,
    questions: r.questions.length,
    byHops,
    bySplit,
    skipped: r.skipped,
    attempts: r.attempts,
    files: { corpus: 'corpus.jsonl', questions: 'questions.jsonl' },
  };
  writeJsonAtomic(join(o.out, 'manifest.json'), manifest);
  if (o.json) {
    process.stdout.write(JSON.stringify({ ...manifest, examples: r.questions.slice(0, o.show) }, null, 2) + '\n');
    return;
  }
  const hops = Object.entries(byHops)
    .map(([h, c]) => `${h}-hop ${c}`)
    .join(', ');
  const skips = Object.entries(r.skipped)
    .map(([k, c]) => `${k} ${c}`)
    .join(', ');
  printOut(
    `${r.dbId}: ${corpus.size} documents, ${r.questions.length}/${o.n} questions (${hops}; train ${bySplit.train}, held-out ${bySplit.heldout}) in ${Date.now() - t0} ms\n` +
      `skipped chains: ${skips || 'none'}\n`,
  );
  for (const q of r.questions.slice(0, o.show)) printOut(showQuestion(q) + '\n');
  printOut(`written to ${o.out}/{corpus.jsonl,questions.jsonl,manifest.json}\n`);
}

export function register(program: Command): void {
  program
    .command('synth-search')
    .description('Entity documents and multi-hop questions from a SQLite database, for training a search agent')
    .requiredOption('--db <path>', 'SQLite database file')
    .requiredOption('--out <dir>', 'output folder for corpus.jsonl, questions.jsonl, manifest.json')
    .option('--n <count>', 'questions to synthesize', String(SYNTH_DEFAULTS.n))
    .option('--seed <n>', 'random seed', String(SYNTH_DEFAULTS.seed))
    .option('--max-hops <n>', 'most documents a question needs (1-3)', String(SYNTH_DEFAULTS.maxHops))
    .option('--show <n>', 'print this many questions with their chains', '5')
    .option('--json', 'print the manifest (and shown questions) as JSON')
    .action((opts: unknown) => run(opts));
}
