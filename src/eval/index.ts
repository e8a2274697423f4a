/**
 * The evaluation module's public surface (`agro/eval`): dataset and prediction readers, database layout,
 * `evaluate` (execution accuracy as BIRD and Spider compute it) and its reports.
 *
 * @module agro/eval
 */
export { readDataset } from '../data/read-dataset.ts';
export { readPredictions } from '../data/read-predictions.ts';
export { resolveDatabase, resolveDatabases, suiteVariants } from '../data/databases.ts';
export { summarize, percent } from './metrics.ts';
export { evaluate, EVAL_DEFAULTS, type EvaluateOptions } from './run.ts';
export { formatReport } from './format.ts';
export * from './types.ts';
