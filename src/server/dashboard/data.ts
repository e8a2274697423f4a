/**
 * A factory output for the Data page: the manifest as written, every pair with the tables it reads and
 * its shape (the template that built it), and schema coverage: which tables and columns the pairs use.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { introspectDatabase } from '../../sql/executor.ts';
import { isPostgresUrl, redactUrl, withoutRedactedPassword } from '../../sql/postgres.ts';
import { tablesRead, tokenize } from '../../sql/lexer.ts';
import type { DbSchema } from '../../sql/types.ts';
import type { ColumnCoverage, DatasetDetail, PairRow } from './api-types.ts';

interface RawRow {
  question_id?: number | string;
  db_id?: string;
  question?: string;
  evidence?: string;
  SQL?: string;
  query?: string;
  difficulty?: string;
  style?: string;
  provenance?: { template?: string };
}

export function toPairRow(r: RawRow, i: number): PairRow {
  const sql = r.SQL ?? r.query ?? '';
  return {
    question_id: r.question_id ?? i,
    db_id: r.db_id ?? '',
    question: r.question ?? '',
    evidence: r.evidence ?? '',
    SQL: sql,
    difficulty: r.difficulty ?? 'unknown',
    style: r.style ?? 'unknown',
    shape: r.provenance?.template ?? 'unknown',
    tables: tablesRead(sql),
    provenance: r.provenance ?? null,
  };
}

/**
 * Pairs per table and per column. A column counts as used by a pair when the pair reads its table and
 * names the column (bare or quoted, any case): a lexical rule, so a name shared by two tables counts for
 * both when a query reads both.
 */
export function schemaCoverage(schema: Pick<DbSchema, 'tables'>, pairs: readonly Pick<PairRow, 'SQL' | 'tables'>[]): ColumnCoverage[] {
  const cov = schema.tables.map((t) => ({ table: t.name, pairs: 0, columns: t.columns.map((c) => ({ name: c.name, pairs: 0 })) }));
  for (const p of pairs) {
    const tables = new Set(p.tables.map((t) => t.toLowerCase()));
    const names = new Set(tokenize(p.SQL).filter((t) => t.kind === 'word' || t.kind === 'qid').map((t) => t.text.toLowerCase()));
    for (const t of cov) {
      if (!tables.has(t.table.toLowerCase())) continue;
      t.pairs++;
      for (const c of t.columns) if (names.has(c.name.toLowerCase())) c.pairs++;
    }
  }
  return cov;
}

const schemaCache = new Map<string, Promise<DbSchema>>();

/** Table and column names are all coverage needs: profile few rows. */
function schemaOf(db: string): Promise<DbSchema> {
  let s = schemaCache.get(db);
  if (!s) {
    s = introspectDatabase(db, { samples: 0, statsRowLimit: 100 });
    schemaCache.set(db, s);
    s.catch(() => schemaCache.delete(db));
  }
  return s;
}

export async function loadDataset(id: string, dir: string): Promise<DatasetDetail> {
  const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as { dbId?: string; db?: string };
  const pairs = readFileSync(join(dir, 'dataset.jsonl'), 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l, i) => toPairRow(JSON.parse(l) as RawRow, i));
  const db = manifest.db;
  // A server (named without its password: PGPASSWORD or ~/.pgpass gives it) is available when it answers;
  // its id is the one the database list gives it, the URL without a password.
  const onServer = typeof db === 'string' && isPostgresUrl(db);
  let dbAvailable = typeof db === 'string' && (onServer || existsSync(db));
  let coverage: ColumnCoverage[] = [];
  if (dbAvailable) {
    try {
      coverage = schemaCoverage(await schemaOf(onServer ? withoutRedactedPassword(db!) : db!), pairs);
    } catch {
      // An unreadable database: the page shows the data without coverage.
      if (onServer) dbAvailable = false;
    }
  }
  return { info: { id, dbId: manifest.dbId ?? pairs[0]?.db_id ?? '', rows: pairs.length }, manifest, dbAvailable, db: !dbAvailable || typeof db !== 'string' ? null : onServer ? redactUrl(withoutRedactedPassword(db)) : resolve(db), coverage, pairs };
}
