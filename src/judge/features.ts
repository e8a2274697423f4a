/**
 * What the judge reads of a (question, candidate) pair, as hashed sparse features: the question's words against
 * the SQL's own (each column word in the clause it sits in, aggregates, comparisons, order, limits), against the
 * factory's reading of the query (the words the question has that the reading lacks, and the other way round, in
 * pairs: a person's "director" beside the reading's "directed"), the shape of the result, where the candidate came
 * from, and the answer path's checked-reading features. Every word pair is a feature of its own, so what the judge
 * learns on many databases is which words of a question go with which parts of a query, not one database's
 * columns. Hashing (FNV-1a, then a multiplicative mix for pairs) keeps the model a fixed array, with no vocabulary
 * to ship or to go stale.
 */
import { stem, words } from '../prompt/words.ts';
import { stems } from '../answer/text.ts';
import { isKeyword, tokenize } from '../sql/lexer.ts';
import type { JudgeCandidate } from './types.ts';

/** Bits of the hashed feature space: 2^18 weights (1 MiB as float32). */
export const FEATURE_BITS = 18;
export const FEATURE_DIM = 1 << FEATURE_BITS;
/** Changes whenever what a feature means changes: a checkpoint of another featurizer is refused. */
export const FEATURIZER_VERSION = 1;

/** Words of a question crossed with each part of a query, at most (the rarest kept: the question's own order). */
const MAX_QUESTION_STEMS = 20;
const MAX_ATOMS = 40;
const MAX_MISMATCH = 6;

export function fnv(text: string): number {
  let h = 2166136261;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619);
  return h >>> 0;
}
const pair = (a: number, b: number): number => (Math.imul(a ^ Math.imul(b, 0x9e3779b1), 0x85ebca6b) ^ (b >>> 13)) >>> 0;
const slot = (h: number): number => (h ^ (h >>> FEATURE_BITS)) & (FEATURE_DIM - 1);

/** The keywords whose place in a query says what it asks: aggregates, comparisons, sets, order. */
const TELLING = new Set(['count', 'sum', 'avg', 'min', 'max', 'distinct', 'desc', 'asc', 'like', 'not', 'in', 'between', 'except', 'union', 'intersect', 'exists', 'join', 'or', 'null', 'case', 'group', 'having', 'order', 'limit']);
const AGGREGATES = new Set(['count', 'sum', 'avg', 'min', 'max']);
const COLUMN_ATOM = /^(\w):c:(.+)$/;
const CLAUSE: Record<string, string> = { select: 's', from: 'f', join: 'f', on: 'j', where: 'w', group: 'g', having: 'h', order: 'o', limit: 'l' };

/** The parts of a query the judge reads: each column word and telling keyword in its clause, literals by kind. */
export function sqlAtoms(sql: string): string[] {
  const out = new Set<string>();
  let clause = 's';
  let sub = false;
  const toks = tokenize(sql);
  for (let i = 0; i < toks.length; i++) {
    const t = toks[i];
    if (t.depth > 0 && t.kind === 'word' && /^select$/i.test(t.text)) sub = true;
    if (t.kind === 'word') {
      const w = t.text.toLowerCase();
      if (CLAUSE[w]) clause = CLAUSE[w];
      // Aggregates are function names, not keywords, to the lexer.
      if (isKeyword(w) || (AGGREGATES.has(w) && toks[i + 1]?.text === '(')) {
        if (TELLING.has(w)) out.add(`${clause}:${w}`);
        continue;
      }
    }
    if (t.kind === 'word' || t.kind === 'qid') {
      // An alias (T1) names nothing a person says.
      if (/^t\d+$/i.test(t.text)) continue;
      for (const w of words(t.text).split(' ')) if (w.length > 1) out.add(`${clause}:c:${stem(w)}`);
    } else if (t.kind === 'str') out.add(`${clause}:str`);
    else if (t.kind === 'num') out.add(clause === 'l' ? (t.text === '1' ? 'l:1' : 'l:n') : `${clause}:num`);
    else if (t.kind === 'op' && /^(<|>|<=|>=|!=|<>)$/.test(t.text)) out.add(`${clause}:op:${t.text === '<>' ? '!=' : t.text}`);
    else if (t.kind === 'op' && t.text === '*' && clause === 's' && toks[i - 1]?.text === '(') out.add('s:count*');
  }
  if (sub) out.add('sub');
  return [...out].slice(0, MAX_ATOMS);
}

const bucket = (n: number, edges: readonly number[]): number => {
  let i = 0;
  while (i < edges.length && n > edges[i]) i++;
  return i;
};

/** The question's side, read once for all its candidates. */
export interface QuestionView {
  stems: string[];
  hashes: number[];
  set: Set<string>;
}

export function questionView(question: string): QuestionView {
  const s = [...new Set(stems(question))].slice(0, MAX_QUESTION_STEMS);
  return { stems: s, hashes: s.map((x) => fnv(`q:${x}`)), set: new Set(s) };
}

/** Where a candidate stands in its list: how many candidates share its result, and the transparent ranker's order. */
export interface ListContext {
  groupSize: number;
  /** 0-based rank of the candidate's group by the transparent score. */
  transparentRank: number;
}

/** A sparse feature vector: slots and their values (a slot may repeat: values add). */
export interface Sparse {
  idx: number[];
  val: number[];
}

export function candidateFeatures(q: QuestionView, c: JudgeCandidate, ctx: ListContext): Sparse {
  const idx: number[] = [];
  const val: number[] = [];
  const put = (h: number, v = 1): void => {
    idx.push(slot(h));
    val.push(v);
  };
  const f = c.features;
  for (const [k, v] of Object.entries(f)) if (v) put(fnv(`d:${k}`), v);
  put(fnv('d:score'), c.score / 10);
  for (const s of c.sources) put(fnv(`src:${s}`));
  put(fnv(`nsrc:${Math.min(c.sources.length, 3)}`));
  // A query the factory cannot read is, among its own candidates, mostly a broken draft; the policy's own answer
  // unread is another matter (pretraining lists have no policy candidates, so that feature starts neutral).
  const byPolicy = c.sources.includes('greedy') || c.sources.includes('sample');
  put(fnv(c.reading !== null ? 'read' : byPolicy ? 'unread:policy' : 'unread'));
  const shape = [`rows:${bucket(c.rows, [0, 1, 5, 20, 100])}`, `cols:${Math.min(c.columns, 4)}`];
  for (const s of shape) put(fnv(s));
  put(fnv(`gsize:${bucket(ctx.groupSize, [1, 2, 4, 8])}`));
  put(fnv(`trank:${Math.min(ctx.transparentRank, 5)}`));

  const atoms = sqlAtoms(c.sql);
  const atomHashes = atoms.map((a) => fnv(`a:${a}`));
  for (const h of atomHashes) put(h);
  // The question's words with the query's parts, and with the result's shape (a count asked, one row given).
  const shapeHashes = shape.map((s) => fnv(`shape:${s}`));
  // A column's words are one database's; what carries to the next is whether the question names them, so only the
  // other parts of a query (aggregates, comparisons, order, literals) are crossed with the question's words.
  const generic = atoms.map((a, i) => (COLUMN_ATOM.test(a) ? -1 : atomHashes[i])).filter((h) => h >= 0);
  for (const qh of q.hashes) {
    for (const ah of generic) put(pair(qh, ah));
    for (const sh of shapeHashes) put(pair(qh, sh));
  }
  // Column words the question names, clause by clause: what is linked and what the query adds unasked.
  const linked = new Map<string, number>();
  for (const a of atoms) {
    const m = COLUMN_ATOM.exec(a);
    if (!m) continue;
    const k = `${m[1]}:${q.set.has(m[2]) ? 'yes' : 'no'}`;
    linked.set(k, (linked.get(k) ?? 0) + 1);
  }
  for (const [k, n] of linked) put(fnv(`link:${k}`), Math.log2(1 + n));
  const named = new Set(atoms.map((a) => COLUMN_ATOM.exec(a)?.[2]).filter(Boolean));
  put(fnv('link:asked'), q.stems.filter((s) => named.has(s)).length / Math.max(1, q.stems.length));

  if (c.reading !== null) {
    const r = new Set(stems(c.reading));
    const missing = q.stems.filter((s) => !r.has(s));
    const extra = [...r].filter((s) => !q.set.has(s));
    put(fnv('r:missing'), missing.length / Math.max(1, q.stems.length));
    put(fnv('r:extra'), extra.length / Math.max(1, r.size));
    for (const s of missing.slice(0, MAX_MISMATCH)) put(fnv(`r:miss:${s}`));
    for (const s of extra.slice(0, MAX_MISMATCH)) put(fnv(`r:add:${s}`));
    // A word asked beside the word read in its place: what people say for what the factory says.
    for (const a of missing.slice(0, MAX_MISMATCH)) for (const b of extra.slice(0, MAX_MISMATCH)) put(pair(fnv(`syn:${a}`), fnv(`syn:${b}`)));
  }
  return { idx, val };
}

/** "None of these is right": its features say how much the list as a whole offers. */
export function noneFeatures(candidates: readonly JudgeCandidate[]): Sparse {
  const top = Math.max(0, ...candidates.map((c) => c.score));
  const reading = Math.max(0, ...candidates.map((c) => c.features.reading));
  const keys = ['none', `none:n:${bucket(candidates.length, [1, 3, 10, 30])}`, `none:top:${bucket(top, [4, 6, 8, 10])}`, `none:reading:${bucket(reading, [0.3, 0.5, 0.7, 0.9])}`];
  return { idx: keys.map((k) => slot(fnv(k))), val: keys.map(() => 1) };
}

/** Every candidate's features and the none option's, for one list. */
export function listFeatures(question: string, candidates: readonly JudgeCandidate[]): { candidates: Sparse[]; none: Sparse } {
  const q = questionView(question);
  const size = new Map<string, number>();
  const best = new Map<string, number>();
  for (const c of candidates) {
    size.set(c.signature, (size.get(c.signature) ?? 0) + 1);
    best.set(c.signature, Math.max(best.get(c.signature) ?? -Infinity, c.score));
  }
  const order = [...best.entries()].sort((a, b) => b[1] - a[1]).map(([s]) => s);
  const rank = new Map(order.map((s, i) => [s, i]));
  return {
    candidates: candidates.map((c) => candidateFeatures(q, c, { groupSize: size.get(c.signature)!, transparentRank: rank.get(c.signature)! })),
    none: noneFeatures(candidates),
  };
}
