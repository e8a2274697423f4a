// One writer of `npm run bench -- memory`'s race: stores COUNT corrections one after another and prints
// `ack <question>` after each is acknowledged (stored and committed). MODE store: agro's storeCorrection on
// the SQLite store; MODE json: the read-modify-write of one JSON file that agro did before the store (the reference).
import { readFileSync } from 'node:fs';
import { createExecutor, introspectDatabase } from '../src/sql/executor.ts';
import { storeCorrection } from '../src/memory/build.ts';
import { writeJsonAtomic } from '../src/util/fs.ts';

const [mode, path, db, proc, count] = process.argv.slice(2);
const exec = createExecutor({ size: 1 });
const schema = await introspectDatabase(db);
for (let i = 0; i < Number(count); i++) {
  const question = `bench question ${proc}-${i}`;
  const sql = `SELECT ${Number(proc) * 10_000 + i} AS n FROM customers LIMIT 1`;
  if (mode === 'store') {
    await storeCorrection(path, db, schema, question, sql, exec);
  } else {
    const r = await exec.execute(db, sql, { timeoutMs: 10_000, maxRows: 10_000 });
    if (!r.ok) throw new Error(r.message);
    const m = JSON.parse(readFileSync(path, 'utf8')) as { entries: unknown[] };
    m.entries.unshift({ sql, questions: [question], source: 'person', at: new Date().toISOString() });
    writeJsonAtomic(path, m);
  }
  process.stdout.write(`ack ${question}\n`);
}
await exec.close();
