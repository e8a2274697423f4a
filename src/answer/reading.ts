/**
 * The factory's reading of a query: SQL read into the factory's AST (from-sql.ts) and worded back by its
 * realizer (language/), the same sentences it writes for the pairs it synthesizes. A query the factory cannot
 * read has no reading (null): the ranker then judges it by its values and agreement alone.
 */
import type { DbDocs } from '../prompt/docs-types.ts';
import type { DbSchema, SqlExecutor } from '../sql/types.ts';
import { astFromSql } from '../factory/from-sql.ts';
import { realizeQuestion } from '../factory/language/realize.ts';
import { databaseLanguage } from '../factory/pipeline.ts';

export type Reader = (sql: string) => string[];

/** Phrasings per query: a formal one and one as people ask (the factory's intents), to compare with the question. */
const STYLES = [
  ['formal', false],
  ['colloquial', true],
] as const;

/** What the factory knows of a database (its schema graph, column profiles and lexicon), read once per database. */
export type Language = Awaited<ReturnType<typeof databaseLanguage>>;

export function databaseLanguageOf(schema: DbSchema, executor: SqlExecutor, docs?: DbDocs, timeoutMs = 5000): Promise<Language> {
  return databaseLanguage(schema, executor, timeoutMs, docs);
}

export async function makeReader(schema: DbSchema, executor: SqlExecutor, docs?: DbDocs, timeoutMs = 5000, language?: Language): Promise<Reader> {
  const { graph, lex } = language ?? (await databaseLanguage(schema, executor, timeoutMs, docs));
  const cache = new Map<string, string[]>();
  return (sql) => {
    const hit = cache.get(sql);
    if (hit) return hit;
    let out: string[] = [];
    try {
      const r = astFromSql(sql, schema, graph);
      if (r.ok) out = [...new Set(STYLES.map(([style, people]) => realizeQuestion(r.ast, style, 0, lex, true, people)))];
    } catch {
      out = [];
    }
    cache.set(sql, out);
    return out;
  };
}
