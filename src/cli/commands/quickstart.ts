import type { Command } from 'commander';
import { resolveQuickstartConfig, runQuickstart, SMALL_QUICKSTART, type QuickstartConfigInput } from '../../pipeline/quickstart.ts';
import { seedArg } from '../options.ts';
import { prepareOutDir } from '../out-path.ts';
import { stageBars, stepBar, type StepBar } from '../progress.ts';
import { printOut } from '../print.ts';

interface QuickstartCliOptions {
  db?: string;
  docs?: string;
  out?: string;
  small?: boolean;
  seed?: number;
  algo?: string;
  from?: string;
  json?: boolean;
}

export function register(program: Command): void {
  program
    .command('quickstart')
    .description('The main job on one database: synthesize data → cold-start SFT from the built-in base model → GRPO → evaluate.')
    .option('--db <path>', 'SQLite database or postgres:// URL (default: the bundled music_store)')
    .option('--docs <path>', "the database's documentation: BIRD's database_description/ CSVs, a Spider/KaggleDBQA tables.json or agro's JSON (default: found beside the database)")
    .option('--out <dir>', 'run directory (default: runs/quickstart, or runs/quickstart-small with --small)')
    .option('--small', 'a CI-sized run: tiny model, few pairs and steps (a couple of minutes)')
    .option('--from <model>', 'start from: base (the built-in base model; default), scratch (a new model trained on this database only) or a checkpoint folder')
    .option('--algo <name>', 'RL algorithm preset (default grpo)')
    .option('--seed <n>', 'seed', seedArg())
    .option('--json', 'print the report as JSON instead of progress lines')
    .action(async (o: QuickstartCliOptions) => {
      const cfg: QuickstartConfigInput = o.small ? { ...SMALL_QUICKSTART, out: 'runs/quickstart-small' } : {};
      if (o.db) cfg.db = o.db;
      if (o.docs) cfg.docs = o.docs;
      if (o.out) cfg.out = o.out;
      if (o.algo) cfg.algo = o.algo;
      if (o.from) cfg.from = o.from;
      if (o.seed !== undefined) cfg.seed = o.seed;
      // The whole configuration and the run directory are checked before the first stage runs.
      const resolved = resolveQuickstartConfig(cfg);
      prepareOutDir({ flag: '--out', path: resolved.out }, [{ flag: '--db', path: resolved.db }]);
      const controller = new AbortController();
      const onSigint = (): void => controller.abort();
      process.once('SIGINT', onSigint);
      const t0 = performance.now();
      const show = !o.json;
      const formats = { sft: 'loss {loss} | {tps} tok/s', rl: 'reward {reward} | acc {acc} | tool calls {calls}' };
      const bars: Partial<Record<'sft' | 'rl', StepBar>> = {};
      try {
        const report = await runQuickstart(cfg, {
          log: show ? (line) => printOut(line + '\n') : undefined,
          factoryProgress: stageBars(show),
          onStep: (stage, step, total, fields) => {
            const bar = (bars[stage] ??= stepBar(show, `      ${stage}`, total, { start: step - 1, format: formats[stage] }));
            bar.update(step, fields);
            if (step >= total) bar.stop();
          },
          signal: controller.signal,
        });
        if (o.json) process.stdout.write(JSON.stringify(report) + '\n');
        else printOut(`quickstart finished in ${((performance.now() - t0) / 60000).toFixed(1)} min\n`);
      } finally {
        process.removeListener('SIGINT', onSigint);
      }
    });
}
