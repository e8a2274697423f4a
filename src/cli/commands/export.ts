import type { Command } from 'commander';
import { resolveModelPath } from '../../model/builtin.ts';
import { AgroError } from '../../errors.ts';
import { initBackend } from '../../model/backend.ts';
import { loadCheckpoint } from '../../model/checkpoint.ts';
import { exportGguf } from '../../model/gguf.ts';
import { resolve } from 'node:path';
import { z } from 'zod';
import { parseCliOptions } from '../options.ts';
import { resolveTaskSource, tasksFromCatalog } from '../../agent/tasks.ts';
import { SqlEnvironment } from '../../agent/sql-env.ts';
import { promptContract } from '../../prompt/contract.ts';
import { addPromptOptions, envDepsFromCli, promptFromCli } from '../prompt-options.ts';
import { exportRow, splitRows, taskSqls } from '../../agent/export.ts';
import { EXPORT_FORMATS, writeExport } from '../../data/export-formats.ts';
import { createExecutor } from '../../sql/executor.ts';
import { prepareOutDir, prepareOutFile } from '../out-path.ts';
import { printOut } from '../print.ts';

/**
 * `agro export --format trl|verl`: a factory output or any BIRD/Spider file as training data for TRL
 * (JSONL chat prompts + reward columns) or verl (train/val parquet with tool kwargs).
 */
const optionsSchema = z.object({
  format: z.enum(EXPORT_FORMATS, { error: `give --format ${EXPORT_FORMATS.join(' or ')} (or: agro export gguf CHECKPOINT OUT.gguf)` }),
  data: z.string({ error: 'give --data (a factory output folder or a BIRD/Spider file)' }).min(1),
  out: z.string({ error: 'give --out <dir>' }).min(1),
  dbRoot: z.string().min(1).optional(),
  variants: z.string().min(1).optional(),
  val: z.coerce.number().min(0).max(0.9),
  seed: z.coerce.number().int().min(0),
  schemaChars: z.coerce.number().int().min(200).optional(),
  promptFrom: z.string().min(1).optional(),
  maxTurns: z.coerce.number().int().min(1).optional(),
  schemaFormat: z.enum(['grounded', 'ddl']).optional(),
  valueHints: z.coerce.number().int().min(0).max(50).optional(),
  docs: z.union([z.string().min(1), z.literal(false)]).optional(),
  limit: z.coerce.number().int().min(1).optional(),
  json: z.boolean().optional(),
});

async function runExport(raw: unknown): Promise<void> {
  const o = parseCliOptions(optionsSchema, raw, 'export');
  prepareOutDir({ flag: '--out', path: o.out }, [{ flag: '--data', path: o.data }]);
  const source = resolveTaskSource(o.data, { dbRoot: o.dbRoot, variants: o.variants });
  let tasks = tasksFromCatalog(source.dataPath, source.catalog);
  if (o.limit !== undefined) tasks = tasks.slice(0, o.limit);
  // The environment only renders prompts here; the pool starts no process until a query runs.
  const pool = createExecutor({ size: 1 });
  try {
    // Prompts as the policy to be trained reads them: --prompt-from's contract, then the flags.
    const env = new SqlEnvironment(pool, promptFromCli(null, o), envDepsFromCli(o));
    // A server's schema, docs and values are read once per database before the prompts are made.
    await env.prepareAll(tasks.map((t) => t.dbPath));
    const rows = tasks.map((t) => exportRow(env, t));
    const sqls = new Map(rows.map((r, i) => [r, taskSqls(tasks[i])]));
    const splits = splitRows(rows, o.val, o.seed, (r) => sqls.get(r) ?? r.goldSql);
    const result = writeExport(o.format, o.out, splits, {
      version: 1,
      source: resolve(source.dataPath),
      databases: source.catalog.describe,
      seed: o.seed,
      valFraction: o.val,
      schemaChars: env.config.schemaChars,
      prompt: promptContract(env.config),
    });
    if (o.json) process.stdout.write(JSON.stringify(result) + '\n');
    else printOut(`${o.format}: ${result.train} train + ${result.val} val rows → ${result.files.join(', ')}\n`);
  } finally {
    await pool.close();
  }
}

export function register(program: Command): void {
  const exp = program
    .command('export')
    .description('Write a dataset for TRL (JSONL chat prompts) or verl (train/val parquet with tool kwargs); `export gguf` writes a checkpoint for llama.cpp')
    .option('--format <name>', `target engine: ${EXPORT_FORMATS.join(' or ')}`)
    .option('--data <path>', 'a factory output folder (agro synth --out) or a BIRD/Spider JSON/JSONL file')
    .option('--out <dir>', 'output folder (train/val files and export.json)')
    .option('--db-root <dir>', 'databases as <dir>/<db_id>/<db_id>.sqlite (not needed for a factory output)')
    .option('--variants <dir>', 'variant databases as <dir>/<db_id>/*.sqlite (default for a factory output: its variants/)')
    .option('--val <fraction>', 'fraction of rows held out as the val split', '0.1')
    .option('--seed <n>', 'seed of the train/val split', '0')
    .option('--limit <n>', 'export only the first n rows')
    .option('--json', 'print the result as JSON');
  addPromptOptions(exp, { from: true }).action(async (opts: unknown) => runExport(opts));
  exp
    .command('gguf')
    .description('An f32 GGUF for llama.cpp (and LM Studio, Ollama, node-llama-cpp) with the chat template and end-of-turn token in its metadata')
    .argument('<checkpoint>', 'checkpoint folder, or base (the built-in base model)')
    .argument('<out>', 'output .gguf file')
    .action(async (given: string, out: string) => {
      const ckpt = resolveModelPath(given);
      if (!/\.gguf$/i.test(out)) throw new AgroError('usage', `export gguf: the output file must end in .gguf, got ${out}`);
      prepareOutFile({ flag: 'export gguf: <out>', path: out }, [{ flag: '<checkpoint>', path: ckpt }]);
      await initBackend();
      const ck = loadCheckpoint(ckpt);
      try {
        const { bytes } = exportGguf(ck.model, ck.tokenizer, out);
        printOut(`wrote ${out} (${(bytes / 1e6).toFixed(1)} MB)\n`);
      } finally {
        ck.model.dispose();
      }
    });
}
