// The package's public entry points (package.json "exports") load by name and expose what they declare.
import { test } from 'node:test';
import assert from 'node:assert/strict';

test('agro/sql, agro/prompt and agro/eval load through the package exports', async () => {
  const sql = await import('agro/sql');
  const prompt = await import('agro/prompt');
  const ev = await import('agro/eval');
  const pool = new sql.SqlPool({ size: 1 });
  try {
    const r = await pool.execute('data/databases/school/school.sqlite', 'SELECT 1 + 1 AS two');
    assert.ok(r.ok && r.rows[0][0] === 2);
  } finally {
    await pool.close();
  }
  assert.equal(sql.quoteIdent('a"b'), '"a""b"');
  const schema = sql.introspectSchema('data/databases/school/school.sqlite');
  assert.match(prompt.renderSchema(schema), /CREATE TABLE/);
  assert.equal(typeof ev.evaluate, 'function');
  assert.equal(ev.readDataset('data/dev.json').items.length > 0, true);
});
