// Where the Playground starts: the policy the person named (else the newest checkpoint) and their own database
// (else the first bundled one), as /api/overview says.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { dashboardRoutes } from '../../src/server/dashboard.ts';
import { defaultPolicy } from '../../src/server/dashboard/playground.ts';
import { scratchAndPool } from '../support/with.ts';

const { dir: tmp, pool } = scratchAndPool('agro-dash-defaults-');

test('defaultPolicy: a policy named on the command line, else the newest checkpoint, else the first', () => {
  const ck = (id: string, modifiedMs: number) => ({ id, label: id, kind: 'checkpoint', modifiedMs });
  assert.equal(defaultPolicy([ck('a/step-1', 10), ck('b/step-9', 30), ck('c/step-5', 20)]), 'b/step-9');
  assert.equal(defaultPolicy([ck('a/step-1', 10), { id: 'http://x/v1', label: 'x', kind: 'endpoint', given: true }]), 'http://x/v1');
  assert.equal(defaultPolicy([{ id: 'g.gguf', label: 'g', kind: 'gguf' }]), 'g.gguf');
  assert.equal(defaultPolicy([]), undefined);
});

test("/api/overview: the person's own database first (a --db), else the first bundled one; their endpoint as the policy", async () => {
  const own = join(tmp, 'shop.sqlite');
  copyFileSync('data/databases/music_store/music_store.sqlite', own);
  const overview = async (opts: Partial<Parameters<typeof dashboardRoutes>[0]>) => {
    const app = dashboardRoutes({ dir: tmp, executor: pool, ...opts });
    const body = (await (await app.request('/api/overview')).json()) as { defaults: { policy: string | null; database: string | null }; databases: { id: string; label: string; own?: boolean }[] };
    await app.close();
    return body;
  };
  const bundled = await overview({});
  assert.equal(bundled.defaults.database, bundled.databases[0].id);
  assert.equal(bundled.defaults.policy, null);
  const mine = await overview({ databases: [own], policies: { extra: [{ spec: { llmUrl: 'http://127.0.0.1:9/v1', llmModel: 'm' } }] } });
  assert.equal(mine.defaults.database, own);
  assert.equal(mine.databases.find((d) => d.id === own)?.own, true);
  assert.equal(mine.defaults.policy, 'http://127.0.0.1:9/v1#m');
  // A bundled database named with --db keeps its name, marked as theirs.
  const named = await overview({ databases: ['data/databases/music_store/music_store.sqlite'] });
  const music = named.databases.find((d) => d.label === 'music_store')!;
  assert.equal(music.own, true);
  assert.equal(named.defaults.database, music.id);
});
