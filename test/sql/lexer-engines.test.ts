// One lexer core, two dialects, each checked against its engine's own reading: a table of tricky inputs
// (comment ends, quoted and escaped names, dollar tags, hex numbers, nested comments), each a SELECT list
// whose columns our lexer counts and names (top-level commas, `AS "name"`), run through SQLite's prepare and
// the PostgreSQL test server. A lexer that ends a comment, a string or a name where the engine does not
// counts another number of columns, or another name.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import pg from 'pg';
import { tokenize, type Token } from '../../src/sql/lexer.ts';
import { tokenizePg } from '../../src/sql/pg-lexer.ts';
import { PG, startPostgres, type PgServer } from '../support/postgres.ts';

type Dialect = 'sqlite' | 'postgres';
const TAG = `$${'a'.repeat(70)}$`;

const CASES: Array<{ name: string; sql: string; dialects: Dialect[] }> = [
  { name: '-- ended by \\n', sql: 'SELECT 1 --c\n, 2', dialects: ['sqlite', 'postgres'] },
  { name: '-- ended by \\r (PostgreSQL ends it; SQLite does not)', sql: 'SELECT 1 --c\r, 2', dialects: ['sqlite', 'postgres'] },
  { name: '-- ended by \\r\\n', sql: 'SELECT 1 --c\r\n, 2', dialects: ['sqlite', 'postgres'] },
  { name: 'a comma in a block comment', sql: 'SELECT 1 /* a, */, 2', dialects: ['sqlite', 'postgres'] },
  { name: 'nested block comments (PostgreSQL)', sql: 'SELECT 1 /* a /* b */ c, */, 2', dialects: ['postgres'] },
  { name: 'block comments do not nest (SQLite)', sql: 'SELECT 1 /* a /* b */, 2', dialects: ['sqlite'] },
  { name: 'a doubled quote in a quoted name', sql: 'SELECT 1 AS "a,""b", 2', dialects: ['sqlite', 'postgres'] },
  { name: 'a bracketed name (SQLite)', sql: 'SELECT 1 AS [a,b], 2', dialects: ['sqlite'] },
  { name: 'a backquoted name (SQLite)', sql: 'SELECT 1 AS `a,b`, 2', dialects: ['sqlite'] },
  { name: 'a Unicode-escaped name', sql: 'SELECT 1 AS U&"a\\002cb", 2', dialects: ['postgres'] },
  { name: 'a Unicode-escaped name with UESCAPE', sql: "SELECT 1 AS U&\"a!002c!0062\" UESCAPE '!', 2", dialects: ['postgres'] },
  { name: 'a dollar-quoted string', sql: 'SELECT $t$a,b$t$, 2', dialects: ['postgres'] },
  { name: 'a dollar tag of 70 characters', sql: `SELECT ${TAG}a,b${TAG}, 2`, dialects: ['postgres'] },
  { name: "an E'' string's escaped quote", sql: "SELECT E'a\\',b', 2", dialects: ['postgres'] },
  { name: 'a doubled quote in a string', sql: "SELECT 'a'',b', 2", dialects: ['sqlite', 'postgres'] },
  { name: 'a hex number', sql: 'SELECT 0x1F, 2', dialects: ['sqlite', 'postgres'] },
  { name: 'commas inside a subscript', sql: 'SELECT (ARRAY[1,2,3])[1:2], 3', dialects: ['postgres'] },
];

/** Our lexer's reading: the columns of the SELECT list (split at top-level commas) and the `AS "name"` of each. */
function lexed(tokens: Token[]): { count: number; names: Array<string | undefined>; hex: number[] } {
  const cols: Token[][] = [[]];
  for (const t of tokens.slice(1)) {
    if (t.kind === 'punct' && t.text === ',' && t.depth === 0) cols.push([]);
    else cols.at(-1)!.push(t);
  }
  const names = cols.map((c) => {
    const q = c.at(-1);
    const as = c.at(-2);
    return q?.kind === 'qid' && as?.kind === 'word' && as.text.toUpperCase() === 'AS' ? q.text : undefined;
  });
  const hex = tokens.filter((t) => t.kind === 'num' && /^0x/i.test(t.text)).map((t) => parseInt(t.text.slice(2).replace(/_/g, ''), 16));
  return { count: cols.length, names, hex };
}

function check(dialect: Dialect, sql: string, engine: { names: string[]; first: unknown }, hexChecked: boolean): void {
  const ours = lexed(dialect === 'sqlite' ? tokenize(sql) : tokenizePg(sql));
  assert.equal(engine.names.length, ours.count, `${dialect}: ${JSON.stringify(sql)}: the engine reads ${engine.names.length} columns (${JSON.stringify(engine.names)}), our lexer ${ours.count}`);
  ours.names.forEach((n, i) => {
    if (n !== undefined) assert.equal(engine.names[i], n, `${dialect}: ${JSON.stringify(sql)}: column ${i + 1}'s name`);
  });
  if (hexChecked && ours.hex.length) assert.equal(Number(engine.first), ours.hex[0], `${dialect}: ${JSON.stringify(sql)}: the hex number's value`);
}

test('SQLite: each tricky input is read as sqlite3_prepare reads it', () => {
  const db = new Database(':memory:');
  try {
    for (const c of CASES.filter((x) => x.dialects.includes('sqlite'))) {
      const stmt = db.prepare(c.sql);
      const row = stmt.raw(true).get() as unknown[];
      check('sqlite', c.sql, { names: stmt.columns().map((col) => col.name), first: row[0] }, true);
    }
  } finally {
    db.close();
  }
});

describe('PostgreSQL: each tricky input is read as the server reads it', { skip: PG.skip }, () => {
  let server: PgServer;
  before(async () => {
    server = await startPostgres();
  });
  after(async () => {
    await server?.stop();
  });

  test('the test server agrees with POSTGRES_LEX on every input', async () => {
    const c = new pg.Client({ connectionString: server.adminUrl() });
    await c.connect();
    try {
      // PostgreSQL 16 reads 0x1F as 31; 15 refuses it ("trailing junk after numeric literal"): nothing runs.
      const version = Number((await c.query('SHOW server_version_num')).rows[0].server_version_num);
      for (const k of CASES.filter((x) => x.dialects.includes('postgres'))) {
        if (version < 160000 && /0x/i.test(k.sql)) {
          await assert.rejects(c.query(k.sql), /trailing junk/);
          continue;
        }
        const r = await c.query({ text: k.sql, rowMode: 'array' });
        check('postgres', k.sql, { names: r.fields.map((f) => f.name), first: (r.rows[0] as unknown[])[0] }, true);
      }
    } finally {
      await c.end();
    }
  });
});
