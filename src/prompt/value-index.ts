/**
 * An index of a database's stored text cells, to find which of them a question mentions however it types them:
 * the same (exact), in another case or with other punctuation (folded), another form of the word (stemmed: Porter,
 * the `stemmer` package), with a typo (fuzzy: edit distance 1, or 2 for long words, found through a trigram index
 * and checked with `fastest-levenshtein`), or only part of a multi-word value. The anchor values of BRIDGE
 * (Lin et al. 2020) and the value retrieval of CodeS (Li et al. 2024) do this to put matching cells in the prompt.
 *
 * Built once per database, with bounded memory: per text column, the `maxValuesPerColumn` most frequent distinct
 * values (ties by value) among the first `scanRows` rows of its table, at most `maxValues` values in all (shared
 * evenly between the columns), values longer than `maxValueChars` left out, and columns skipped when they hold
 * free text (most values longer than `maxValueChars`) or codes (nearly every value mostly digits and signs: ids,
 * dates, phone numbers).
 * What is kept is small: the index holds each kept value once plus its tokens, never the rows.
 */
import type Database from 'better-sqlite3';
import { distance } from 'fastest-levenshtein';
import { openReadOnly, storedTables, tableColumns } from '../sql/introspect.ts';
import { quoteIdent } from '../sql/lexer.ts';
import { STOP_WORDS, stem, tokens } from './words.ts';

export interface ValueIndexOptions {
  /** Distinct values kept per column (the most frequent). Default 5000. */
  maxValuesPerColumn?: number;
  /**
   * Distinct values kept in all, shared evenly between the text columns. Default 50000: at most about 0.75 KB of
   * heap per value (measured when every value brings a new word), so under ~40 MiB.
   */
  maxValues?: number;
  /** Longer values are not indexed (free text). Default 60. */
  maxValueChars?: number;
  /** Rows of a table read to find its values (in storage order). Default 1000000. */
  scanRows?: number;
}

export type MatchKind = 'exact' | 'folded' | 'stem' | 'fuzzy' | 'partial';

export interface ValueMatch {
  table: string;
  column: string;
  /** The cell as stored. */
  value: string;
  /**
   * 0..1: 1 typed as stored; 0.95 other case or punctuation; up to 0.9 every word matched by stem or typo; 0.9 a run
   * of its words, as typed, that no other value of the column holds; below 0.7 part of the value.
   */
  score: number;
  kind: MatchKind;
}

export interface LookupOptions {
  /** Matches returned, best first. Default 10. */
  limit?: number;
  /** Matches scoring below are dropped. Default 0.3. */
  minScore?: number;
}

export interface ValueIndexStats {
  columns: number;
  values: number;
  tokens: number;
  skipped: Array<{ table: string; column: string; reason: 'not text' | 'free text' | 'codes' }>;
}

/** A token's match with a question word: 1 same, 0.95 two question words written as one, 0.9 same stem, 0.8/0.7 one/two edits. */
const M_EXACT = 1;
const M_JOINED = 0.95;
const M_STEM = 0.9;
const M_FUZZY = [1, 0.8, 0.7];
/**
 * A question word found in more values than this only counts with others, never alone: "street" would pull every
 * address. Whole values typed as stored are still found through byFolded.
 */
const MAX_POSTINGS = 200;
/** A value named in part, by consecutive words of it that name it alone in its column: as strong as a typed value (edit.ts STRONG_VALUE). */
const M_PART = 0.9;
/** Content words a part must say to name a value. */
const PART_WORDS = 2;
/** Question phrases (consecutive words) looked up as whole values, up to this many words. */
const MAX_PHRASE_WORDS = 6;

function trigrams(token: string): string[] {
  const s = `^${token}$`;
  const out: string[] = [];
  for (let i = 0; i + 3 <= s.length; i++) out.push(s.slice(i, i + 3));
  return out;
}

/** True when `needle` occurs as consecutive items of `hay`. */
function containsRun(hay: readonly string[], needle: readonly string[]): boolean {
  if (needle.length === 0 || needle.length > hay.length) return false;
  outer: for (let i = 0; i + needle.length <= hay.length; i++) {
    for (let j = 0; j < needle.length; j++) if (hay[i + j] !== needle[j]) continue outer;
    return true;
  }
  return false;
}

function push<K>(map: Map<K, number[]>, key: K, id: number): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [id]);
  else if (list[list.length - 1] !== id) list.push(id);
}

export class ValueIndex {
  private readonly columns: Array<{ table: string; column: string }> = [];
  private readonly skipped: ValueIndexStats['skipped'] = [];
  private readonly values: string[] = [];
  private readonly valueColumn: number[] = [];
  private readonly valueCount: number[] = [];
  /** Folded tokens of each value, stop words included (for the consecutive-words test). */
  private readonly valueTokens: string[][] = [];
  private readonly vocab = new Map<string, number>();
  private readonly vocabTokens: string[] = [];
  /** Token id -> ids of the values holding it (content tokens only). */
  private readonly postings: number[][] = [];
  private readonly byStem = new Map<string, number[]>();
  private readonly byTrigram = new Map<string, number[]>();
  /** Folded whole value -> ids of the values (a common word alone still finds the value that is just that word). */
  private readonly byFolded = new Map<string, number[]>();

  /** Adds one column's distinct values (most frequent first), with how often each is stored. */
  addColumn(table: string, column: string, values: ReadonlyArray<readonly [string, number]>): void {
    const col = this.columns.length;
    this.columns.push({ table, column });
    for (const [value, count] of values) {
      const toks = tokens(value);
      if (toks.length === 0) continue;
      const id = this.values.length;
      this.values.push(value);
      this.valueColumn.push(col);
      this.valueCount.push(count);
      this.valueTokens.push(toks);
      if (toks.length <= MAX_PHRASE_WORDS) push(this.byFolded, toks.join(' '), id);
      for (const t of toks) {
        if (STOP_WORDS.has(t)) continue;
        let tid = this.vocab.get(t);
        if (tid === undefined) {
          tid = this.vocabTokens.length;
          this.vocab.set(t, tid);
          this.vocabTokens.push(t);
          this.postings.push([]);
          push(this.byStem, stem(t), tid);
          if (t.length >= 4 && !/\d/.test(t)) for (const g of trigrams(t)) push(this.byTrigram, g, tid);
        }
        const p = this.postings[tid];
        if (p[p.length - 1] !== id) p.push(id);
      }
    }
  }

  skip(table: string, column: string, reason: ValueIndexStats['skipped'][number]['reason']): void {
    this.skipped.push({ table, column, reason });
  }

  stats(): ValueIndexStats {
    return { columns: this.columns.length, values: this.values.length, tokens: this.vocabTokens.length, skipped: [...this.skipped] };
  }

  /** Vocabulary tokens close to a question word, with their match quality. */
  private matchWord(q: string, into: Map<number, number>): void {
    const set = (tid: number, m: number): void => {
      if ((into.get(tid) ?? 0) < m) into.set(tid, m);
    };
    const exact = this.vocab.get(q);
    if (exact !== undefined) set(exact, M_EXACT);
    let found = exact !== undefined;
    for (const tid of this.byStem.get(stem(q)) ?? []) {
      if (tid !== exact) set(tid, M_STEM);
      found = true;
    }
    // A typo only when the word is not stored as typed: "frances" is no typo of a stored "france".
    if (found || q.length < 4 || /\d/.test(q)) return;
    const k = q.length >= 8 ? 2 : 1;
    const grams = trigrams(q);
    const shared = new Map<number, number>();
    for (const g of grams) {
      for (const tid of this.byTrigram.get(g) ?? []) {
        if (Math.abs(this.vocabTokens[tid].length - q.length) <= k) shared.set(tid, (shared.get(tid) ?? 0) + 1);
      }
    }
    // One edit changes at most 3 trigrams of the padded word.
    const need = Math.max(1, grams.length - 3 * k);
    for (const [tid, n] of shared) {
      if (n < need) continue;
      const d = distance(q, this.vocabTokens[tid]);
      if (d <= k) set(tid, M_FUZZY[d]);
    }
  }

  /**
   * True when the question says a run of the value's words, as typed, of at least PART_WORDS content words and
   * opening and closing on one, and no other value of the column holds that run.
   */
  private namedInPart(id: number, qt: readonly string[]): boolean {
    const toks = this.valueTokens[id];
    const col = this.valueColumn[id];
    for (let len = toks.length - 1; len >= 2; len--) {
      for (let i = 0; i + len <= toks.length; i++) {
        const run = toks.slice(i, i + len);
        const content = run.filter((t) => !STOP_WORDS.has(t));
        if (content.length < PART_WORDS || STOP_WORDS.has(run[0]) || STOP_WORDS.has(run[len - 1]) || !containsRun(qt, run)) continue;
        // The values holding the run's rarest word, of this column: the run must be in this one alone.
        const rarest = content.map((t) => this.postings[this.vocab.get(t)!]).sort((a, b) => a.length - b.length)[0];
        if (rarest.every((o) => o === id || this.valueColumn[o] !== col || !containsRun(this.valueTokens[o], run))) return true;
      }
    }
    return false;
  }

  /** Stored cells the question mentions, best first (score, then the more frequent cell, the shorter, then by name). */
  lookup(question: string, opts: LookupOptions = {}): ValueMatch[] {
    const limit = opts.limit ?? 10;
    const minScore = opts.minScore ?? 0.3;
    const qt = tokens(question);
    const matched = new Map<number, number>();
    const words = new Set(qt.filter((t) => t.length >= 2 && !STOP_WORDS.has(t)));
    for (const q of words) this.matchWord(q, matched);
    // "shut down" for a stored 'Shutdown', "data base" for 'database'.
    for (let i = 0; i + 1 < qt.length; i++) {
      const tid = this.vocab.get(qt[i] + qt[i + 1]);
      if (tid !== undefined && (matched.get(tid) ?? 0) < M_JOINED) matched.set(tid, M_JOINED);
    }
    const candidates = new Set<number>();
    for (const tid of matched.keys()) {
      const p = this.postings[tid];
      if (p.length <= MAX_POSTINGS) for (const id of p) candidates.add(id);
    }
    for (let i = 0; i < qt.length; i++) {
      for (let n = 1; n <= MAX_PHRASE_WORDS && i + n <= qt.length; n++) {
        for (const id of this.byFolded.get(qt.slice(i, i + n).join(' ')) ?? []) candidates.add(id);
      }
    }
    const out: Array<ValueMatch & { id: number }> = [];
    for (const id of candidates) {
      const toks = this.valueTokens[id];
      const content = toks.filter((t) => !STOP_WORDS.has(t));
      let sum = 0;
      let all = true;
      let worst = 1;
      let best = 0;
      for (const t of content) {
        const m = matched.get(this.vocab.get(t)!) ?? 0;
        sum += m;
        if (m === 0) all = false;
        else worst = Math.min(worst, m);
        best = Math.max(best, m);
      }
      let score: number;
      let kind: MatchKind;
      if (containsRun(qt, toks)) {
        [score, kind] = question.includes(this.values[id]) ? [1, 'exact'] : [0.95, 'folded'];
      } else if (all) {
        score = 0.9 * (sum / content.length);
        kind = worst >= M_JOINED ? 'folded' : worst >= M_STEM ? 'stem' : 'fuzzy';
      } else if (this.namedInPart(id, qt)) {
        // A few of a long value's words, in order, that no other value of its column has ("elm street" for 'On or near
        // Elm Street'): the value named, as people name a long one, though only in part.
        [score, kind] = [M_PART, 'partial'];
      } else if (best >= M_STEM) {
        // Part of a multi-word value (a word of it as typed or stemmed; a typo of one word of many is noise): worth more the more of it the question covers.
        score = 0.2 + 0.5 * (sum / content.length);
        kind = 'partial';
      } else {
        continue;
      }
      if (score < minScore) continue;
      const c = this.columns[this.valueColumn[id]];
      out.push({ id, table: c.table, column: c.column, value: this.values[id], score: Math.round(score * 1000) / 1000, kind });
    }
    out.sort(
      (a, b) =>
        b.score - a.score ||
        this.valueCount[b.id] - this.valueCount[a.id] ||
        a.value.length - b.value.length ||
        (a.table < b.table ? -1 : a.table > b.table ? 1 : 0) ||
        (a.column < b.column ? -1 : a.column > b.column ? 1 : 0) ||
        (a.value < b.value ? -1 : a.value > b.value ? 1 : 0),
    );
    return out.slice(0, limit).map(({ id: _id, ...m }) => m);
  }
}

/** Mostly digits and signs: an id, a date, a phone number, a hash ('C000123', '2018-08-01'), not a name ('Kaiga-4'). */
function isCode(v: string): boolean {
  const letters = v.match(/\p{L}/gu)?.length ?? 0;
  return letters < 0.5 * v.replace(/\s/g, '').length;
}

/** How many sampled values a column needs before its kind (free text, codes) is judged. */
export const PROBE_ROWS = 200;

/** Why a text column (its first PROBE_ROWS stored text values) is not indexed, or null when it is. */
export function unindexedKind(probe: readonly string[], maxChars: number): 'not text' | 'free text' | 'codes' | null {
  if (probe.length === 0) return 'not text';
  if (probe.filter((v) => v.length > maxChars).length * 2 > probe.length) return 'free text';
  if (probe.filter(isCode).length >= 0.9 * probe.length) return 'codes';
  return null;
}

/** Index sizes from the options and the number of text columns (one home for the defaults of both engines). */
export function indexLimits(opts: ValueIndexOptions): { perColumn: number; total: number; maxChars: number; scanRows: number } {
  return { perColumn: opts.maxValuesPerColumn ?? 5000, total: opts.maxValues ?? 50_000, maxChars: opts.maxValueChars ?? 60, scanRows: opts.scanRows ?? 1_000_000 };
}

/** Builds the index of an open database (tables in name order; views are not indexed: they can be slow to run). */
export function buildValueIndexFrom(db: Database.Database, opts: ValueIndexOptions = {}): ValueIndex {
  const { perColumn, total, maxChars, scanRows } = indexLimits(opts);
  const index = new ValueIndex();
  const textColumns: Array<{ table: string; column: string; from: string }> = [];
  for (const table of storedTables(db)) {
    const from = `(SELECT * FROM ${quoteIdent(table)} LIMIT ${scanRows})`;
    for (const column of tableColumns(db, table)) {
      const c = quoteIdent(column);
      const probe = db.prepare(`SELECT ${c} FROM ${quoteIdent(table)} WHERE typeof(${c}) = 'text' LIMIT ${PROBE_ROWS}`).pluck().all() as string[];
      const why = unindexedKind(probe, maxChars);
      if (why) index.skip(table, column, why);
      else textColumns.push({ table, column, from });
    }
  }
  const cap = Math.min(perColumn, Math.floor(total / Math.max(1, textColumns.length)));
  for (const { table, column, from } of textColumns) {
    const c = quoteIdent(column);
    const rows = db
      .prepare(`SELECT ${c}, COUNT(*) AS n FROM ${from} WHERE typeof(${c}) = 'text' AND length(${c}) <= ? GROUP BY ${c} ORDER BY n DESC, ${c} LIMIT ?`)
      .raw(true)
      .all(maxChars, cap) as Array<[string, number]>;
    index.addColumn(table, column, rows);
  }
  return index;
}

/** Builds the value index of a database file (opened read-only; a missing or unreadable file is a one-line AgroError). */
export function buildValueIndex(dbPath: string, opts: ValueIndexOptions = {}): ValueIndex {
  const db = openReadOnly(dbPath);
  try {
    return buildValueIndexFrom(db, opts);
  } finally {
    db.close();
  }
}

