/**
 * Lexical similarity of questions: TF-IDF over content stems (the value index's and the linker's tokens and
 * stemmer, so every part of the prompt reads a word the same way), cosine between sparse vectors. The IDF comes
 * from the memory's own questions: a word every stored question uses ("how", "many" are stop words already;
 * a table name of a one-table database is such a word) says little about which pair is meant.
 */
import { STOP_WORDS, stem, tokens } from '../prompt/words.ts';

export type Vec = Map<string, number>;

/**
 * A question that negates: its words, and a contraction as the tokenizer splits it ("didn't" is "didn t").
 */
const NEGATION = /\b(not|no|without|never|except|excluding|other than|nor|neither|none|cannot|(?:didn|don|doesn|isn|aren|wasn|weren|hasn|haven|hadn|won|can|couldn|wouldn|shouldn) t)\b/g;

/** Whether a question says "not" in any of its ways. */
export function asksNegation(question: string): boolean {
  return new RegExp(NEGATION.source).test(tokens(question).join(' '));
}

/**
 * Words that say what a query does, whatever the phrasing: each group reads as one token, so "how many" and
 * "number of" agree, and "most" and "highest" do. General English about counting, ranking, negation and
 * grouping, nothing of any one database. The linker's stop words drop them (they name no column); a question's
 * intent lives in them.
 */
const CUE_PHRASES: ReadonlyArray<[RegExp, string]> = [
  [/\b(how many|number of|count of|count the|count)\b/g, ' qcount '],
  [/\b(more than|greater than|larger than|higher than|bigger than|above|over|exceeds?|after|later than)\b/g, ' qgt '],
  [/\b(less than|fewer than|smaller than|lower than|below|under|before|earlier than)\b/g, ' qlt '],
  [/\b(at least|or more|no less than)\b/g, ' qge '],
  [/\b(at most|or less|or fewer|no more than)\b/g, ' qle '],
  [/\b(most|highest|largest|greatest|biggest|maximum|max|top|oldest|latest|longest|best|heaviest|tallest)\b/g, ' qhigh '],
  [/\b(least|lowest|smallest|fewest|minimum|min|youngest|earliest|shortest|worst|lightest)\b/g, ' qlow '],
  [NEGATION, ' qnot '],
  [/\b(each|every|per|for all|by each|grouped by|respectively|corresponding)\b/g, ' qeach '],
  [/\b(average|mean|avg)\b/g, ' qavg '],
  [/\b(total|sum)\b/g, ' qsum '],
  [/\b(different|distinct|unique)\b/g, ' qdistinct '],
  [/\b(both|and also|as well as|also)\b/g, ' qboth '],
  [/\b(or|either)\b/g, ' qor '],
  [/\b(order|ordered|sorted|sort|ascending|descending|alphabetical|alphabetically)\b/g, ' qorder '],
];

const CUES: ReadonlySet<string> = new Set(CUE_PHRASES.map(([, cue]) => cue.trim()));

/** Words that only frame a question ("what are", "show me", "the"): no intent, no column. */
const FRAME_WORDS: ReadonlySet<string> = new Set(
  'a an the of is are was were be been what which who whom whose that this these those there do does did me us i we you please show list give find return tell display get all any its their his her it in on to with for from as by and has have had can could would will should'.split(' '),
);

/**
 * Stop words of the linker that still tell questions apart: "name" matches no one column (every table has one), but a
 * question that asks for names and a query that returns none differ.
 */
const ASKED_FOR: ReadonlySet<string> = new Set(['name', 'names']);

const content = (t: string): boolean => !!t && !CUES.has(t) && !FRAME_WORDS.has(t) && !STOP_WORDS.has(t) && /^\p{L}+$/u.test(t);

/**
 * The words of a text that tell questions apart, stemmed, with repeats: intent cues, content words and numbers.
 * With `known` (the stems a memory has), two adjacent words written apart that the memory writes as one are read as
 * that one ("high schooler" where a table is `Highschooler`, "zip code" for `zipcode`): an identifier's compound
 * is one word to the factory and often two to a person.
 */
export function stems(text: string, known?: (stem: string) => boolean): string[] {
  return stemsOfWords(cueWords(text), known);
}

/** A text's tokens with each cue phrase read as its one cue token: what stems() stems. */
export function cueWords(text: string): string[] {
  let f = ` ${tokens(text).join(' ')} `;
  for (const [re, cue] of CUE_PHRASES) f = f.replace(re, cue);
  return f.split(' ');
}

/** stems() of a text already read by cueWords(): a text read twice (its IDF, then its vector) is read once. */
export function stemsOfWords(words: readonly string[], known?: (stem: string) => boolean): string[] {
  const out: string[] = [];
  for (let i = 0; i < words.length; i++) {
    const t = words[i];
    if (known && content(t) && content(words[i + 1] ?? '')) {
      const joined = stem(t + words[i + 1]);
      if (known(joined)) {
        out.push(joined);
        i++;
        continue;
      }
    }
    if (CUES.has(t)) out.push(t);
    else if (t && !FRAME_WORDS.has(t) && (!STOP_WORDS.has(t) || ASKED_FOR.has(t)) && (t.length > 1 || /\d/.test(t))) out.push(stem(t));
  }
  return out;
}

/**
 * The most a word weighs: as much as one in about 13% of the stored phrasings (e^-2). The memory's IDF says how
 * seldom the factory says a word, not how much it matters to a person: uncapped, a word the factory uses once in
 * thousands of phrasings ("common") outweighs the column the question names ("type"), and the question is matched
 * to its wording instead of its meaning. Below the cap the IDF still discounts what nearly every question says
 * (a one-table database's table name). Chosen on the factory's held-out synthetic questions (docs/answering.md).
 */
export const IDF_CAP = 3;

export class Idf {
  private readonly df = new Map<string, number>();
  private docs = 0;

  add(text: string): void {
    this.addWords(cueWords(text));
  }

  /** add() of a text read by cueWords(). */
  addWords(words: readonly string[]): void {
    this.docs++;
    for (const s of new Set(stemsOfWords(words))) this.df.set(s, (this.df.get(s) ?? 0) + 1);
  }

  /** Smoothed IDF, capped; a stem no stored question has weighs most (it may be a value or a new word). */
  weight(s: string): number {
    return Math.min(IDF_CAP, Math.log((1 + this.docs) / (1 + (this.df.get(s) ?? 0))) + 1);
  }

  /** The unit TF-IDF vector of a text (its compounds read as the stored phrasings write them). */
  vector(text: string): Vec {
    return this.vectorOfWords(cueWords(text));
  }

  /** vector() of a text read by cueWords(). */
  vectorOfWords(words: readonly string[]): Vec {
    const v: Vec = new Map();
    for (const s of stemsOfWords(words, (x) => this.df.has(x))) v.set(s, (v.get(s) ?? 0) + 1);
    let norm = 0;
    for (const [s, tf] of v) {
      const w = (1 + Math.log(tf)) * this.weight(s);
      v.set(s, w);
      norm += w * w;
    }
    norm = Math.sqrt(norm) || 1;
    for (const [s, w] of v) v.set(s, w / norm);
    return v;
  }
}

/** The share of a's squared weight on the words b has too (a unit vector's coverage by b). */
export function covered(a: Vec, b: Vec): number {
  let sum = 0;
  for (const [s, w] of a) if (b.has(s)) sum += w * w;
  return sum;
}

export function cosine(a: Vec, b: Vec): number {
  const [small, big] = a.size <= b.size ? [a, b] : [b, a];
  let dot = 0;
  for (const [s, w] of small) dot += w * (big.get(s) ?? 0);
  return dot;
}
