/**
 * Stage 6: semantic-logic alignment by round trip. An independent path from the question back to
 * SQL: a rule-based parser for the realizer's grammars (language/general-parse.ts) rebuilds the query from the
 * question text and the schema alone (it never sees the AST or SQL), and the rebuilt query must give
 * the same results as the pair's SQL on the original and on every variant database. A pair that
 * fails is re-realized once in another style; if that also fails it is dropped with the reason.
 */
import { testSuiteMatch } from '../sql/testsuite.ts';
import { printQuery } from './print.ts';
import { realizePair } from './language/realize.ts';
import { ParseError, parseQuestion, type ParseEnv } from './language/general-parse.ts';
import type { Stage, StageContext, SynthPair } from './types.ts';
import { checkPairs } from './check-pairs.ts';
import { QUESTION_STYLES } from '../data/dataset-row.ts';

/** 'ok', or why the question does not lead back to the pair's results. */
export async function roundTrip(ctx: StageContext, env: ParseEnv, p: SynthPair): Promise<'ok' | 'roundtrip_unparsed' | 'roundtrip_mismatch'> {
  let sql: string;
  try {
    sql = printQuery(parseQuestion(p.question, env), ctx.dialect);
  } catch (e) {
    if (e instanceof ParseError) return 'roundtrip_unparsed';
    throw e;
  }
  if (sql === p.sql) return 'ok';
  const r = await testSuiteMatch(ctx.executor, sql, p.sql, [ctx.dbPath, ...ctx.variants], { mode: 'spider', timeoutMs: ctx.timeoutMs });
  return r.match ? 'ok' : 'roundtrip_mismatch';
}

export function alignStage(env: ParseEnv): Stage<SynthPair, SynthPair> {
  return {
    name: 'align',
    run(items, ctx) {
      return checkPairs(ctx, 'align', items, async (p) => {
        let r: string = await roundTrip(ctx, env, p);
        if (r !== 'ok') {
          const first = r;
          const style = QUESTION_STYLES[(QUESTION_STYLES.indexOf(p.style) + 1) % QUESTION_STYLES.length];
          try {
            realizePair(p, style, 1, env.lex, false, false, ctx.dialect);
            r = await roundTrip(ctx, env, p);
          } catch {
            r = first; // no question of the general grammar says it
          }
          if (r === 'ok') p.provenance.repairedFrom = `${p.id}:${first}`;
        }
        // Each paraphrase passes the same round trip as the question, or is dropped.
        if (r === 'ok' && p.paraphrases?.length) {
          const kept: string[] = [];
          for (const question of p.paraphrases) if ((await roundTrip(ctx, env, { ...p, question })) === 'ok') kept.push(question);
          p.paraphrases = kept;
        }
        return r === 'ok' ? null : r;
      }, ['roundtrip']);
    },
  };
}
