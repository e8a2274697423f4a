import type { Command } from 'commander';
import { parseWith } from '../../errors.ts';
import { printErr, printOut } from '../print.ts';
import { PRESET_NAMES, type PresetName } from '../../model/config.ts';
import { pretrainConfigSchema, runPretrain, type PretrainConfigInput } from '../../pipeline/pretrain.ts';
import { LIMITS, numberArg, seedArg } from '../options.ts';
import { prepareOutDir } from '../out-path.ts';
import { stepBar, type StepBar } from '../progress.ts';

interface PretrainCliOptions {
  dbs: string[];
  out: string;
  pairs?: number;
  heldOutDbs?: number;
  preset?: PresetName;
  vocabSize?: number;
  steps?: number;
  batchSize?: number;
  lr?: number;
  evalEvery?: number;
  checkpointEvery?: number;
  schemaChars?: number;
  seed?: number;
  gold?: string;
  respell?: number;
  init?: string;
  backend?: 'wasm' | 'cpu';
  json?: boolean;
}

export function register(program: Command): void {
  program
    .command('pretrain')
    .description('A base model from many databases: the factory on each, agent episodes in the grounded prompt, one tokenizer, SFT from scratch (resumes: rerun the same command)')
    .requiredOption('--dbs <dir...>', 'folders of databases laid out as <dir>/<db_id>/<db_id>.sqlite')
    .option('--out <dir>', 'run directory', 'runs/pretrain')
    .option('--pairs <n>', 'verified pairs per database (default 300)', numberArg('--pairs', { min: 10, max: 5000 }))
    .option('--held-out-dbs <n>', 'databases held out whole for the validation loss (default 4)', numberArg('--held-out-dbs', { min: 0 }))
    .option('--preset <name>', `model size: ${PRESET_NAMES.join(', ')} (default base)`)
    .option('--vocab-size <n>', 'tokenizer size (default 4096)', numberArg('--vocab-size', { min: 300, max: LIMITS.vocab }))
    .option('--steps <n>', 'optimizer steps (default 4000)', numberArg('--steps', { min: 1, max: LIMITS.steps }))
    .option('--batch-size <n>', 'sequences per step (default 16)', numberArg('--batch-size', { min: 1, max: LIMITS.batch }))
    .option('--lr <x>', 'peak learning rate (default 3e-3)', numberArg('--lr', { integer: false, positive: true, max: 1 }))
    .option('--eval-every <n>', 'held-out loss every N steps (default 500)', numberArg('--eval-every', { min: 0, max: LIMITS.every }))
    .option('--checkpoint-every <n>', 'checkpoint every N steps (default 500)', numberArg('--checkpoint-every', { min: 1, max: LIMITS.every }))
    .option('--schema-chars <n>', 'schema characters in the grounded prompt (default 600)', numberArg('--schema-chars', { min: 200 }))
    .option('--seed <n>', 'seed', seedArg())
    .option('--respell <share>', 'share of training episodes whose table and column names are respelled (case, snake/camel, plural, prefix) everywhere but the question, so names are copied from the prompt (default 0)', numberArg('--respell', { integer: false, min: 0, max: 1 }))
    .option('--init <checkpoint>', 'start from this checkpoint (or base) instead of a new model: its weights and tokenizer')
    .option('--gold <file.jsonl>', "human gold SQL (JSON lines with db_id and query) asked in the factory's words; queries that survive its round trip become extra episodes of their database (default: none)")
    .option('--backend <name>', 'TensorFlow.js backend: wasm or cpu (default: $AGRO_BACKEND or wasm)')
    .option('--json', 'print the report as JSON and no progress')
    .action(async (o: PretrainCliOptions) => {
      const cfg: PretrainConfigInput = { dbs: o.dbs, out: o.out };
      for (const k of ['pairs', 'heldOutDbs', 'preset', 'vocabSize', 'steps', 'batchSize', 'lr', 'evalEvery', 'checkpointEvery', 'schemaChars', 'seed', 'gold', 'respell', 'init', 'backend'] as const) {
        if (o[k] !== undefined) (cfg as Record<string, unknown>)[k] = o[k];
      }
      // The whole configuration and the run directory are checked before any database is read.
      parseWith(pretrainConfigSchema, cfg, 'pretrain config');
      prepareOutDir({ flag: '--out', path: o.out }, []);
      const controller = new AbortController();
      const onSigint = (): void => controller.abort();
      process.once('SIGINT', onSigint);
      let bar: StepBar | undefined;
      try {
        const report = await runPretrain(cfg, {
          log: o.json ? undefined : (line) => printErr(line + '\n'),
          onStep: (m, total) => {
            bar ??= stepBar(!o.json, 'pretrain', total, { start: m.step - 1, format: 'loss {loss} | {tps} tok/s' });
            bar.update(m.step, { loss: m.loss.toFixed(3), tps: m.tokens_per_s });
          },
          signal: controller.signal,
        });
        bar?.stop();
        if (o.json) process.stdout.write(JSON.stringify(report) + '\n');
        else if (report.model) printOut(`base model: ${report.model}\nuse it: agro quickstart --db <your.sqlite> --from ${report.model}, or agro ask --policy ${report.model} --db <your.sqlite> "<question>"\n`);
        if (report.sft && report.sft.steps < report.config.steps) process.exitCode = 130;
      } finally {
        process.removeListener('SIGINT', onSigint);
      }
    });
}
