/**
 * The pass-rate helper's side (pass-rate-helper.ts): it sets up the same environment as the parent once,
 * then samples the batches it is sent from a checkpoint on disk and sends back each task's correct count.
 */
import type { DbDocs } from '../prompt/docs-types.ts';
import { createExecutor } from '../sql/executor.ts';
import { SqlEnvironment, type SqlEnvConfig, type SqlTask } from '../agent/sql-env.ts';
import { initBackend, type BackendName } from '../model/backend.ts';
import { loadCheckpoint, type Checkpoint } from '../model/checkpoint.ts';
import { sampleBatches, type PassRateOptions } from '../rl/evaluate.ts';

export type HelperRequest =
  | { kind: 'setup'; backend: BackendName; config: SqlEnvConfig; docs?: DbDocs }
  | { kind: 'sample'; id: number; checkpoint: string; tasks: SqlTask[]; opts: PassRateOptions; starts: number[] }
  | { kind: 'close' };
export type HelperReply = { kind: 'ready' } | { kind: 'sampled'; id: number; counts: number[][] } | { kind: 'failed'; id?: number; message: string };

const send = (m: HelperReply): void => void process.send?.(m);
const executor = createExecutor();
let env: SqlEnvironment | undefined;
let loaded: { dir: string; ck: Checkpoint } | undefined;
// One request at a time, in order: the parent waits for each before it sends the next.
let queue = Promise.resolve();

process.on('message', (m: HelperRequest) => {
  queue = queue.then(() => handle(m)).catch((err: unknown) => send({ kind: 'failed', id: m.kind === 'sample' ? m.id : undefined, message: (err as Error).message }));
});
// The parent gone (killed, crashed): nothing is left to answer.
process.on('disconnect', () => void executor.close().finally(() => process.exit(0)));

async function handle(m: HelperRequest): Promise<void> {
  if (m.kind === 'setup') {
    await initBackend(m.backend);
    const docs = m.docs;
    env = new SqlEnvironment(executor, m.config, docs ? { docsFor: () => docs } : {});
    send({ kind: 'ready' });
  } else if (m.kind === 'sample') {
    if (!env) throw new Error('sample before setup');
    if (loaded?.dir !== m.checkpoint) {
      loaded?.ck.model.dispose();
      loaded = { dir: m.checkpoint, ck: loadCheckpoint(m.checkpoint) };
    }
    const counts = await sampleBatches(env, m.tasks, loaded.ck.model, loaded.ck.tokenizer, m.opts, m.starts);
    send({ kind: 'sampled', id: m.id, counts });
  } else {
    await executor.close();
    process.exit(0);
  }
}
