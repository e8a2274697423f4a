/**
 * Questions as people ask them, for the shapes people ask: "How many X have ...?", "Which G has the
 * most X?", "What is the A of the X with the highest C?", "How many different C are there?", "What is
 * the average C of X that have ...?", "List the A of all X.", "How many X are there for each G?", links
 * between tables ("tracks that have no invoice lines"), shares, and set operations ("... that have c1 or
 * c2"). Each intent is a sentence pattern with its exact inverse here, so a question realized by an
 * intent is parsed back to the same query (general-parse.ts tries these before the general grammar of
 * realize.ts). A query that fits no intent is realized by the general grammar.
 *
 * Filters are said as "have <column> <value>" ("have status 'Operational'", "have capacity at least
 * 1000", "have construction start in 1975", "have name containing 'Kursk'"), or, for a category whose
 * value names it alone, by the value: "Operational plants in France". Values keep their quotes in most
 * questions, as people quote what they type from the data; some go bare, as people also type them.
 */
import pluralize from 'pluralize';
import { isRankGuard, type AggFn, type ColRef, type Cond, type Expr, type QueryAst, type SelectAst, type SetOpAst } from '../ast.ts';
import { colKey, columnWords, peopleColumn, spokenColumn, tablePlural, tableSingular, type Lexicon, type ValueRef } from './names.ts';
import { comparative, superlative, type Gradable } from './adjectives.ts';
import { COUNT_CLAUSE_FRAMES, COUNT_NOUN_FRAMES, DISTINCT_COUNT_FRAMES, GROUP_TOP_FRAMES, LIST_FRAMES, pickFrame, VALUE_FRAMES } from './frames.ts';
import type { ForeignKey } from '../../sql/types.ts';
import type { QuestionStyle } from '../../data/dataset-row.ts';

/** The comparison words of a filter said after its column; '=' on text is just the value. */
export const NAT_OPS: ReadonlyArray<[string, string]> = [
  ['<>', 'other than'],
  ['>=', 'at least'],
  ['<=', 'at most'],
  ['>', 'above'],
  ['<', 'below'],
  ['=', 'of'],
];
export const YEAR_OPS: ReadonlyArray<[string, string]> = [
  ['=', 'in'],
  ['>', 'after'],
  ['<', 'before'],
];

/** The phrase in the plural: its last noun, or the head before "of"/"for" ("heads of state", "reasons for visit"). */
export const lastPlural = (phrase: string): string => {
  const m = /^(.*?\S)( (?:of|for) .+)$/.exec(phrase);
  const [head, tail] = m ? [m[1], m[2]] : [phrase, ''];
  const w = head.split(' ');
  w[w.length - 1] = pluralize.plural(w[w.length - 1]);
  return w.join(' ') + tail;
};

/**
 * A column phrase in the plural when the last word is a noun that pluralizes and the plural names the
 * same column unambiguously ("names", "countries"); else as it is ("last updated", "status date").
 */
function pluralSay(lex: Lexicon, phrase: string): string {
  const last = phrase.split(' ').pop()!;
  if (last.length < 3 || /(ed|ing|from|to)$/.test(last)) return phrase;
  const pl = lastPlural(phrase);
  const hit = intentEnv(lex).plurals.get(pl);
  const own = lex.columns.get(phrase);
  return hit && own && hit[0] === own[0] && hit[1] === own[1] && pl !== phrase ? pl : phrase;
}

const quote = (v: string | number): string => (typeof v === 'number' ? String(v) : `'${v}'`);

type Say = (c: ColRef) => string;

/** How the top or bottom of a column is said: a date's are the latest and the earliest. */
const extreme = (lex: Lexicon, c: ColRef, high: boolean): string => (lex.dates?.has(`${c.table}\u0000${c.column}`) ? (high ? 'latest' : 'earliest') : high ? 'highest' : 'lowest');
/** The top or bottom of a ranked row, as people also say it of sizes ("the largest capacity"). */
const rankWord = (lex: Lexicon, c: ColRef, high: boolean, variant: number): string => {
  const w = extreme(lex, c, high);
  return variant % 2 === 1 && (w === 'highest' || w === 'lowest') ? (high ? 'largest' : 'smallest') : w;
};
export const HIGH_WORDS: ReadonlyArray<[string, 'DESC' | 'ASC']> = [['highest ', 'DESC'], ['latest ', 'DESC'], ['largest ', 'DESC'], ['lowest ', 'ASC'], ['earliest ', 'ASC'], ['smallest ', 'ASC']];

/**
 * A stored category value as people type it (names.ts Lexicon.typed): its words ("shut down" for
 * 'Shutdown'), its documented meaning, or in lower case; the value itself when no other form names it alone.
 */
export function typedValue(lex: Lexicon, table: string, column: string, value: string): string {
  const forms = [...(lex.typed?.get(colKey(table, column)) ?? [])].filter(([f, v]) => v === value && f !== value).map(([f]) => f);
  const spoken = forms.find((f) => f !== value.toLowerCase());
  if (spoken) return spoken;
  // Lower case for about half the values (by the value, so a question reads the same each time it is realized).
  const lower = forms[0];
  return lower && [...value].reduce((h, ch) => (h * 31 + ch.charCodeAt(0)) >>> 0, 7) % 2 === 0 ? lower : value;
}

/** Words after a column that open a comparison ("other than", "at least", "in 1990"): a value starting so stays quoted. */
const OP_HEADS = new Set(['other', 'at', 'above', 'below', 'of', 'in', 'after', 'before', 'containing']);

/**
 * A category value typed without quotes ("have status shut down"), as people often type it: one value in
 * two, when the form names one value of its column and reads as words the parser cannot take for grammar.
 */
function bare(lex: Lexicon, c: ColRef, form: string): boolean {
  if (!lex.typed?.get(colKey(c.table, c.column))?.has(form.toLowerCase()) || !/^\p{L}[\p{L} ]*$/u.test(form) || / and /.test(form) || OP_HEADS.has(form.split(' ')[0].toLowerCase())) return false;
  return [...form].reduce((h, ch) => (h * 17 + ch.charCodeAt(0)) >>> 0, 3) % 2 === 0;
}

function natCond(c: Cond, say: Say, lex: Lexicon, people = false): string | null {
  if (c.kind === 'cmp' && c.left.kind === 'col' && c.right.kind === 'lit' && c.right.value !== null) {
    const v = c.right.value;
    if (c.op === '=' && typeof v === 'string') {
      if (!people) return `${say(c.left)} ${quote(v)}`;
      const typed = typedValue(lex, c.left.table, c.left.column, v);
      return `${say(c.left)} ${bare(lex, c.left, typed) ? typed : quote(typed)}`;
    }
    const w = NAT_OPS.find(([op]) => op === c.op)?.[1];
    return w ? `${say(c.left)} ${w} ${quote(v)}` : null;
  }
  if (c.kind === 'cmp' && c.left.kind === 'datepart' && c.left.part === 'year' && c.right.kind === 'lit' && typeof c.right.value === 'string') {
    const w = YEAR_OPS.find(([op]) => op === c.op)?.[1];
    return w && /^\d{4}$/.test(c.right.value) ? `${say(c.left.arg)} ${w} ${c.right.value}` : null;
  }
  // "bytes above average", "the highest bytes": the column against its own aggregate over the whole table.
  if (c.kind === 'cmp' && c.left.kind === 'col' && c.right.kind === 'scalar') {
    const agg = ownAggregate(c.left, c.right.query);
    if (agg === 'AVG' && (c.op === '>' || c.op === '<')) return `${say(c.left)} ${c.op === '>' ? 'above' : 'below'} average`;
    if ((agg === 'MAX' || agg === 'MIN') && c.op === '=') return `the ${extreme(lex, c.left, agg === 'MAX')} ${say(c.left)}`;
    return null;
  }
  // A key among the keys of parent rows that match a filter is that filter across the join ("tracks
  // that have media type name 'AAC audio file'"): the same rows, since each child row has one parent.
  if (c.kind === 'in' && !c.negated && c.query.where.length === 1 && !c.query.joins.length && c.query.columns[0]?.kind === 'col') {
    const inner = c.query.where[0];
    return inner.kind === 'in' ? null : natCond(inner, say, lex, people);
  }
  if (c.kind === 'like' && !c.negated && /^%[^%]+%$/.test(c.pattern)) return `${say(c.expr)} containing '${c.pattern.slice(1, -1)}'`;
  if (c.kind === 'null' && !c.negated) return `no ${say(c.expr)}`;
  return null;
}

/** The aggregate a scalar subquery takes of column `c` over all of c's table, or null when it is anything else. */
function ownAggregate(c: ColRef, sub: SelectAst): AggFn | null {
  const [e] = sub.columns;
  const plain = sub.columns.length === 1 && !sub.where.length && !sub.joins.length && !sub.groupBy.length && sub.from.table === c.table;
  return plain && e.kind === 'agg' && !e.distinct && e.arg.kind === 'col' && e.arg.column === c.column && e.arg.table === c.table ? e.fn : null;
}

/**
 * The role a foreign key gives its parent, in words ("support rep" for customers.support_rep_id ->
 * employees), or null when the key only says which parent it is (tracks.album_id -> albums,
 * Tryout.pID -> Player.pID): then "albums that have no tracks" says it all.
 */
export function roleWords(fk: ForeignKey): string | null {
  const w = columnWords(fk.fromTable, fk.fromColumns[0]).split(' ');
  if (w.length > 1 && w[w.length - 1] === 'id') w.pop();
  const role = w.join(' ');
  const parent = tableSingular(fk.toTable);
  if (fk.fromColumns[0] === fk.toColumns[0] || role.length <= 2 || role === parent || parent.endsWith(` ${role}`) || role === 'id') return null;
  return role;
}

/** The semi- or anti-join `key [NOT] IN (SELECT fk FROM child)` of the outer table, with nothing else in it. */
function relationOf(c: Cond, base: string): { child: string; fkColumn: string; negated: boolean } | null {
  if (c.kind !== 'in' || c.expr.table !== base) return null;
  const sub = c.query;
  const [t] = sub.columns;
  if (sub.columns.length !== 1 || t.kind !== 'col' || sub.where.length || sub.joins.length || sub.groupBy.length || sub.distinct) return null;
  return { child: sub.from.table, fkColumn: t.column, negated: c.negated };
}

/** "have no tracks", "have at least one tryout", "are not the support rep of any customer", "have at least one invoice with total at most 6.5". */
function relationPhrase(c: Cond, base: string, say: Say, lex: Lexicon): string | null {
  if (c.kind === 'exists') return existsPhrase(c, base, say, lex);
  const r = relationOf(c, base);
  if (!r || c.kind !== 'in') return null;
  const role = roleWords({ fromTable: r.child, fromColumns: [r.fkColumn], toTable: base, toColumns: [c.expr.column], inferred: false });
  const one = tableSingular(r.child);
  if (role === null) return r.negated ? `have no ${tablePlural(r.child)}` : `have at least one ${one}`;
  return r.negated ? `are not the ${role} of any ${one}` : `are the ${role} of at least one ${one}`;
}

/**
 * A correlated EXISTS over a child table with one filter, `EXISTS (SELECT * FROM child WHERE child.fk =
 * outer.key AND cond)`: "have at least one invoice with total at most 6.5" ("have no invoices with ..."),
 * when the key says only which parent it is (else the general grammar says it).
 */
function existsPhrase(c: Cond & { kind: 'exists' }, base: string, say: Say, lex: Lexicon): string | null {
  const [link, cond] = c.query.where;
  if (c.query.where.length !== 2 || c.query.joins.length || link.kind !== 'cmp' || link.left.kind !== 'col' || link.right.kind !== 'col' || link.right.table !== base) return null;
  const child = c.query.from.table;
  if (roleWords({ fromTable: child, fromColumns: [link.left.column], toTable: base, toColumns: [link.right.column], inferred: false }) !== null) return null;
  const s = natCond(cond, say, lex);
  if (s === null) return null;
  return c.negated ? `have no ${tablePlural(child)} with ${s}` : `have at least one ${tableSingular(child)} with ${s}`;
}

/**
 * What the rows of q's table must satisfy, said after "that": "have status 'Operational' and capacity
 * at least 1000", "have no tracks", "are not the support rep of any customer" (attributes first, then
 * links to other tables); '' when q has no filter, null when one cannot be said. `attrs` alone is
 * what follows "with" in a terse question.
 */
function natClause(q: SelectAst, say: Say, lex: Lexicon, people = false): { text: string; attrs: string; links: number } | null {
  const attrs: string[] = [];
  const rels: string[] = [];
  const ares: string[] = [];
  for (const c of q.where) {
    if (isRankGuard(q, c)) continue;
    const r = relationPhrase(c, q.from.table, say, lex);
    if (r) {
      rels.push(r);
      continue;
    }
    const g = people ? comparison(c, q.from.table, lex) : null;
    if (g) {
      ares.push(`are ${g}`);
      continue;
    }
    const s = natCond(c, say, lex, people);
    if (s === null) return null;
    attrs.push(s);
  }
  const a = attrs.join(' and ');
  // Adjectives first, then attributes, then links: the order the parser reads them in.
  return { text: [...ares, ...(a ? [`have ${a}`] : []), ...rels].join(' and '), attrs: a, links: rels.length + ares.length };
}

/** The gradable column of `base` that c compares with a number, said with an adjective: "longer than 300000 milliseconds". */
export function comparison(c: Cond, base: string, lex: Lexicon): string | null {
  if (c.kind !== 'cmp' || c.left.kind !== 'col' || c.left.table !== base || (c.op !== '>' && c.op !== '<') || c.right.kind !== 'lit' || typeof c.right.value !== 'number') return null;
  const g = lex.gradable.get(colKey(c.left.table, c.left.column));
  return g && !g.rankOnly ? `${comparative(c.op === '>' ? g.more : g.less)} than ${c.right.value}${g.unit ? ` ${g.unit}` : ''}` : null;
}

/** The superlative a ranking by c says, where c is gradable: "most expensive" (DESC), "shortest" (ASC). */
export function rankAdjective(lex: Lexicon, c: ColRef, desc: boolean): string | null {
  const g: Gradable | undefined = lex.gradable.get(colKey(c.table, c.column));
  return g ? superlative(desc ? g.more : g.less) : null;
}

/** One group, selected first: "Which G ...", perhaps with its count or measure after it. */
const groupFirst = (q: SelectAst): boolean => {
  const [c] = q.columns;
  return q.groupBy.length === 1 && c?.kind === 'col' && c.column === q.groupBy[0].column && c.alias === q.groupBy[0].alias;
};

export const isCountStar = (e: Expr | undefined): boolean => e?.kind === 'agg' && e.fn === 'COUNT' && e.arg.kind === 'star';
const plainCol = (e: Expr | undefined): e is ColRef => e?.kind === 'col';

export const AGG_OF: Partial<Record<AggFn, string>> = { SUM: 'total', AVG: 'average', MAX: 'highest', MIN: 'lowest' };

/** What a question calls a table: its short name in odd variants where it has one ("plants"), else its full name. */
function tableNoun(lex: Lexicon, table: string, variant: number, many = true, people = false): string {
  const syn = people ? lex.synonymTables.get(table) : undefined;
  if (syn && variant % 3 === 0) return many ? syn[1] : syn[0];
  const short = lex.shortTables?.get(table);
  if (short && variant % 2 === 1) return many ? short[1] : short[0];
  return many ? tablePlural(table) : tableSingular(table);
}

/** The category value c filters q's table by, when the value names its column alone (Lexicon.values). */
function valueFilter(c: Cond, lex: Lexicon, base: string): ValueRef | null {
  if (c.kind !== 'cmp' || c.op !== '=' || c.left.kind !== 'col' || c.left.table !== base || c.right.kind !== 'lit' || typeof c.right.value !== 'string') return null;
  const r = lex.values?.get(c.right.value.toLowerCase());
  return r && r.table === c.left.table && r.column === c.left.column && r.value === c.right.value ? r : null;
}

/**
 * q's table named with the category values it is filtered by, as people name things: "Operational
 * nuclear power plants in France" (a place after "in", another category before the noun), and q
 * without those filters, whose clause says the rest. Two variants in three say it so, half of those
 * without quotes ("PHWR plants"); the others keep every filter in the clause ("plants that have ...").
 */
function tableRef(q: SelectAst, lex: Lexicon, variant: number, people = false): { phrase: string; rest: SelectAst } {
  const P = tableNoun(lex, q.from.table, variant, true, people);
  if (!lex.values || variant % 3 === 2) return { phrase: P, rest: q };
  let adj: Cond | null = null;
  let place: Cond | null = null;
  for (const c of q.where) {
    const v = valueFilter(c, lex, q.from.table);
    if (v && v.location && !place) place = c;
    else if (v && !v.location && !adj) adj = c;
  }
  if (!adj && !place) return { phrase: P, rest: q };
  const value = (c: Cond) => {
    const v = (c as { right: { value: string } }).right.value;
    // As people type it, unquoted: "shut down plants", "operational plants in france".
    if (people) return typedValue(lex, q.from.table, (c as { left: ColRef }).left.column, v);
    return variant >= 3 ? v : `'${v}'`;
  };
  const phrase = `${adj ? `${value(adj)} ` : ''}${P}${place ? ` in ${value(place)}` : ''}`;
  return { phrase, rest: { ...q, where: q.where.filter((c) => c !== adj && c !== place) } };
}

/** A question for q by one of the intents, or null when none fits. `variant` picks among an intent's phrasings. */
/**
 * A question for q by one of the intents, or null when none fits. `variant` picks among an intent's
 * phrasings; `people` asks it in people's variety (frames.ts, adjectives, values as typed, synonyms).
 */
export function realizeIntent(q: QueryAst, lex: Lexicon, style: QuestionStyle, variant: number, people = false): string | null {
  return q.kind === 'setop' ? realizeSetIntent(q, lex, style, variant) : realizeSelectIntent(q, lex, style, variant, people);
}

function realizeSelectIntent(q: SelectAst, lex: Lexicon, style: QuestionStyle, variant: number, people: boolean): string | null {
  // In people's variety a column goes by the other names people give it too ("the writer" for written_by).
  const say: Say = (c) => (people ? peopleColumn(lex, c.table, c.column, variant) : spokenColumn(lex, c.table, c.column));
  const P = tableNoun(lex, q.from.table, variant, true, people);
  const clause = natClause(q, say, lex, people);
  if (clause === null) return null;
  const conds = clause.text;
  const that = conds ? ` that ${conds}` : '';
  // Which G have at least k X (that have ...)?
  if (q.having.length) {
    const h = q.having[0];
    // The group alone, or with its count: "..., and how many X does each have?".
    const counted = q.columns.length === 2 && isCountStar(q.columns[1]);
    const one = q.having.length === 1 && groupFirst(q) && (q.columns.length === 1 || counted);
    if (!one || q.orderBy.length || h.kind !== 'cmp' || !isCountStar(h.left) || h.op !== '>=' || h.right.kind !== 'lit' || typeof h.right.value !== 'number') return null;
    const gs = pluralSay(lex, say(q.groupBy[0]));
    const tail = counted ? `, and how many ${P} does each have` : '';
    // Asking for the count too is a question in every style ("List the X with ..., and how many ...?" is not English).
    return (style === 'imperative' || style === 'terse') && !counted ? `List the ${gs} with at least ${h.right.value} ${P}${that}.` : `Which ${gs} have at least ${h.right.value} ${P}${that}${tail}?`;
  }
  const grouped = q.groupBy.length === 1;
  const ranked = q.orderBy.length > 0 && q.limit !== null;
  const v = variant % 2;
  // The table with its category values ("Operational plants in France") and the clause for the rest.
  const ref = tableRef(q, lex, variant, people);
  const refClause = ref.rest === q ? clause : natClause(ref.rest, say, lex, people);
  if (refClause === null) return null;
  const R = ref.phrase;
  const refThat = refClause.text ? ` that ${refClause.text}` : '';

  // How many X (have ...)?
  if (!grouped && !ranked && !q.distinct && q.columns.length === 1 && isCountStar(q.columns[0]) && q.orderBy.length === 0) {
    if (people) {
      const f = pickFrame([...COUNT_CLAUSE_FRAMES, ...COUNT_NOUN_FRAMES], style, variant);
      if (COUNT_CLAUSE_FRAMES.includes(f)) return `${f.text} ${R} ${refClause.text || 'are there'}${f.end}`;
      return `${f.text} ${R}${refThat}${f.end}`;
    }
    if (style === 'imperative') return `Count the ${R}${refThat}.`;
    if (style === 'terse') return `Number of ${R}${refClause.links ? refThat : refClause.text ? ` with ${refClause.attrs}` : ''}.`;
    const head = style === 'colloquial' ? 'Could you tell me how many' : 'How many';
    return refClause.text ? `${head} ${R} ${refClause.text}?` : `${head} ${R} ${style === 'colloquial' ? 'there are' : 'are there'}?`;
  }
  // What percentage of X have ...?
  if (!grouped && !ranked && !q.where.length && q.columns.length === 1 && q.columns[0].kind === 'pct') {
    const c = natCond(q.columns[0].cond, say, lex);
    if (c === null) return null;
    return style === 'imperative' ? `Find the percentage of ${P} that have ${c}.` : `What percentage of ${P} have ${c}?`;
  }
  // How many different C are there (among X that have ...)?
  if (!grouped && !ranked && !q.distinct && q.columns.length === 1 && q.orderBy.length === 0) {
    const e = q.columns[0];
    if (e.kind === 'agg' && e.fn === 'COUNT' && e.distinct && plainCol(e.arg)) {
      if (!conds && (e.arg.table !== q.from.table || q.joins.length)) return null;
      if (people) {
        const f = pickFrame(DISTINCT_COUNT_FRAMES, style, variant);
        return `${f.text} ${lastPlural(say(e.arg))}${f === DISTINCT_COUNT_FRAMES[0] ? ' are there' : ''}${conds ? ` among ${P}${that}` : ''}${f.end}`;
      }
      return `How many different ${lastPlural(say(e.arg))} are there${conds ? ` among ${P}${that}` : ''}?`;
    }
    // What is the average C of X (that have ...)?
    if (e.kind === 'agg' && e.fn !== 'COUNT' && plainCol(e.arg)) {
      const f = people ? pickFrame(VALUE_FRAMES, style, variant) : null;
      const head = f ? f.text : style === 'imperative' ? 'Find the' : 'What is the';
      const end = f ? f.end : style === 'imperative' ? '.' : '?';
      const word = e.fn === 'MAX' || e.fn === 'MIN' ? extreme(lex, e.arg, e.fn === 'MAX') : AGG_OF[e.fn];
      return `${head} ${word} ${say(e.arg)} of ${conds ? R : `all ${P}`}${refThat}${end}`;
    }
  }
  // Which G has the most X / the highest total C (that have ...)? / What are the k G with ...? Asked with
  // its value when the query selects it too: ", and how many X does it have?", ", and what is it?".
  if (ranked && grouped && q.columns.length <= 2 && groupFirst(q)) {
    const g = say(q.groupBy[0]);
    const o = q.orderBy[0];
    const desc = o.dir === 'DESC';
    const shown = q.columns[1];
    if (shown && JSON.stringify(shown) !== JSON.stringify(o.expr)) return null;
    let measure: string;
    let ask: string;
    if (isCountStar(o.expr)) {
      measure = `the ${desc ? 'most' : 'fewest'} ${R}${refThat}`;
      ask = `, and how many ${P} does ${q.limit === 1 ? 'it' : 'each'} have`;
    } else if (o.expr.kind === 'agg' && plainCol(o.expr.arg) && !o.expr.distinct) {
      const fn = o.expr.fn;
      // MAX ranked up is "the highest C"; MIN ranked down ("the highest lowest C") is left to the general grammar.
      const word = fn === 'SUM' || fn === 'AVG' ? `${desc ? 'highest' : 'lowest'} ${AGG_OF[fn]}` : (fn === 'MAX' && desc) || (fn === 'MIN' && !desc) ? extreme(lex, o.expr.arg, desc) : null;
      if (!word) return null;
      measure = `the ${word} ${say(o.expr.arg)}${conds ? `, counting only ${P}${that}` : ''}`;
      ask = q.limit === 1 ? ', and what is it' : ', and what are those figures';
    } else return null;
    const tail = shown ? ask : '';
    // "What is the most common type of crimes?": how people ask for the group that has the most rows.
    if (q.limit === 1 && desc && isCountStar(o.expr) && !shown && v === 1 && style !== 'imperative') return `What is the most common ${g} of ${R}${refThat}?`;
    if (q.limit === 1 && people && !shown) {
      const f = pickFrame(GROUP_TOP_FRAMES, style, variant);
      return f.text === 'Which' ? `Which ${g} has ${measure}?` : `${f.text} ${g} with ${measure}${f.end}`;
    }
    if (q.limit === 1) return v === 0 || style === 'formal' || shown ? `Which ${g} has ${measure}${tail}?` : `Find the ${g} with ${measure}.`;
    return `What are the ${v === 1 && desc ? 'top ' : ''}${q.limit} ${lastPlural(g)} with ${measure}${tail}?`;
  }
  // What is the A of the X with the highest C (among those that have ...)?
  if (!grouped && ranked && !q.distinct && q.columns.length === 1 && plainCol(q.columns[0]) && plainCol(q.orderBy[0].expr)) {
    const a = say(q.columns[0]);
    const c = say(q.orderBy[0].expr);
    const hi = rankWord(lex, q.orderBy[0].expr as ColRef, q.orderBy[0].dir === 'DESC', variant);
    const among = conds ? `, among those${that}` : '';
    // "the most expensive track", "the 3 longest tracks": the ranking said with the column's adjective.
    const sup = people && q.orderBy[0].expr.kind === 'col' && q.orderBy[0].expr.table === q.from.table ? rankAdjective(lex, q.orderBy[0].expr, q.orderBy[0].dir === 'DESC') : null;
    if (sup && q.limit === 1) return `What is the ${a} of the ${sup} ${tableNoun(lex, q.from.table, variant, false, people)}${among}?`;
    if (sup) return `What are the ${pluralSay(lex, a)} of the ${q.limit} ${sup} ${P}${among}?`;
    if (q.limit === 1) return `What is the ${a} of the ${tableNoun(lex, q.from.table, variant, false)} with the ${hi} ${c}${among}?`;
    return `What are the ${pluralSay(lex, a)} of the ${q.limit} ${P} with the ${hi} ${c}${among}?`;
  }
  // How many X are there for each G? / What is the average C of X for each G? / For each G, how many X have ...?
  if (grouped && !ranked && q.columns.length === 2 && plainCol(q.columns[0])) {
    const g = say(q.groupBy[0]);
    const e = q.columns[1];
    if (conds) {
      if (isCountStar(e)) return `For each ${g}, how many ${R} ${refClause.text || 'are there'}?`;
      if (e.kind === 'agg' && e.fn !== 'COUNT' && plainCol(e.arg)) return `For each ${g}, what is the ${AGG_OF[e.fn]} ${say(e.arg)} of ${P}${that}?`;
      return null;
    }
    if (isCountStar(e)) return v === 0 ? `How many ${P} are there for each ${g}?` : `Show the number of ${P} for each ${g}.`;
    if (e.kind === 'agg' && e.fn === 'COUNT' && e.distinct && plainCol(e.arg)) return `How many different ${lastPlural(say(e.arg))} are there for each ${g}?`;
    if (e.kind === 'agg' && e.fn !== 'COUNT' && plainCol(e.arg)) return `What is the ${AGG_OF[e.fn]} ${say(e.arg)} of ${P} for each ${g}?`;
    return null;
  }
  // How long is the track named 'Walk On'? / How expensive is the track with composer 'X'? One gradable
  // column of the rows one filter names, asked with its adjective.
  if (people && !grouped && !ranked && !q.distinct && !q.joins.length && q.columns.length === 1 && plainCol(q.columns[0]) && q.where.length === 1) {
    const g = lex.gradable.get(colKey(q.from.table, q.columns[0].column));
    const w = q.where[0];
    if (g && !g.rankOnly && q.columns[0].table === q.from.table && w.kind === 'cmp' && w.op === '=' && w.left.kind === 'col' && w.left.table === q.from.table && w.right.kind === 'lit' && typeof w.right.value === 'string') {
      const T = tableNoun(lex, q.from.table, variant, false, people);
      const role = NAMING_ROLES.find((r) => intentEnv(lex).naming.get(`${q.from.table}\u0000${r}`) === (w.left as ColRef).column);
      if (role && variant % 2 === 0) return `How ${g.more} is the ${T} ${role} ${quote(w.right.value)}?`;
      const s = natCond(w, say, lex, people);
      if (s !== null) return `How ${g.more} is the ${T} with ${s}?`;
    }
  }
  // List the A (and B) of X (that have ...).
  if (!grouped && !ranked && q.orderBy.length === 0 && q.columns.length >= 1 && q.columns.length <= 2 && q.columns.every(plainCol)) {
    const cols = q.columns.map((c) => pluralSay(lex, say(c as ColRef)));
    const what = `${q.distinct ? 'different ' : ''}${cols.join(' and ')}`;
    const of = conds ? `${R}${refThat}` : `all ${P}`;
    if (people) {
      const f = pickFrame(LIST_FRAMES, style, variant);
      return `${f.text} ${what} of ${of}${f.end}`;
    }
    if (style === 'imperative' || style === 'terse') return `${v === 0 ? 'List' : 'Show'} the ${what} of ${of}.`;
    return `What are the ${what} of ${of}?`;
  }
  return null;
}

/**
 * A set operation over two filters of the same rows, one filter a side, as people ask it:
 * UNION "What are the different A of X that have c1 or c2?", INTERSECT "Which A are shared by X that
 * have c1 and X that have c2?", EXCEPT "What are the A of X that have c1, excluding those of X that have c2?".
 */
function realizeSetIntent(q: SetOpAst, lex: Lexicon, style: QuestionStyle, variant: number): string | null {
  const say: Say = (c) => spokenColumn(lex, c.table, c.column);
  const sides = [q.left, q.right];
  const [a, b] = sides;
  const plainSide = (s: SelectAst) =>
    s.columns.length === 1 && plainCol(s.columns[0]) && !s.distinct && !s.groupBy.length && !s.having.length && !s.orderBy.length && s.limit === null && s.where.length === 1;
  if (!sides.every(plainSide) || a.from.table !== b.from.table) return null;
  const ca = a.columns[0] as ColRef;
  const cb = b.columns[0] as ColRef;
  if (ca.table !== cb.table || ca.column !== cb.column) return null;
  const [c1, c2] = sides.map((s) => natCond(s.where[0], say, lex));
  if (c1 === null || c2 === null) return null;
  const A = pluralSay(lex, say(ca));
  const P = tableNoun(lex, a.from.table, variant);
  if (q.op === 'UNION') return style === 'imperative' ? `List the different ${A} of ${P} that have ${c1} or ${c2}.` : `What are the different ${A} of ${P} that have ${c1} or ${c2}?`;
  if (q.op === 'INTERSECT') return `Which ${A} are shared by ${P} that have ${c1} and ${P} that have ${c2}?`;
  return `What are the ${A} of ${P} that have ${c1}, excluding those of ${P} that have ${c2}?`;
}

/** How a row is called by its name or title column: "the track named 'Walk On'", "the album titled 'X'". */
export const NAMING_ROLES = ['named', 'titled'] as const;
const NAMING_WORDS: Record<string, (typeof NAMING_ROLES)[number]> = { name: 'named', title: 'titled' };

/** The lexicon's phrases as the intent parser (intent-parse.ts) and pluralSay look them up, built once per lexicon. */
export interface IntentEnv {
  lex: Lexicon;
  /** Every column phrase, longest first (so "status date" is tried before "status"). */
  phrases: string[];
  /** Table plurals, longest first. */
  tablePlurals: string[];
  /** Plural phrases of columns ("reactor models") -> [table, column]. */
  plurals: Map<string, [string, string]>;
  /** The keys of plurals, longest first. */
  pluralPhrases: string[];
  /** [singular phrase, table] of every table whose singular names it alone, longest first. */
  tableSingulars: Array<[string, string]>;
  /** The lexicon's category values (lowercase), longest first. */
  valueKeys: string[];
  /** "table\u0000named" / "table\u0000titled" -> the table's one column whose words are "name" / "title". */
  naming: Map<string, string>;
  /** Each gradable column's adjectives, both ways ("more expensive"/"most expensive" DESC, "cheaper"/"cheapest" ASC), longest first. */
  gradables: Array<{ g: Gradable; comparative: string; superlative: string; dir: 'ASC' | 'DESC' }>;
}

const cache = new WeakMap<Lexicon, IntentEnv>();

export function intentEnv(lex: Lexicon): IntentEnv {
  let e = cache.get(lex);
  if (!e) {
    const phrases = [...lex.columns.keys()].sort((a, b) => b.length - a.length);
    const plurals = new Map<string, [string, string]>();
    const clash = new Set<string>();
    for (const [p, tc] of lex.columns) {
      const pl = lastPlural(p);
      if (plurals.has(pl) || lex.columns.has(pl)) clash.add(pl);
      plurals.set(pl, tc);
    }
    for (const c of clash) plurals.delete(c);
    const longestFirst = (a: string, b: string): number => b.length - a.length;
    const shortOf = (t: string) => lex.shortTables?.get(t);
    const synOf = (t: string) => lex.synonymTables.get(t);
    const tablePlurals = [...lex.tables.keys()].filter((k) => tablePlural(lex.tables.get(k)!) === k || shortOf(lex.tables.get(k)!)?.[1] === k || synOf(lex.tables.get(k)!)?.[1] === k).sort(longestFirst);
    const tableSingulars = [...lex.tables.entries()].filter(([k, t]) => tableSingular(t) === k || shortOf(t)?.[0] === k || synOf(t)?.[0] === k).sort((a, b) => longestFirst(a[0], b[0]));
    const gradables: IntentEnv['gradables'] = [];
    for (const g of lex.gradable.values()) {
      for (const [adj, dir] of [[g.more, 'DESC'], [g.less, 'ASC']] as const) gradables.push({ g, comparative: comparative(adj), superlative: superlative(adj), dir });
    }
    gradables.sort((a, b) => b.superlative.length - a.superlative.length || b.comparative.length - a.comparative.length);
    const naming = new Map<string, string>();
    const doubled = new Set<string>();
    for (const [t, c] of lex.columns.values()) {
      const role = NAMING_WORDS[columnWords(t, c)];
      const k = `${t}\u0000${role}`;
      if (!role || naming.get(k) === c) continue;
      if (naming.has(k)) doubled.add(k);
      naming.set(k, c);
    }
    for (const k of doubled) naming.delete(k);
    const valueKeys = [...(lex.values?.keys() ?? [])].sort(longestFirst);
    e = { lex, phrases, tablePlurals, plurals, pluralPhrases: [...plurals.keys()].sort(longestFirst), tableSingulars, valueKeys, gradables, naming };
    cache.set(lex, e);
  }
  return e;
}
