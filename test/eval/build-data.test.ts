import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { buildAll } from '../../scripts/build-data.ts';

const COMMITTED = fileURLToPath(new URL('../../data/databases/', import.meta.url));

function dump(path: string): Record<string, unknown[]> {
  const db = new Database(path, { readonly: true });
  const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").pluck().all() as string[];
  const out: Record<string, unknown[]> = { __schema: db.prepare("SELECT sql FROM sqlite_master WHERE type = 'table' ORDER BY name").pluck().all() };
  for (const t of tables) out[t] = db.prepare(`SELECT * FROM "${t}" ORDER BY rowid`).raw().all();
  db.close();
  return out;
}

test('scripts/build-data.ts rebuilds exactly the committed databases (fixed seeds)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'agro-build-data-'));
  const written = buildAll(dir);
  assert.deepEqual(written.map((p) => p.slice(dir.length + 1)), ['music_store/music_store.sqlite', 'retail/retail.sqlite', 'school/school.sqlite']);
  for (const id of ['music_store', 'retail', 'school']) {
    const committed = join(COMMITTED, id, `${id}.sqlite`);
    assert.ok(statSync(committed).size < 1024 * 1024, `${id} stays under 1 MB`);
    assert.deepEqual(dump(join(dir, id, `${id}.sqlite`)), dump(committed), id);
  }
});

test('the bundled databases declare keys and hold consistent, realistic rows', () => {
  const db = (id: string) => new Database(join(COMMITTED, id, `${id}.sqlite`), { readonly: true });
  const music = db('music_store');
  // The self-reference: one general manager at the top, everybody else reports to an existing employee.
  assert.deepEqual(music.prepare('SELECT COUNT(*) FROM employees WHERE reports_to IS NULL').pluck().get(), 1);
  const selfRef = music.pragma('foreign_key_list(employees)') as Array<{ table: string; from: string }>;
  assert.deepEqual(selfRef.map((f) => [f.table, f.from]), [['employees', 'reports_to']]);
  // Invoice totals are the sums of their lines (to the cent).
  assert.equal(music.prepare('SELECT COUNT(*) FROM invoices AS I WHERE abs(I.total - (SELECT SUM(unit_price * quantity) FROM invoice_lines WHERE invoice_id = I.invoice_id)) > 0.005').pluck().get(), 0);
  assert.deepEqual(music.pragma('foreign_key_check'), []);
  music.close();
  const retail = db('retail');
  const cols = retail.pragma('table_info(order_items)') as Array<{ name: string; pk: number }>;
  assert.deepEqual(cols.filter((c) => c.pk > 0).map((c) => c.name), ['order_id', 'product_id']);
  assert.ok((retail.prepare('SELECT COUNT(*) FROM customers WHERE email IS NULL').pluck().get() as number) > 0, 'some NULL emails');
  assert.equal(retail.prepare('SELECT COUNT(*) FROM orders WHERE shipped_date < order_date').pluck().get(), 0);
  retail.close();
  const school = db('school');
  const fks = school.pragma('foreign_key_list(enrollments)') as Array<{ id: number; table: string; from: string; to: string }>;
  assert.deepEqual(fks.filter((f) => f.table === 'sections').map((f) => [f.from, f.to]), [['course_id', 'course_id'], ['term', 'term']]);
  assert.equal(school.prepare("SELECT typeof(grade) FROM enrollments WHERE grade IS NOT NULL LIMIT 1").pluck().get(), 'real');
  assert.deepEqual(school.pragma('foreign_key_check'), []);
  school.close();
});
