/**
 * Stage 5: the built-in realizer. Turns a query AST into a question in one of several styles,
 * plus a BIRD-style evidence line stating the domain knowledge the SQL needs (literal encodings,
 * formulas). The grammar is closed and written down here so that general-parse.ts can parse it back:
 *
 *   question := PREFIX core SUFFIX
 *   core     := targets [" for each " COLUMN] [" where " cond (" and " cond)*]   (cond := ... | "either " cond (" or " cond)+)
 *               [", keeping only groups where " cond] [", sorted by " expr (" from highest to lowest" | " from lowest to highest")]
 *               [", showing only the top one" | ", showing only the top " N]
 *             | core (", together with " | ", that are also among " | ", excluding ") core
 *   targets  := expr ((", " | " and ") expr)*         (a query showing only its group says it as its one target)
 *
 * Implicit (not spoken, restored by the parser by the same rule): the tie-breaker of a ranked
 * query (the base table's primary key, or the group), and the NOT NULL guard on a ranked column.
 */
import type { Cond, Expr, QueryAst, SelectAst } from '../ast.ts';
import { columnPhrase, spokenColumn, tablePlural, tableSingular, type Lexicon } from './names.ts';
import { AGG_OF, realizeIntent } from './intents.ts';
import { printLiteral } from '../print.ts';
import { datePart, likeOp, nameIn, type SqlDialect } from '../../sql/dialect.ts';
import type { QuestionStyle } from '../../data/dataset-row.ts';
import type { Stage, SynthPair } from '../types.ts';
import { QUESTION_STYLES } from '../../data/dataset-row.ts';

export const OP_WORDS: Record<string, string> = { '-': 'minus', '+': 'plus', '*': 'multiplied by', '/': 'divided by' };
export const CMP_WORDS: Record<string, string> = {
  '=': 'is',
  '<>': 'is not',
  '>': 'is greater than',
  '<': 'is less than',
  '>=': 'is at least',
  '<=': 'is at most',
};
/** The aggregates' words: the intents' own (one home), as this realizer and its parser index them. */
export const AGG_WORDS: Readonly<Record<string, string>> = { ...AGG_OF } as Record<string, string>;
export const SET_WORDS: Record<string, string> = { UNION: ', together with ', INTERSECT: ', that are also among ', EXCEPT: ', excluding ' };

function litText(v: string | number | null, asNumber = false): string {
  if (typeof v === 'number') return String(v);
  if (v === null) return 'missing';
  return asNumber ? v : `'${v}'`;
}

/** How a column is named: by the schema's lexicon when the realizer has one. */
type Say = (table: string, column: string) => string;

function expr(e: Expr, base: string, say: Say): string {
  switch (e.kind) {
    case 'col':
      return `the ${say(e.table, e.column)}`;
    case 'lit':
      return litText(e.value);
    case 'star':
      return 'everything';
    case 'agg':
      if (e.fn === 'COUNT') {
        if (e.arg.kind === 'star') return `the number of ${tablePlural(base)}`;
        if (e.arg.kind === 'col') return `the number of ${e.distinct ? 'distinct ' : ''}${say(e.arg.table, e.arg.column)} values`;
        throw new Error('unrealizable COUNT');
      }
      if (e.arg.kind !== 'col') throw new Error('unrealizable aggregate');
      return `the ${AGG_WORDS[e.fn]} ${say(e.arg.table, e.arg.column)}`;
    case 'arith':
      return `${expr(e.left, base, say)} ${OP_WORDS[e.op]} ${expr(e.right, base, say)}`;
    case 'datepart':
      return `the ${e.part} of ${expr(e.arg, base, say)}`;
    case 'pct':
      return `the percentage of ${tablePlural(base)} for which ${cond(e.cond, base, say)}`;
    case 'scalar': {
      const inner = e.query.columns[0];
      return expr(inner, e.query.from.table, say);
    }
  }
}

function cond(c: Cond, base: string, say: Say): string {
  switch (c.kind) {
    case 'cmp': {
      const asNumber = c.left.kind === 'datepart';
      const right = c.right.kind === 'lit' ? litText(c.right.value, asNumber) : expr(c.right, base, say);
      return `${expr(c.left, base, say)} ${CMP_WORDS[c.op]} ${right}`;
    }
    case 'like':
      return `${expr(c.expr, base, say)} ${c.negated ? 'does not contain' : 'contains'} '${c.pattern.replace(/^%|%$/g, '')}'`;
    case 'null':
      return `${expr(c.expr, base, say)} is ${c.negated ? 'known' : 'missing'}`;
    case 'in': {
      const sub = c.query;
      const target = sub.columns[0];
      if (target.kind !== 'col') throw new Error('unrealizable IN');
      const head = `${expr(c.expr, base, say)} ${c.negated ? 'is not one of' : 'is one of'} the ${say(target.table, target.column)} values`;
      return sub.where.length ? `${head} for which ${cond(sub.where[0], sub.from.table, say)}` : head;
    }
    case 'exists': {
      const sub = c.query;
      return `there is ${c.negated ? 'no' : 'at least one'} ${tableSingular(sub.from.table)} for which ${cond(sub.where[1], sub.from.table, say)}`;
    }
    case 'or':
      // "either A or B": "either" opens it, so the parser knows where an alternative ends and the outer
      // conjunction's " and " resumes; an alternative of several conditions would make that " and " ambiguous.
      if (c.any.some((all) => all.length !== 1)) throw new Error('unrealizable OR of conjunctions');
      return `either ${c.any.map((all) => cond(all[0], base, say)).join(' or ')}`;
  }
}

/**
 * What a query shows besides its group, which " for each " says: the factory drafts the group first, people
 * write it anywhere (`SELECT count(*), country ... GROUP BY country`) or show another column of it
 * (`SELECT name, count(*) ... GROUP BY id`: both are said, the name as a target).
 */
function targetsOf(q: SelectAst): Expr[] {
  const g = q.groupBy[0];
  if (!g) return q.columns;
  const at = q.columns.findIndex((e) => e.kind === 'col' && e.alias === g.alias && e.column === g.column);
  return at < 0 ? q.columns : q.columns.filter((_, i) => i !== at);
}

/** The factory's own order: no group, or the group as the first column (what intents.ts and its parser speak). */
function groupLeads(q: QueryAst): boolean {
  const leads = (s: SelectAst) => {
    const [g] = s.groupBy;
    const first = s.columns[0];
    return !g || (first?.kind === 'col' && first.alias === g.alias && first.column === g.column);
  };
  return q.kind === 'select' ? leads(q) : leads(q.left) && leads(q.right);
}

function core(q: SelectAst, say: Say): string {
  const base = q.from.table;
  // A query that shows only its group (`SELECT name ... GROUP BY name HAVING count(*) > 2`) says it twice:
  // "the name for each name, keeping only groups where ..."; the parser reads the repeated group as one column.
  const shown = targetsOf(q);
  const targets = shown.length ? shown : q.groupBy.slice(0, 1);
  if (!targets.length) throw new Error('unrealizable: nothing selected');
  const parts = targets.map((e) => (q.distinct && e.kind === 'col' ? `the different ${say(e.table, e.column)}` : expr(e, base, say)));
  let s = parts.length > 1 ? `${parts.slice(0, -1).join(', ')} and ${parts[parts.length - 1]}` : parts[0];
  if (q.groupBy.length) s += ` for each ${say(q.groupBy[0].table, q.groupBy[0].column)}`;
  const where = q.where.filter((c) => !(c.kind === 'null' && c.negated && q.limit !== null));
  if (where.length) s += ` where ${where.map((c) => cond(c, base, say)).join(' and ')}`;
  if (q.having.length) s += `, keeping only groups where ${cond(q.having[0], base, say)}`;
  if (q.orderBy.length) s += `, sorted by ${expr(q.orderBy[0].expr, base, say)} ${q.orderBy[0].dir === 'DESC' ? 'from highest to lowest' : 'from lowest to highest'}`;
  if (q.limit !== null) s += q.limit === 1 ? ', showing only the top one' : `, showing only the top ${q.limit}`;
  return s;
}

export function realizeCore(q: QueryAst, say: Say = columnPhrase): string {
  if (q.kind === 'select') return core(q, say);
  return `${core(q.left, say)}${SET_WORDS[q.op]}${core(q.right, say)}`;
}

function singleValue(q: QueryAst): boolean {
  if (q.kind !== 'select') return false;
  const targets = targetsOf(q);
  return targets.length === 1 && (targets[0].kind === 'agg' || targets[0].kind === 'pct' || targets[0].kind === 'arith');
}

const cap = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

/** Style wrappers; general-parse.ts strips exactly these. */
export const STYLE_PREFIXES: Record<QuestionStyle, string[]> = {
  formal: ['What is ', 'What are '],
  colloquial: ['Could you tell me ', "I'd like to know "],
  imperative: ['List ', 'Find ', 'Show '],
  terse: [''],
};

/**
 * The question for q in a style. With the schema's lexicon, columns are named as people name them
 * (their own words where unambiguous) and a query of a common intent is asked as people ask it
 * (intents.ts); `intents: false` keeps to the general grammar below (align.ts's second try).
 */
export function realizeQuestion(q: QueryAst, style: QuestionStyle, variant = 0, lex?: Lexicon, intents = true, people = false): string {
  return worded(q, style, variant, lex, intents, people).text;
}

/** The question and which grammar said it. */
function worded(q: QueryAst, style: QuestionStyle, variant: number, lex: Lexicon | undefined, intents: boolean, people = false): { text: string; grammar: 'intent' | 'general' } {
  const natural = lex && intents && groupLeads(q) ? realizeIntent(q, lex, style, variant, people) : null;
  return natural ? { text: natural, grammar: 'intent' } : { text: generalQuestion(q, style, variant, lex), grammar: 'general' };
}

function generalQuestion(q: QueryAst, style: QuestionStyle, variant: number, lex?: Lexicon): string {
  const c = realizeCore(q, lex ? (t, col) => spokenColumn(lex, t, col) : columnPhrase);
  switch (style) {
    case 'formal':
      return `${singleValue(q) ? 'What is' : 'What are'} ${c}?`;
    case 'colloquial':
      return variant % 2 === 0 ? `Could you tell me ${c}?` : `I'd like to know ${c}.`;
    case 'imperative':
      return `${['List', 'Find', 'Show'][variant % 3]} ${c}.`;
    case 'terse':
      return `${cap(c.replace(/^the /, ''))}.`;
  }
}

/** Up to `k` other questions for p's query, each different from the rest: other styles, variants and people's forms. */
function otherPhrasings(p: SynthPair, lex: Lexicon, k: number, rng: { int(n: number): number }): string[] {
  const seen = new Set([p.question]);
  const out: string[] = [];
  for (let tries = 0; out.length < k && tries < 6 * k; tries++) {
    let text: string;
    try {
      text = worded(p.ast, QUESTION_STYLES[rng.int(QUESTION_STYLES.length)], rng.int(6), lex, true, rng.int(3) > 0).text;
    } catch {
      continue;
    }
    if (seen.has(text)) continue;
    seen.add(text);
    out.push(text);
  }
  return out;
}

/** Evidence: what each literal refers to and the formulas behind computed values. */
export function realizeEvidence(q: QueryAst, lex?: Lexicon, d: SqlDialect = 'sqlite'): string {
  const say: Say = lex ? (t, c) => spokenColumn(lex, t, c) : columnPhrase;
  const notes: string[] = [];
  const seen = new Set<string>();
  const add = (s: string) => {
    if (!seen.has(s)) {
      seen.add(s);
      notes.push(s);
    }
  };
  const colSql = (t: string, c: string) => `${nameIn(t, d)}.${nameIn(c, d)}`;
  const visitCond = (c: Cond) => {
    if (c.kind === 'cmp') {
      if (c.left.kind === 'col' && c.right.kind === 'lit' && typeof c.right.value === 'string') {
        add(`'${c.right.value}' refers to ${colSql(c.left.table, c.left.column)} ${c.op} ${printLiteral(c.right.value)}`);
      }
      if (c.left.kind === 'datepart') {
        const a = c.left.arg;
        add(`the ${c.left.part} of ${say(a.table, a.column)} refers to ${datePart(c.left.part, colSql(a.table, a.column), d)}`);
      }
      if (c.right.kind === 'scalar') visitExpr(c.right);
    }
    if (c.kind === 'like') add(`contains '${c.pattern.replace(/^%|%$/g, '')}' refers to ${colSql(c.expr.table, c.expr.column)} ${likeOp(d)} ${printLiteral(c.pattern)}`);
    if (c.kind === 'in' || c.kind === 'exists') visitSelect(c.query);
    if (c.kind === 'or') c.any.flat().forEach(visitCond);
  };
  const visitExpr = (e: Expr) => {
    if (e.kind === 'arith' && e.left.kind === 'col' && e.right.kind === 'col') {
      add(`${say(e.left.table, e.left.column)} ${OP_WORDS[e.op]} ${say(e.right.table, e.right.column)} = ${colSql(e.left.table, e.left.column)} ${e.op} ${colSql(e.right.table, e.right.column)}`);
    }
    if (e.kind === 'pct') {
      add('percentage = COUNT(rows meeting the condition) * 100 / COUNT(all rows)');
      visitCond(e.cond);
    }
    if (e.kind === 'agg' && e.arg.kind === 'col' && e.fn !== 'COUNT') add(`${AGG_WORDS[e.fn]} ${say(e.arg.table, e.arg.column)} refers to ${e.fn}(${colSql(e.arg.table, e.arg.column)})`);
    if (e.kind === 'scalar') visitSelect(e.query);
  };
  const visitSelect = (s: SelectAst) => {
    s.columns.forEach(visitExpr);
    s.where.forEach(visitCond);
    s.having.forEach(visitCond);
  };
  if (q.kind === 'select') visitSelect(q);
  else {
    visitSelect(q.left);
    visitSelect(q.right);
  }
  return notes.join('; ');
}

export function realizePair(p: SynthPair, style: QuestionStyle, variant: number, lex?: Lexicon, intents = true, people = false, d: SqlDialect = 'sqlite'): void {
  p.style = style;
  const w = worded(p.ast, style, variant, lex, intents, people);
  p.question = w.text;
  p.provenance.grammar = w.grammar;
  if (people && w.grammar === 'intent') p.provenance.people = true;
  else delete p.provenance.people;
  p.evidence = realizeEvidence(p.ast, lex, d);
}

export interface RealizeOptions {
  /** Share of questions asked in people's variety (frames, adjectives, values as typed, synonyms); 0 keeps the plain intents. */
  people: number;
  /** Questions wanted per query: the first is the pair's question, the others its paraphrases (align.ts keeps those that parse back). */
  phrasings: number;
}

/** The realize stage, naming columns by the schema's lexicon (the one the pipeline built for profiling). */
export const realizeStage = (lex: Lexicon, opts: RealizeOptions = { people: 0, phrasings: 1 }): Stage<SynthPair, SynthPair> => ({
  name: 'realize',
  async run(items, ctx) {
    ctx.progress.start('realize', items.length);
    const out: SynthPair[] = [];
    for (const p of items) {
      try {
        // Drawn only when asked for, so a run without them draws what it drew before.
        const people = opts.people > 0 && ctx.rng.next() < opts.people;
        realizePair(p, ctx.rng.pick(QUESTION_STYLES), ctx.rng.int(6), lex, true, people, ctx.dialect);
        if (opts.phrasings > 1) p.paraphrases = otherPhrasings(p, lex, opts.phrasings - 1, ctx.rng);
      } catch {
        ctx.reject(p, 'unrealizable');
        continue;
      }
      p.provenance.stages.push('realize');
      out.push(p);
      ctx.progress.tick();
    }
    ctx.progress.stop();
    return out;
  },
});
