import type { Command } from 'commander';
import { z } from 'zod';
import { AgroError } from '../../errors.ts';
import { LIMITS, parseCliOptions, synthOptionsSchema } from '../options.ts';
import { prepareOutDir } from '../out-path.ts';
import { runFactory } from '../../factory/pipeline.ts';
import { FOLLOW_UP_SHARE } from '../../factory/follow-up.ts';
import { documentationOf } from '../../prompt/sources.ts';
import { dirname, join } from 'node:path';
import { stageBars } from '../progress.ts';
import type { SynthPair } from '../../factory/types.ts';
import { createExecutor, introspectDatabase } from '../../sql/executor.ts';
import { MEMORY_RECIPE } from '../../factory/memory-recipe.ts';
import { buildMemory } from '../../memory/build.ts';
import { MEMORY_STORE, pairsOfDataset } from '../../memory/entry.ts';
import { writeMemory } from '../../memory/store.ts';
import type { SqlExecutor } from '../../sql/types.ts';
import { printOut, printErr } from '../print.ts';

/** How the summary names each way a question was worded (manifest.grammar). */
const GRAMMAR_WORDS: Record<string, string> = { intent: 'as people ask', general: 'template sentences', llm: 'written by the LLM' };

const optionsSchema = synthOptionsSchema.extend({
  n: z.coerce.number().int().min(1).max(1_000_000),
  variants: z.coerce.number().int().min(0).max(20),
  cycles: z.coerce.number().int().min(0).max(20),
  llmUrl: z.string().optional(),
  llmModel: z.string().optional(),
  timeout: z.coerce.number().int().positive().max(LIMITS.timeoutMs),
  strict: z.boolean().optional(),
  templates: z.string().optional(),
  people: z.coerce.number().min(0).max(1),
  phrasings: z.coerce.number().int().min(1).max(8),
  noise: z.coerce.number().min(0).max(1),
  mix: z.enum(['human', 'even']),
  docs: z.string().min(1).optional(),
  followUps: z.coerce.number().min(0).max(1).optional(),
});

/** "projection=6,count=2" -> { projection: 6, count: 2 }. */
function parseWeights(spec: string | undefined): Record<string, number> | undefined {
  if (!spec) return undefined;
  const out: Record<string, number> = {};
  for (const part of spec.split(',')) {
    const m = /^\s*([A-Za-z]+)\s*=\s*(\d+(?:\.\d+)?)\s*$/.exec(part);
    if (!m) throw new AgroError('usage', `synth: --templates wants name=weight,... (got "${part}")`);
    out[m[1]] = Number(m[2]);
  }
  return out;
}

function parseOptions(raw: unknown): z.infer<typeof optionsSchema> {
  const o = parseCliOptions(optionsSchema, raw, 'synth');
  if (Boolean(o.llmUrl) !== Boolean(o.llmModel)) throw new AgroError('usage', 'synth: --llm-url and --llm-model go together');
  prepareOutDir({ flag: '--out', path: o.out }, [{ flag: '--db', path: o.db }]);
  return o;
}

const cell = (v: unknown) => (v === null ? 'NULL' : v instanceof Uint8Array ? `<${v.length} bytes>` : String(v).slice(0, 40));

async function showExample(exec: SqlExecutor, db: string, p: SynthPair): Promise<string> {
  const r = await exec.execute(db, p.sql, { maxRows: 3 });
  const rows = r.ok ? r.rows.map((row) => `    | ${row.map(cell).join(' | ')}`).join('\n') : `    (error: ${r.message})`;
  return [`[${p.difficulty}, ${p.style}, ${p.provenance.template}] ${p.question}`, `  evidence: ${p.evidence || '-'}`, `  SQL: ${p.sql}`, rows].join('\n');
}

async function run(raw: unknown): Promise<void> {
  const o = parseOptions(raw);
  // The factory's own queries (src/sql/pg-role.ts): the owner's URL is fine here.
  const exec = createExecutor({ size: 2, allowPrivilegedRole: true });
  try {
    const quiet = Boolean(o.json) || !process.stderr.isTTY;
    // As the quickstart reads it: the file named, else what is found beside a SQLite file or a server's COMMENTs.
    const docs = await documentationOf(o.db, o.docs);
    const r = await runFactory(
      { db: o.db, out: o.out, n: o.n, seed: o.seed, variants: o.variants, cycles: o.cycles, llmUrl: o.llmUrl, llmModel: o.llmModel, timeoutMs: o.timeout, templateWeights: parseWeights(o.templates), people: o.people, phrasings: o.phrasings, noise: o.noise, ...(docs ? { docs } : {}), ...(o.mix === 'even' ? { shapes: {} } : {}), ...(o.followUps !== undefined ? { followUps: o.followUps } : {}) },
      { executor: exec, progress: stageBars(!quiet), log: (line) => printErr(`agro: ${line}\n`) },
    );
    const m = r.manifest;
    // The memory the answer path consults: every verified pair, beside the dataset.
    const memoryPath = join(o.out, MEMORY_STORE);
    writeMemory(memoryPath, await buildMemory(r.manifest.dbId, await introspectDatabase(o.db), pairsOfDataset(r.rows), exec, o.db));
    // Fewer pairs than asked is said on one line (stderr), and is an error under --strict.
    if (m.shortfall && o.strict) throw new AgroError('invalid_input', `synth --strict: ${m.shortfall}`);
    if (m.shortfall) printErr(`agro: warning: ${m.shortfall}\n`);
    if (o.json) {
      printOut(
        JSON.stringify({ dataset: r.datasetPath, manifest: r.manifestPath, rows: m.rows, shortfall: m.shortfall ?? null, difficulty: m.difficulty, grammar: m.grammar, followUps: m.followUps, stages: m.stages, skipped: m.skipped, unused: m.unused, variants: m.variants }) + '\n',
      );
      return;
    }
    const lines = [`wrote ${m.rows} pairs to ${r.datasetPath} (and the memory the answer path consults, ${memoryPath})`];
    for (const s of m.stages) {
      const rej = Object.entries(s.rejected)
        .sort((a, b) => b[1] - a[1])
        .map(([k, v]) => `${k}=${v}`)
        .join(' ');
      lines.push(`  ${s.stage.padEnd(11)} ${String(s.in).padStart(6)} -> ${String(s.out).padEnd(6)}${s.resumed ? ' (resumed)' : ''} ${rej}`);
    }
    lines.push(`  difficulty: ${Object.entries(m.difficulty).map(([k, v]) => `${k} ${v}`).join(', ')}`);
    const fu = Object.values(m.followUps).reduce((a, b) => a + b, 0);
    if (fu) lines.push(`  follow-ups: ${fu} (${Object.entries(m.followUps).sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${v}`).join(', ')}), each with the question it continues`);
    lines.push(`  questions: ${Object.entries(m.grammar).sort((a, b) => b[1] - a[1]).map(([k, v]) => `${GRAMMAR_WORDS[k] ?? k} ${v}`).join(', ')}`);
    lines.push(`  variants: ${m.variants.length} in ${m.variants.length ? m.variants[0].replace(/\/[^/]+$/, '') : '-'} (caught ${m.caughtByVariants} pairs the original alone accepted)`);
    for (const s of m.skipped) lines.push(`  skipped ${s.what}: ${s.why}`);
    const unusedTables = m.unused.filter((u) => u.what.startsWith('table '));
    const unusedColumns = m.unused.length - unusedTables.length;
    if (m.unused.length) lines.push(`  unused: ${unusedTables.length} tables, ${unusedColumns} columns (reasons in ${r.manifestPath})`);
    printOut(lines.join('\n') + '\n');
    // The next step of the own-database path (README): a cold start of the base model on this data.
    printOut(`next: agro sft --data ${o.out} --init base --out ${o.out}-sft\nsee it: agro dashboard ${dirname(o.out)}\n`);
    if (o.show > 0) {
      const shown: string[] = [];
      for (const p of r.pairs.slice(0, o.show)) shown.push(await showExample(exec, r.manifest.db, p));
      printOut('\n' + shown.join('\n\n') + '\n');
    }
  } finally {
    await exec.close();
  }
}

export function register(program: Command): void {
  program
    .command('synth')
    .description('Synthesize verified, aligned text-to-SQL pairs (and variant databases) from a SQLite database')
    .requiredOption('--db <path>', 'SQLite database file or postgres:// URL')
    .requiredOption('--out <dir>', 'output directory (dataset.jsonl, manifest.json, variants/)')
    .option('--n <count>', 'pairs wanted (the memory recipe: src/factory/memory-recipe.ts)', String(MEMORY_RECIPE.pairs))
    .option('--seed <n>', 'random seed', '0')
    .option('--variants <count>', 'variant databases to build (a pair must hold on each)', String(MEMORY_RECIPE.variants))
    .option('--cycles <k>', 'generate-then-check refinement cycles', '0')
    .option('--llm-url <url>', 'OpenAI-compatible endpoint for question synthesis and audit')
    .option('--llm-model <name>', 'model name at --llm-url')
    .option('--show <count>', 'print this many examples with a few result rows', '0')
    .option('--timeout <ms>', 'per-query time limit', '5000')
    .option('--json', 'print a JSON summary instead of text (no progress bars)')
    .option('--templates <weights>', 'relative weight of synthesis templates, e.g. groupAgg=8,setOperation=0')
    .option('--strict', 'exit with an error (code 4) when fewer than --n pairs could be written')
    .option('--mix <name>', "query shapes: 'human' (the shares people ask, from Spider's train gold) or 'even'", 'human')
    .option('--people <share>', "share of questions asked in people's variety (other frames, adjectives, values as typed, synonyms)", '0.5')
    .option('--phrasings <k>', 'questions per query: the question and up to k-1 paraphrases, each parsed back to it', String(MEMORY_RECIPE.phrasings))
    .option('--docs <path>', "the database's documentation (BIRD database_description/, a tables.json, agro's JSON): columns worded by their documented names, codes by their meaning (default: the documentation found beside a SQLite file, a PostgreSQL database's COMMENTs)")
    .option('--follow-ups <share>', `share of the --n pairs that are follow-ups: an edit of a kept query (a filter, a limit, an order, a column) asked as the next turn of a conversation, with the question it continues (default ${FOLLOW_UP_SHARE})`)
    .option('--noise <share>', 'share of questions given train-time noise (case, punctuation, a typo) after their check', '0')
    .action(run);
}
