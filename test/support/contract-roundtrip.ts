/**
 * The prompt and tokens per turn `agro predict` runs a checkpoint with: the checkpoint opened as predict opens
 * it, its settings resolved by runPredict itself (read back from the run.json it writes before any episode;
 * the run is stopped before the first one). A trainer's checkpoint round-trips when this equals what it trained on.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CheckpointPolicy } from '../../src/agent/policies/checkpoint.ts';
import { PROMPT_FIELDS, readPromptContract, type PromptSettings } from '../../src/prompt/contract.ts';
import { runPredict } from '../../src/pipeline/predict.ts';
import { createExecutor } from '../../src/sql/executor.ts';

export interface Resolution {
  prompt: PromptSettings;
  maxTurnTokens: number;
}

/** What predict resolves for the checkpoint (no flags given). */
export async function predictResolution(checkpointDir: string): Promise<Resolution> {
  const dir = mkdtempSync(join(tmpdir(), 'agro-roundtrip-'));
  const data = join(dir, 'one.json');
  writeFileSync(data, JSON.stringify([{ db_id: 'school', question: 'How many students are there?', SQL: 'SELECT count(*) FROM students' }]));
  const policy = await CheckpointPolicy.open(checkpointDir, { maxBatch: 1 });
  const pool = createExecutor();
  try {
    await runPredict({ data, dbRoot: 'data/databases', out: join(dir, 'predict') }, policy, pool, { signal: AbortSignal.abort() });
  } finally {
    await policy.close();
    await pool.close();
  }
  const run = JSON.parse(readFileSync(join(dir, 'predict', 'run.json'), 'utf8')) as { settings: { maxTurnTokens: number; prompt: Record<string, unknown> } };
  const prompt = Object.fromEntries(PROMPT_FIELDS.map((f) => [f, run.settings.prompt[f]])) as PromptSettings;
  return { prompt, maxTurnTokens: run.settings.maxTurnTokens };
}

/** The checkpoint's contract as written: every prompt setting and its tokens per turn (null when it has none). */
export function writtenResolution(checkpointDir: string): (Resolution & { hasDecoding: boolean }) | null {
  const c = readPromptContract(checkpointDir);
  if (!c) return null;
  const prompt = Object.fromEntries(PROMPT_FIELDS.map((f) => [f, c[f]])) as PromptSettings;
  return { prompt, maxTurnTokens: c.decoding?.maxTurnTokens ?? NaN, hasDecoding: c.decoding !== undefined };
}
