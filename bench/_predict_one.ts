// One configuration of bench/predict.ts, in its own process so that its peak memory is its own.
// Usage: node --import tsx bench/_predict_one.ts '{"ckpt":..,"data":..,"engine":"tfjs","serve":false,"mode":"agent","concurrency":1,"schemaChars":200}'
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { CheckpointPolicy } from '../src/agent/policies/checkpoint.ts';
import { EndpointPolicy } from '../src/agent/policies/endpoint.ts';
import type { Policy } from '../src/agent/policies/types.ts';
import { runPredict } from '../src/pipeline/predict.ts';
import { createApp } from '../src/server/app.ts';
import { openaiRoutes } from '../src/server/openai.ts';
import { SqlPool } from '../src/sql/pool.ts';
import type { EngineName } from '../src/model/engine.ts';

const o = JSON.parse(process.argv[2]) as { ckpt: string; data: string; engine: EngineName; serve: boolean; mode: 'agent' | 'direct'; concurrency: number; schemaChars?: number; maxTurnTokens?: number };
const local = await CheckpointPolicy.open(o.ckpt, { engine: o.engine });
let policy: Policy = local;
let close = async (): Promise<void> => {};
if (o.serve) {
  const app = createApp({ groups: [{ app: openaiRoutes({ policy: local, concurrency: o.concurrency }) }] });
  const { server, port } = await new Promise<{ server: ReturnType<typeof serve>; port: number }>((resolve) => {
    const s = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, (info: AddressInfo) => resolve({ server: s, port: info.port }));
  });
  policy = await EndpointPolicy.open({ url: `http://127.0.0.1:${port}/v1`, concurrency: o.concurrency });
  close = () => new Promise((r) => server.close(() => r()));
}
const pool = new SqlPool({ size: 2 });
const out = mkdtempSync(join(tmpdir(), 'agro-bench-predict-'));
const t0 = performance.now();
const res = await runPredict({ data: o.data, dbRoot: 'data/databases', out, mode: o.mode, concurrency: o.concurrency, schemaChars: o.schemaChars, maxTurnTokens: o.maxTurnTokens }, policy, pool);
const seconds = (performance.now() - t0) / 1000;
const r = res.report!;
console.log(JSON.stringify({ questions: r.summary.count, seconds, qps: r.summary.count / seconds, ex: r.summary.accuracy, toolCalls: r.predict.toolCalls, peakRssMB: process.resourceUsage().maxRSS / 1024 }));
await close();
await pool.close();
await local.close();
rmSync(out, { recursive: true, force: true });
process.exit(0);
