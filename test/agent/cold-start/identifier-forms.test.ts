import { test } from 'node:test';
import assert from 'node:assert/strict';
import { applyRespellings, respell, respellEpisode, respellings } from '../../../src/agent/cold-start/identifier-forms.ts';
import { introspectSchema } from '../../../src/sql/introspect.ts';
import { Rng } from '../../../src/util/rng.ts';
import type { ChatMessage } from '../../../src/agent/types.ts';

test('respell: each form changes the spelling, keeps the words, and says null when it would not change it', () => {
  assert.equal(respell('Birth_Year', 'camel', false), 'birthYear');
  assert.equal(respell('birthYear', 'snake', false), 'birth_year');
  assert.equal(respell('singer', 'upper', true), 'SINGER');
  assert.equal(respell('singer', 'title', true), 'Singer');
  assert.equal(respell('singer', 'plural', true), 'singers');
  assert.equal(respell('singer', 'prefix', true), 'tbl_singer');
  assert.equal(respell('Name', 'plural', false), null, 'columns take no plural');
  assert.equal(respell('tracks', 'plural', true), null);
  assert.equal(respell('name', 'lower', false), null);
});

test('applyRespellings: whole identifiers only, in one pass, in SQL, DDL and observations', () => {
  const map = new Map([['singer', 'tbl_singer'], ['Name', 'NAME'], ['tbl_singer', 'x']]);
  assert.equal(applyRespellings('SELECT T1.Name, singer_id FROM singer AS T1 -- Names', map), 'SELECT T1.NAME, singer_id FROM tbl_singer AS T1 -- Names');
  assert.equal(applyRespellings('CREATE TABLE singer (\n  Name TEXT\n);', map), 'CREATE TABLE tbl_singer (\n  NAME TEXT\n);');
});

test('respellings on a real schema: about the share asked, never two names on one, the question untouched', () => {
  const schema = introspectSchema('data/databases/music_store/music_store.sqlite');
  const names = new Set([...schema.tables.map((t) => t.name), ...schema.tables.flatMap((t) => t.columns.map((c) => c.name))]);
  let changed = 0;
  for (let seed = 0; seed < 40; seed++) {
    const map = respellings(schema, 0.5, new Rng(seed));
    changed += map.size;
    const targets = [...map.values()].map((v) => v.toLowerCase());
    assert.equal(new Set(targets).size, targets.length, 'two names respelled alike');
    for (const [from, to] of map) {
      assert.ok(names.has(from));
      assert.ok(to.toLowerCase() === from.toLowerCase() || !([...names].some((n) => n.toLowerCase() === to.toLowerCase())), `${from} -> ${to} is another name`);
    }
    // The same seed gives the same respelling.
    assert.deepEqual([...respellings(schema, 0.5, new Rng(seed))], [...map]);
  }
  const share = changed / (40 * names.size);
  assert.ok(share > 0.2 && share < 0.5, `share ${share}`);
  const table = schema.tables[0].name;
  const messages: ChatMessage[] = [
    { role: 'system', content: `CREATE TABLE ${table} (id INT);` },
    { role: 'user', content: `How many ${table} rows are there?` },
    { role: 'assistant', content: `<answer>SELECT count(*) FROM ${table}</answer>` },
  ];
  const out = respellEpisode(messages, new Map([[table, `tbl_${table}`]]));
  assert.equal(out[0].content, `CREATE TABLE tbl_${table} (id INT);`);
  assert.equal(out[1].content, messages[1].content, 'the question keeps its words');
  assert.equal(out[2].content, `<answer>SELECT count(*) FROM tbl_${table}</answer>`);
});
