/**
 * How close synthesized data comes to what people ask of a database: the query shapes of human
 * gold SQL that the synthesized SQL also has, the tables and columns the human SQL uses that the
 * synthesized SQL also uses, and questions that leak raw identifiers. Used by `npm run bench --
 * realism`; pure functions over SQL text, questions and the schema.
 */
import pluralize from 'pluralize';
import { sqlFeatures } from '../sql/features.ts';
import { tokenize } from '../sql/lexer.ts';
import type { DbSchema } from '../sql/types.ts';
import { words } from './language/names.ts';

/**
 * The shape of a query: which of joins, GROUP BY, HAVING, ORDER BY + LIMIT, nesting, set
 * operations, NOT IN, LIKE, DISTINCT and aggregates it uses (the list), as a short key.
 */
export function queryShape(sql: string): string {
  const f = sqlFeatures(sql);
  const bits: Array<[string, boolean]> = [
    ['join', f.joins > 0],
    ['group', f.clauses.groupBy],
    ['having', f.clauses.having],
    ['top', f.clauses.orderBy && f.clauses.limit],
    ['nested', f.subqueries > 0 || f.nestingDepth > 0],
    ['setop', f.setOps.length > 0],
    ['notin', /\bnot\s+in\b/i.test(sql)],
    ['like', f.likes > 0],
    ['distinct', f.clauses.distinct || /\(\s*distinct\b/i.test(sql)],
    ['agg', Object.keys(f.aggregates).length > 0],
  ];
  return bits.filter(([, on]) => on).map(([k]) => k).join('+') || 'plain';
}

const SQL_WORDS = new Set(
  'select from where group by having order limit offset distinct all as on using join inner left right outer cross natural and or not in is null like between exists case when then else end union intersect except asc desc count sum avg min max cast'.split(' '),
);

/**
 * Tables (`t:name`) and columns (`c:table.column`) a query uses, names lower-cased. Aliases
 * (`FROM singer AS T1`) are resolved; an unqualified column goes to the first table of the query
 * that has it. Double-quoted text after a comparison is a value, not a name.
 */
export function schemaItems(sql: string, schema: DbSchema): Set<string> {
  const cols = new Map<string, Set<string>>();
  for (const t of schema.tables) cols.set(t.name.toLowerCase(), new Set(t.columns.map((c) => c.name.toLowerCase())));
  const toks = tokenize(sql);
  const name = (i: number) => (toks[i] && (toks[i].kind === 'word' || toks[i].kind === 'qid') ? toks[i].text.toLowerCase() : null);
  const alias = new Map<string, string>();
  const used: string[] = [];
  for (let i = 0; i < toks.length; i++) {
    const n = name(i);
    if (!n || !cols.has(n) || toks[i - 1]?.text === '.' || toks[i + 1]?.text === '.' || toks[i + 1]?.text === '(') continue;
    if (!['from', 'join', ','].includes((toks[i - 1]?.text ?? '').toLowerCase())) continue;
    used.push(n);
    alias.set(n, n);
    let j = i + 1;
    if (name(j) === 'as') j++;
    const a = name(j);
    if (a && !SQL_WORDS.has(a)) alias.set(a, n);
  }
  const out = new Set<string>(used.map((t) => `t:${t}`));
  for (let i = 0; i < toks.length; i++) {
    const n = name(i);
    if (!n) continue;
    const prev = toks[i - 1]?.text ?? '';
    if (toks[i].kind === 'qid' && /^(=|<>|!=|<|>|<=|>=|like)$/i.test(prev)) continue;
    if (prev === '.' && name(i - 2)) {
      const t = alias.get(name(i - 2)!);
      if (t && cols.get(t)!.has(n)) out.add(`c:${t}.${n}`);
      continue;
    }
    if (toks[i + 1]?.text === '.' || toks[i + 1]?.text === '(' || SQL_WORDS.has(n)) continue;
    const t = used.find((u) => cols.get(u)!.has(n));
    if (t) out.add(`c:${t}.${n}`);
  }
  return out;
}

/** Why a question reads as leaked schema text ('snake_case', 'CamelCase', 'doubled_word', 'truncated_singular'), or []. */
export function identifierLeaks(question: string, schema: DbSchema): string[] {
  const text = question.replace(/(^|[\s(])'[^']*'(?=$|[\s,.?!;:)])/g, '$1').replace(/"[^"]*"/g, '');
  const out: string[] = [];
  if (/[\p{L}\d]_[\p{L}\d]/u.test(text)) out.push('snake_case');
  if (/\b\p{L}*\p{Ll}\p{Lu}\p{L}*/u.test(text)) out.push('CamelCase');
  if (/\b(\p{L}+) \1\b/iu.test(text)) out.push('doubled_word');
  const schemaWords = new Set<string>();
  for (const t of schema.tables) for (const n of [t.name, ...t.columns.map((c) => c.name)]) for (const w of words(n).split(' ')) if (w) schemaWords.add(w);
  const forms = new Set<string>();
  for (const w of schemaWords) for (const f of [w, pluralize.singular(w), pluralize.plural(w)]) forms.add(f);
  for (const w of text.toLowerCase().match(/\p{L}+/gu) ?? []) {
    if (forms.has(w) || w.length < 3) continue;
    // a plural cut wrong ("siz" from "sizes"): the word plus -s/-es is a schema word whose singular it is not
    if (schemaWords.has(`${w}s`) || schemaWords.has(`${w}es`)) {
      out.push('truncated_singular');
      break;
    }
  }
  return out;
}
