import { test } from 'node:test';
import assert from 'node:assert/strict';
import { databaseId } from '../../src/sql/db-id.ts';
import { introspectSchema } from '../../src/sql/introspect.ts';
import { fileURLToPath } from 'node:url';

test('databaseId: a file by its name without the extension, a server URL by its database', () => {
  assert.equal(databaseId('dbs/shop/shop.sqlite'), 'shop');
  assert.equal(databaseId('/x/shop.sqlite3'), 'shop');
  assert.equal(databaseId('shop.db'), 'shop');
  assert.equal(databaseId('my.shop.sqlite'), 'my.shop');
  assert.equal(databaseId('shop'), 'shop');
  assert.equal(databaseId('postgres://agro:secret@127.0.0.1:5432/sales'), 'sales');
  assert.equal(databaseId('postgresql://127.0.0.1/caf%C3%A9'), 'café');
  assert.equal(databaseId('postgres://127.0.0.1'), 'postgres');
});

test("databaseId is the id introspection gives a file's schema", () => {
  const db = fileURLToPath(new URL('../../data/databases/music_store/music_store.sqlite', import.meta.url));
  assert.equal(introspectSchema(db).dbId, databaseId(db));
});
