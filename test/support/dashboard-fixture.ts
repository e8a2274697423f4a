/**
 * A real dashboard folder for the browser tests, made with agro's own code: a factory output (runFactory),
 * an `agro eval` report (evaluate, half the predictions wrong on purpose), an SFT run of a tiny model that
 * learns one question by heart (so the Playground has a policy that answers with real SQL), and a GRPO
 * run of two steps from that checkpoint. Layout as the quickstart writes it (report.json records the
 * schema budget the policy was trained with).
 */
import { join, resolve } from 'node:path';
import { runFactory } from '../../src/factory/pipeline.ts';
import { readDataset } from '../../src/data/read-dataset.ts';
import { evaluate } from '../../src/eval/run.ts';
import { SqlEnvironment, type SqlTask } from '../../src/agent/sql-env.ts';
import { AGENT_SPECIAL_TOKENS, formatAction } from '../../src/agent/protocol.ts';
import { initBackend } from '../../src/model/backend.ts';
import { Tokenizer } from '../../src/model/tokenizer.ts';
import { LlamaModel } from '../../src/model/llama.ts';
import { resolveModelConfig } from '../../src/model/config.ts';
import { renderChat } from '../../src/model/chat.ts';
import { loadCheckpoint } from '../../src/model/checkpoint.ts';
import { runSft } from '../../src/train/sft.ts';
import { runGrpo } from '../../src/rl/trainer.ts';
import type { SqlExecutor } from '../../src/sql/types.ts';
import { writeJsonAtomic } from '../../src/util/fs.ts';

export const MUSIC_STORE = resolve('data/databases/music_store/music_store.sqlite');
export const PLAYGROUND_QUESTION = 'How many genres are there?';
export const PLAYGROUND_SQL = 'SELECT COUNT(*) FROM genres';
const SCHEMA_CHARS = 200;

export interface DashboardFixture {
  dir: string;
  sftSteps: number;
  grpoSteps: number;
}

export async function buildDashboardFixture(dir: string, exec: SqlExecutor): Promise<DashboardFixture> {
  // Data: a factory output, and an evaluation of its pairs where every other prediction is wrong.
  await runFactory({ db: MUSIC_STORE, out: join(dir, 'synth'), n: 24, seed: 1, variants: 0 }, { executor: exec });
  const dataset = readDataset(join(dir, 'synth', 'dataset.jsonl'));
  const preds = dataset.items.map((it, i) => (i % 2 === 0 ? it.gold : 'SELECT name FROM genres'));
  const report = await evaluate(dataset, preds, exec, { dbRoot: resolve('data/databases'), predLabel: 'half-wrong.json', timeoutMs: 10_000 });
  writeJsonAtomic(join(dir, 'eval', 'report.json'), report);

  // Runs: a tiny policy that answers one question, then two GRPO steps from it.
  await initBackend();
  const env = new SqlEnvironment(exec, { schemaChars: SCHEMA_CHARS });
  const task: SqlTask = { id: 'genres', dbId: 'music_store', dbPath: MUSIC_STORE, question: PLAYGROUND_QUESTION, goldSql: PLAYGROUND_SQL, difficulty: 'simple' };
  const messages = [...env.openingFor(task), { role: 'assistant' as const, content: formatAction({ kind: 'answer', think: 'count the genres', content: PLAYGROUND_SQL }) }];
  const tokenizer = Tokenizer.train(messages.map((m) => m.content), { vocabSize: 400, specialTokens: [...AGENT_SPECIAL_TOKENS] });
  const model = new LlamaModel(resolveModelConfig({ preset: 'tiny', vocabSize: tokenizer.vocabSize }), { seed: 0 });
  const sftSteps = 80;
  const sample = renderChat(tokenizer, messages);
  const sft = await runSft({
    outDir: join(dir, 'sft'),
    model,
    tokenizer,
    samples: [sample],
    heldOut: [sample],
    config: { steps: sftSteps, batchSize: 1, lr: 1e-2, warmupSteps: 2, evalEvery: 10, checkpointEvery: 0, seed: 0 },
    // The Playground runs each checkpoint on the prompt its contract names.
    prompt: { env: env.config },
  });
  model.dispose();
  const ck = loadCheckpoint(sft.checkpoint);
  const grpoSteps = 2;
  await runGrpo({
    outDir: join(dir, 'grpo'),
    env,
    tasks: [task],
    model: ck.model,
    tokenizer: ck.tokenizer,
    config: { algo: 'grpo', algoOverrides: { kl: { coef: 0 } }, steps: grpoSteps, promptsPerStep: 1, groupSize: 2, maxTurnTokens: 32, maxResponseTokens: 64, checkpointEvery: 0, seed: 0 },
  });
  ck.model.dispose();
  return { dir, sftSteps, grpoSteps };
}
