import assert from 'node:assert/strict';
import { test } from 'node:test';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { introspectDatabase } from '../../src/sql/executor.ts';
import { schemaSpelling } from '../../src/sql/spelling.ts';
import { makeDb, tempDir } from './helpers.ts';

const DDL = `CREATE TABLE Artists (ArtistId INTEGER PRIMARY KEY, Name TEXT, country TEXT, "Birth Year" INTEGER, count INTEGER);
CREATE TABLE albums (AlbumId INTEGER PRIMARY KEY, Title TEXT, ArtistId INTEGER REFERENCES Artists(ArtistId));
INSERT INTO Artists VALUES (1, 'Ann', 'UK', 1970, 3), (2, 'Bo', 'US', 1980, 5), (3, 'Cy', 'UK', 1990, 1);
INSERT INTO albums VALUES (1, 'a', 1), (2, 'b', 1), (3, 'c', 2);`;

test('a shown query spells tables and columns as the schema does, means the same, and keeps aliases, strings and functions as written', async () => {
  const { dir, cleanup } = tempDir();
  try {
    const path = makeDb(join(dir, 'm.sqlite'), DDL);
    const schema = await introspectDatabase(path);
    const cases: Array<[string, string]> = [
      ['SELECT country FROM ARTISTs GROUP BY COUNTRY ORDER BY COUNT(*) DESC LIMIT 1', 'SELECT country FROM Artists GROUP BY country ORDER BY COUNT(*) DESC LIMIT 1'],
      ['SELECT T1.name, count(*) FROM artists AS T1 JOIN ALBUMS t2 ON t1.artistid = T2.ARTISTID GROUP BY T1.artistID', 'SELECT T1.Name, count(*) FROM Artists AS T1 JOIN albums t2 ON t1.ArtistId = T2.ArtistId GROUP BY T1.ArtistId'],
      ["SELECT \"birth year\", [NAME] FROM artists WHERE name = 'name' AND Country = 'uk'", "SELECT \"Birth Year\", [Name] FROM Artists WHERE Name = 'name' AND country = 'uk'"],
      ['SELECT NAME AS name, COUNT FROM ARTISTS', 'SELECT NAME AS name, count FROM Artists'],
    ];
    const db = new Database(path, { readonly: true });
    try {
      for (const [given, shown] of cases) {
        const out = schemaSpelling(given, schema);
        assert.equal(out, shown);
        assert.deepEqual(db.prepare(out).raw().all(), db.prepare(given).raw().all(), 'only the spelling changed');
      }
    } finally {
      db.close();
    }
  } finally {
    cleanup();
  }
});

test('under PostgreSQL a bare name is respelled only to its lower-case schema name, and quoted names stay exact', async () => {
  const { dir, cleanup } = tempDir();
  try {
    const schema = await introspectDatabase(makeDb(join(dir, 'm.sqlite'), DDL));
    // "Artists" and "Title" are mixed case: a bare ARTISTS folds to artists in PostgreSQL, which is not that table; it stays.
    assert.equal(schemaSpelling('SELECT COUNTRY, TITLE FROM ARTISTS, Albums', schema, 'postgres'), 'SELECT country, TITLE FROM ARTISTS, albums');
    assert.equal(schemaSpelling('SELECT "title" FROM "albums"', schema, 'postgres'), 'SELECT "title" FROM "albums"');
  } finally {
    cleanup();
  }
});
