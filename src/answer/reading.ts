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
import { QUESTION_STYLES } from '../data/dataset-row.ts';

export type Reader = (sql: string) => string[];

/**
 * Phrasings per query: every style the factory writes questions in, its first two wordings of each, as people ask
 * and not. A stored pair is compared through its question and every paraphrase; a query read here gets as many
 * chances to meet the person's words (two phrasings alone lost to stored pairs that said the same thing otherwise).
 */
const VARIANTS = 2;
const PHRASINGS = QUESTION_STYLES.flatMap((style) => Array.from({ length: VARIANTS }, (_, variant) => [false, true].map((people) => ({ style, variant, people }))).flat());

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
      if (r.ok) out = [...new Set(PHRASINGS.map((p) => realizeQuestion(r.ast, p.style, p.variant, lex, true, p.people)))];
    } catch {
      out = [];
    }
    cache.set(sql, out);
    return out;
  };
}
