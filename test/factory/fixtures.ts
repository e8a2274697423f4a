/** Small real SQLite databases for the factory tests, built in os.tmpdir(). */
import Database from 'better-sqlite3';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Rng } from '../../src/util/rng.ts';
import { introspectSchema } from '../../src/sql/introspect.ts';
import type { DbSchema, SqlExecutor } from '../../src/sql/types.ts';
import type { StageContext } from '../../src/factory/types.ts';
import { col, emptySelect, lit, type SelectAst } from '../../src/factory/ast.ts';
import { silentProgress } from '../../src/util/progress.ts';
import { buildLexicon } from '../../src/factory/language/names.ts';
import { profileSchema, type TableProfile } from '../../src/factory/profile.ts';
import { buildSchemaGraph, type SchemaGraph } from '../../src/factory/schema-graph.ts';

export function tmpDir(prefix = 'agro-factory-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** A shop: customers <- orders <- order_items -> products (composite primary key on order_items). */
export function makeShopDb(dir: string, name = 'shop'): string {
  const path = join(dir, `${name}.sqlite`);
  const db = new Database(path);
  db.pragma('synchronous = OFF');
  db.exec('BEGIN');
  db.exec(`
    CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, name TEXT NOT NULL, country TEXT, city TEXT, signup_date TEXT);
    CREATE TABLE products (product_id INTEGER PRIMARY KEY, title TEXT NOT NULL, category TEXT, price REAL, stock INTEGER);
    CREATE TABLE orders (order_id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL REFERENCES customers(customer_id), order_date TEXT, status TEXT);
    CREATE TABLE order_items (order_id INTEGER REFERENCES orders(order_id), product_id INTEGER REFERENCES products(product_id), quantity INTEGER, PRIMARY KEY (order_id, product_id));
  `);
  const rng = new Rng(7);
  const countries = ['USA', 'Canada', 'France', 'Japan', 'Brazil'];
  const cities = ['Springfield', 'Lyon', 'Osaka', 'Recife', 'Toronto', 'Austin'];
  const firsts = ['Ada', 'Ben', 'Cleo', 'Dev', 'Eli', 'Fay', 'Gus', 'Hana', 'Ivo', 'Jun'];
  const lasts = ['Stone', 'River', 'Hill', 'Marsh', 'Brook', 'Field'];
  const ins = db.prepare('INSERT INTO customers VALUES (?, ?, ?, ?, ?)');
  for (let i = 1; i <= 40; i++) {
    ins.run(i, `${rng.pick(firsts)} ${rng.pick(lasts)} ${i}`, rng.pick(countries), rng.pick(cities), `20${10 + rng.int(12)}-0${1 + rng.int(9)}-1${rng.int(9)}`);
  }
  const cats = ['Books', 'Games', 'Music', 'Tools'];
  const adj = ['Red', 'Quiet', 'Rapid', 'Golden', 'Hidden'];
  const noun = ['Lamp', 'Atlas', 'Drum', 'Saw', 'Puzzle', 'Novel'];
  const insP = db.prepare('INSERT INTO products VALUES (?, ?, ?, ?, ?)');
  for (let i = 1; i <= 30; i++) insP.run(i, `${rng.pick(adj)} ${rng.pick(noun)} ${i}`, rng.pick(cats), Math.round((5 + rng.next() * 95) * 100) / 100, rng.int(50));
  const insO = db.prepare('INSERT INTO orders VALUES (?, ?, ?, ?)');
  const insI = db.prepare('INSERT OR IGNORE INTO order_items VALUES (?, ?, ?)');
  for (let i = 1; i <= 120; i++) {
    insO.run(i, 1 + rng.int(40), `202${rng.int(4)}-1${rng.int(3)}-2${rng.int(9)}`, rng.pick(['shipped', 'pending', 'returned']));
    for (let k = 0; k < 1 + rng.int(4); k++) insI.run(i, 1 + rng.int(30), 1 + rng.int(5));
  }
  db.exec('COMMIT');
  db.close();
  return path;
}

/** Odd schema: no declared keys, a view, an empty table, odd column names, a blob and a huge text column. */
export function makeOddDb(dir: string): string {
  const path = join(dir, 'odd.sqlite');
  const db = new Database(path);
  db.pragma('synchronous = OFF');
  db.exec('BEGIN');
  db.exec(`
    CREATE TABLE author (id INTEGER, "full name" TEXT, "select" TEXT, "quote""d" INTEGER, "städte" TEXT, photo BLOB, bio TEXT);
    CREATE TABLE book (id INTEGER, author_id INTEGER, title TEXT, pages INTEGER);
    CREATE TABLE empty_table (id INTEGER PRIMARY KEY, note TEXT);
    CREATE VIEW long_books AS SELECT title FROM book WHERE pages > 300;
  `);
  const rng = new Rng(3);
  const ins = db.prepare('INSERT INTO author VALUES (?, ?, ?, ?, ?, ?, ?)');
  for (let i = 1; i <= 25; i++) {
    ins.run(i, `Writer ${String.fromCharCode(65 + (i % 26))}${i}`, rng.pick(['alpha', 'beta', 'gamma']), rng.int(100), rng.pick(['Köln', 'Zürich', 'Malmö']), Buffer.alloc(64, i), 'x'.repeat(5000));
  }
  const insB = db.prepare('INSERT INTO book VALUES (?, ?, ?, ?)');
  for (let i = 1; i <= 80; i++) insB.run(i, 1 + rng.int(25), `Book ${rng.pick(['of Sand', 'of Glass', 'of Rain', 'of Ash'])} ${i}`, 50 + rng.int(600));
  db.exec('COMMIT');
  db.close();
  return path;
}

/** What synthesis needs of a database file: its schema, schema graph and column profiles. */
export function synthInputs(path: string): { schema: DbSchema; graph: SchemaGraph; profiles: Map<string, TableProfile> } {
  const schema = introspectSchema(path);
  const graph = buildSchemaGraph(schema);
  return { schema, graph, profiles: profileSchema(schema, graph, buildLexicon(schema)).profiles };
}

/**
 * A stage's context over a database for the factory tests: its introspected schema, a seeded RNG, no progress,
 * no variants, a 3 s query limit, and rejections counted by reason into `rejected` (when given).
 */
export function stageContext(dbId: string, dbPath: string, executor: SqlExecutor, opts: Partial<StageContext> & { rejected?: Record<string, number> } = {}): StageContext {
  const { rejected, ...rest } = opts;
  return {
    dbId,
    dbPath,
    schema: rest.schema ?? introspectSchema(dbPath),
    executor,
    rng: new Rng(1),
    progress: silentProgress,
    variants: [],
    timeoutMs: 3000,
    reject: (_item, reason) => {
      if (rejected) rejected[reason] = (rejected[reason] ?? 0) + 1;
    },
    ...rest,
  };
}

/** On makeShopDb's shop: the names of the customers of one country (SELECT T1.name FROM customers AS T1 WHERE T1.country = ...). */
export function customerNamesIn(country: string): SelectAst {
  const q = emptySelect('customers');
  q.columns = [col('T1', 'customers', 'name')];
  q.where = [{ kind: 'cmp', left: col('T1', 'customers', 'country'), op: '=', right: lit(country) }];
  return q;
}

/**
 * A database with a big table: 60 kinds and 150,000 events (indexed by kind), what the plan-cost gate exists for
 * (a scan of events reads 150,000 rows, a join of both more than MAX_ROWS_READ).
 */
export function makeEventsDb(dir: string): string {
  const path = join(dir, 'big.sqlite');
  const db = new Database(path);
  db.pragma('journal_mode = OFF');
  db.exec(`CREATE TABLE kinds (kind_id INTEGER PRIMARY KEY, name TEXT, family TEXT);
    CREATE TABLE events (event_id INTEGER PRIMARY KEY, kind_id INTEGER REFERENCES kinds(kind_id), score INTEGER, place TEXT);
    CREATE INDEX events_kind ON events(kind_id);
    `);
  db.exec(`WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r WHERE x < 60) INSERT INTO kinds SELECT x, 'kind ' || x, 'family ' || (x % 4) FROM r`);
  db.exec(`WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r WHERE x < 150000) INSERT INTO events SELECT x, x % 60 + 1, x % 97, 'place ' || (x % 13) FROM r`);
  db.close();
  return path;
}
