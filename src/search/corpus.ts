/**
 * A local document corpus for the search agent: BM25 retrieval over {id, title, text} documents,
 * snippets for search results, bounded page text for `open`, and JSONL save/load. No network.
 */
import { readFileSync, existsSync } from 'node:fs';
import MiniSearch from 'minisearch';
import { z } from 'zod';
import { AgroError } from '../errors.ts';
import { writeFileAtomic } from '../util/fs.ts';

export interface SearchDoc {
  id: string;
  title: string;
  text: string;
}

export interface SearchHit {
  id: string;
  title: string;
  /** The best-matching window of sentences, at most `snippetChars` characters. */
  snippet: string;
  /** BM25 summed over the query terms and the two fields (title × titleBoost, text). */
  score: number;
}

export const CORPUS_DEFAULTS = {
  /** Okapi BM25 parameters; see the constructor for why d = 0. */
  k1: 1.2,
  b: 0.75,
  /** Weight of a match in the title field relative to the text field. */
  titleBoost: 3,
  snippetChars: 240,
  openChars: 2000,
} as const;

const docSchema = z.object({ id: z.string().min(1), title: z.string(), text: z.string() });

const STOPWORDS = new Set(
  'a an and are as at be by for from has have in is it its of on or that the this to was were what which who with'.split(' '),
);

/** Lowercased word tokens; the same split is used for indexing, queries and snippet scoring. */
export function tokenize(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

/** Sentences (split after . ! ? followed by space); a document with none is one sentence. */
function sentences(text: string): string[] {
  const parts = text
    .split(/(?<=[.!?])\s+/)
    .map((s) => s.trim())
    .filter(Boolean);
  return parts.length > 0 ? parts : [text];
}

function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  return text.slice(0, Math.max(0, max - 1)).trimEnd() + '…';
}

export class SearchCorpus {
  private readonly docs = new Map<string, SearchDoc>();
  private readonly index: MiniSearch<SearchDoc>;

  constructor(docs: Iterable<SearchDoc> = []) {
    this.index = new MiniSearch<SearchDoc>({
      // Title and text are scored as two BM25 fields and summed, the title weighted by titleBoost:
      // "Order 264" must beat the many pages that mention Order 264 in passing.
      fields: ['title', 'text'],
      storeFields: [],
      tokenize,
      // Function words are in every page ("The X of Y is Z."): idf ≈ 0, so dropping them changes
      // scores by almost nothing and saves scoring every document for every query.
      processTerm: (t) => (STOPWORDS.has(t) ? null : t),
      searchOptions: {
        boost: { title: CORPUS_DEFAULTS.titleBoost },
        prefix: false,
        fuzzy: false,
        combineWith: 'OR',
        // MiniSearch scores with BM25+, whose δ (`d`) adds a floor to every matching term; with d = 0
        // the formula is Okapi BM25: idf · tf(k1+1) / (tf + k1(1 − b + b·len/avglen)),
        // idf = ln(1 + (N − n + 0.5)/(n + 0.5)). One MiniSearch convention stays: `len` is the number
        // of distinct terms in the field, not of tokens (its coordination factor is undone in search()).
        bm25: { k: CORPUS_DEFAULTS.k1, b: CORPUS_DEFAULTS.b, d: 0 },
      },
    });
    for (const d of docs) this.add(d);
  }

  get size(): number {
    return this.docs.size;
  }

  add(doc: SearchDoc): void {
    if (this.docs.has(doc.id)) throw new AgroError('invalid_input', `duplicate document id ${JSON.stringify(doc.id)}`);
    this.docs.set(doc.id, doc);
    this.index.add(doc);
  }

  has(id: string): boolean {
    return this.docs.has(id);
  }

  get(id: string): SearchDoc | undefined {
    return this.docs.get(id);
  }

  all(): SearchDoc[] {
    return [...this.docs.values()];
  }

  /** Top-k documents for a free-text query, best first; ties broken by id so results are stable. */
  search(query: string, k = 5, snippetChars: number = CORPUS_DEFAULTS.snippetChars): SearchHit[] {
    const terms = tokenize(query).filter((t) => !STOPWORDS.has(t));
    if (terms.length === 0 || k <= 0) return [];
    const raw = this.index.search(terms.join(' '));
    const hits = raw.map((r) => ({
      id: String(r.id),
      // MiniSearch multiplies each score by the number of distinct query terms matched (a coordination
      // factor); divide it back out so the score is the plain BM25 sum.
      score: r.score / Math.max(1, r.queryTerms.length),
    }));
    hits.sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    return hits.slice(0, k).map((h) => {
      const doc = this.docs.get(h.id)!;
      return { id: h.id, title: doc.title, score: h.score, snippet: bestSnippet(doc.text, terms, snippetChars) };
    });
  }

  /** The page text for `open`, cut to `maxChars`; undefined for an unknown id. */
  open(id: string, maxChars: number = CORPUS_DEFAULTS.openChars): { id: string; title: string; text: string } | undefined {
    const doc = this.docs.get(id);
    if (!doc) return undefined;
    return { id: doc.id, title: doc.title, text: clip(doc.text, maxChars) };
  }

  toJsonl(): string {
    return this.all()
      .map((d) => JSON.stringify({ id: d.id, title: d.title, text: d.text }) + '\n')
      .join('');
  }

  save(path: string): void {
    writeFileAtomic(path, this.toJsonl());
  }

  static load(path: string): SearchCorpus {
    if (!existsSync(path)) throw new AgroError('not_found', `corpus file not found: ${path}`);
    return SearchCorpus.fromJsonl(readFileSync(path, 'utf8'), path);
  }

  static fromJsonl(text: string, source = 'corpus'): SearchCorpus {
    const corpus = new SearchCorpus();
    text.split('\n').forEach((line, i) => {
      if (!line.trim()) return;
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch {
        throw new AgroError('invalid_input', `${source}:${i + 1}: not valid JSON`);
      }
      const parsed = docSchema.safeParse(value);
      if (!parsed.success) throw new AgroError('invalid_input', `${source}:${i + 1}: expected {id, title, text}`);
      corpus.add(parsed.data);
    });
    return corpus;
  }
}

/**
 * The window of up to three consecutive sentences with the most distinct query terms (earliest wins
 * ties), cut to `maxChars`. Distinct terms rather than counts so one repeated word does not win.
 */
export function bestSnippet(text: string, queryTerms: string[], maxChars: number): string {
  const sents = sentences(text);
  const wanted = new Set(queryTerms);
  let best = 0;
  let bestScore = -1;
  const width = Math.min(3, sents.length);
  for (let i = 0; i + width <= sents.length; i++) {
    const window = new Set(tokenize(sents.slice(i, i + width).join(' ')));
    let score = 0;
    for (const t of wanted) if (window.has(t)) score++;
    if (score > bestScore) {
      bestScore = score;
      best = i;
    }
  }
  return clip(sents.slice(best, best + width).join(' '), maxChars);
}
