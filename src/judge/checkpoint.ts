/**
 * A judge on disk: `weights.safetensors` (one F32 tensor of the hashed feature space), `config.json` (what
 * featurizer and feature space the weights mean, the temperature, the training report) and a card. A judge made
 * by another featurizer or of another size is refused (exit 4): its weights would be read as other features.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { AgroError } from '../errors.ts';
import { readSafetensors, writeSafetensors } from '../model/safetensors.ts';
import { readJsonFile, writeFileAtomic, writeJsonAtomic } from '../util/fs.ts';
import type { Evaluation, TrainReport } from './train.ts';
import { FEATURE_BITS, FEATURE_DIM, FEATURIZER_VERSION } from './features.ts';
import { JudgeModel } from './model.ts';

export const JUDGE_WEIGHTS = 'weights.safetensors';
export const JUDGE_CONFIG = 'config.json';

export const judgeConfigFileSchema = z.looseObject({
  kind: z.literal('agro-judge'),
  featurizer: z.number().int(),
  bits: z.number().int(),
  temperature: z.number().positive(),
});

export function writeJudge(dir: string, model: JudgeModel, report: JudgeReport): void {
  mkdirSync(dir, { recursive: true });
  writeFileAtomic(join(dir, 'README.md'), judgeCard(report));
  writeSafetensors(join(dir, JUDGE_WEIGHTS), new Map([['weights', { shape: [FEATURE_DIM], data: model.weights }]]), { featurizer: String(FEATURIZER_VERSION) });
  writeJsonAtomic(join(dir, JUDGE_CONFIG), { kind: 'agro-judge', featurizer: FEATURIZER_VERSION, bits: FEATURE_BITS, temperature: model.temperature, report });
}

/** Whether a folder holds a judge (its config), mismatched or not. */
export function hasJudge(dir: string): boolean {
  return existsSync(join(dir, JUDGE_CONFIG));
}

/** What a pretraining run says of the judge it made (config.json's report, and the card). */
export type JudgeReport = TrainReport & { databases: { train: number; validation: number }; memoryPairs: number; memoryVariants?: number; made: string; command: string };

function readConfig(dir: string): z.infer<typeof judgeConfigFileSchema> {
  const path = join(dir, JUDGE_CONFIG);
  if (!existsSync(path)) throw new AgroError('not_found', `no judge in ${dir} (${JUDGE_CONFIG} missing)`);
  const parsed = judgeConfigFileSchema.safeParse(readJsonFile(path, 'judge config'));
  if (!parsed.success) throw new AgroError('invalid_input', `${path} is not an agro judge config (kind "agro-judge", featurizer, bits, temperature)`);
  return parsed.data;
}

export function readJudgeReport(dir: string): unknown {
  return readConfig(dir).report ?? null;
}

export function readJudge(dir: string): JudgeModel {
  const c = readConfig(dir);
  if (c.featurizer !== FEATURIZER_VERSION || c.bits !== FEATURE_BITS) {
    throw new AgroError('invalid_input', `the judge in ${dir} was made for featurizer ${c.featurizer} with 2^${c.bits} features; this agro reads featurizer ${FEATURIZER_VERSION} with 2^${FEATURE_BITS} (run agro judge pretrain again)`);
  }
  const t = readSafetensors(join(dir, JUDGE_WEIGHTS)).tensors.get('weights');
  if (!t || t.data.length !== FEATURE_DIM) throw new AgroError('invalid_input', `${join(dir, JUDGE_WEIGHTS)} has no weights tensor of ${FEATURE_DIM} values`);
  return new JudgeModel(t.data, c.temperature);
}

const pct = (x: number): string => `${(100 * x).toFixed(1)}%`;
const row = (name: string, e: Evaluation): string => `| ${name} | ${e.lists} | ${pct(e.oracle)} | ${pct(e.transparent)} | ${pct(e.judge)} | ${e.oracle > 0 ? (e.judge / e.oracle).toFixed(2) : '-'} |`;

/** The judge's card: what it is, what it was made from, its figures on held-out databases, and the command that remakes it. */
export function judgeCard(r: JudgeReport): string {
  return [
    '# agro judge',
    '',
    "The learned judge of the answer path's candidates (its probability is the answer's confidence; it chooses with `--chooser judge`): one weight per hashed feature of a (question, candidate SQL, the factory's reading of it, its result's shape) pair, a logit per candidate and one for \"none of these\", the chosen result's probability calibrated by a temperature (src/judge). Made by agro's code from the Spider training databases alone; no human question was read.",
    '',
    `Made ${r.made} by \`${r.command}\` (${r.seconds} s of training after the lists were collected).`,
    '',
    '## Data',
    '',
    `- ${r.databases.train + r.databases.validation} Spider training databases with candidate lists; ${r.databases.validation} held out whole (by a hash of their names) to choose the epoch, fit the temperature and give the figures below; ${r.databases.train} trained on (${r.trainLists} lists).`,
    `- Each database: a memory of ${r.memoryPairs} factory pairs (as \`agro synth\` builds them${r.memoryVariants === undefined ? '' : r.memoryVariants === 0 ? ', without the check on variant databases' : `, checked on ${r.memoryVariants} variant databases`}), then questions asked through the answer path with no policy: its human gold SQL worded by the factory (factory/gold.ts) and factory pairs held out of the memory. Each candidate labelled by execution against the gold, as Spider's evaluator compares results.`,
    '',
    '## Figures (held-out databases)',
    '',
    '| questions | lists | some candidate right | transparent ranker | judge | judge / oracle |',
    '|---|---|---|---|---|---|',
    row('all', r.validation),
    ...Object.entries(r.byOrigin).map(([k, e]) => row(k, e)),
    '',
    `Temperature ${r.temperature}; expected calibration error ${r.validation.ece.toFixed(3)}. Reliability (the chosen result's probability → how often it was right):`,
    '',
    '| probability | questions | mean probability | right |',
    '|---|---|---|---|',
    ...r.validation.reliability.map((b) => `| ${b.from.toFixed(1)}–${(b.from + 0.1).toFixed(1)} | ${b.count} | ${b.confidence.toFixed(2)} | ${pct(b.accuracy)} |`),
    '',
    `Epochs: ${r.epochs.map((e) => `${e.epoch}: loss ${e.loss.toFixed(3)}, held-out ${pct(e.validation)}`).join('; ')} (kept: ${r.bestEpoch}).`,
    '',
  ].join('\n');
}
