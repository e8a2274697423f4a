import { AgroError } from '../errors.ts';
import { readJsonFile, writeJsonAtomic } from '../util/fs.ts';
import { learnMerges } from './bpe-train.ts';
import { PairHeap } from './pair-heap.ts';

/**
 * Byte-level BPE tokenizer stored as a Hugging Face `tokenizer.json`.
 *
 * Text is first split on added tokens (special tokens are never split), then each remaining span
 * is normalized (only when a loaded file asks for it), pre-tokenized with a regex (Llama-3 style
 * for tokenizers we train, whatever the file says for loaded ones), mapped byte by byte to the
 * GPT-2 printable alphabet and merged by rank. Loaded files' post-processors (e.g. an automatic
 * BOS) are ignored on purpose: the chat template adds control tokens itself.
 */

/**
 * Symbols merged as one piece at most: longer words (hostile input, never text) are merged in pieces of
 * this many, so every word below it encodes exactly as the merge definition says, and no word costs
 * more than this many symbols' worth of merging.
 */
export const MAX_BPE_SYMBOLS = 8192;

/** Llama-3's split regex, with the `(?i:...)` group that JS cannot express spelled out per letter. */
export const LLAMA3_SPLIT =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
/** GPT-2's regex: what a ByteLevel pre-tokenizer with use_regex=true applies. */
const GPT2_SPLIT = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

/**
 * Which added tokens are "special" (control tokens: `<|...|>`, dropped by decode(skipSpecial) here and by
 * `skip_special_tokens` in transformers, CONTROL type in GGUF). The protocol tags (`<think>`, `<sql>`...)
 * are added tokens too, always encoded atomically, but not special: they are the agent's text and must
 * survive a decode that drops control tokens.
 */
export function isControlToken(content: string): boolean {
  return /^<\|[^|]*\|>$/.test(content);
}

const { BYTE_TO_CHAR, CHAR_TO_BYTE } = buildByteMap();

/** GPT-2's bytes_to_unicode: printable bytes map to themselves, the rest to U+0100 onwards. */
function buildByteMap(): { BYTE_TO_CHAR: string[]; CHAR_TO_BYTE: Map<string, number> } {
  const printable: number[] = [];
  for (let b = 0x21; b <= 0x7e; b++) printable.push(b);
  for (let b = 0xa1; b <= 0xac; b++) printable.push(b);
  for (let b = 0xae; b <= 0xff; b++) printable.push(b);
  const set = new Set(printable);
  const toChar: string[] = new Array(256);
  let n = 0;
  for (let b = 0; b < 256; b++) toChar[b] = String.fromCodePoint(set.has(b) ? b : 256 + n++);
  const toByte = new Map<string, number>();
  toChar.forEach((c, b) => toByte.set(c, b));
  return { BYTE_TO_CHAR: toChar, CHAR_TO_BYTE: toByte };
}

const utf8 = new TextEncoder();
const utf8Decoder = new TextDecoder('utf-8', { fatal: false });

export function bytesToSymbols(text: string): string {
  const bytes = utf8.encode(text);
  let s = '';
  for (const b of bytes) s += BYTE_TO_CHAR[b];
  return s;
}

/** Translate an HF (Rust regex / Oniguruma) split pattern into a JS unicode regex. */
export function translateHfRegex(pattern: string): RegExp {
  // JS (Node 20) has no inline `(?i:...)`; these groups only hold short literal alternatives.
  const translated = pattern.replace(/\(\?i:([^()]*)\)/g, (_m, body: string) => {
    const alts = body.split('|').map((alt) =>
      [...alt].map((ch) => (/\p{L}/u.test(ch) && ch.toLowerCase() !== ch.toUpperCase() ? `[${ch.toLowerCase()}${ch.toUpperCase()}]` : ch)).join(''),
    );
    return `(?:${alts.join('|')})`;
  });
  try {
    return new RegExp(translated, 'gu');
  } catch (err) {
    throw new AgroError('invalid_input', `tokenizer pre-tokenizer regex is not supported: ${pattern} (${(err as Error).message})`);
  }
}

type PreStep =
  | { kind: 'split'; re: RegExp; behavior: SplitBehavior }
  | { kind: 'bytelevel'; addPrefixSpace: boolean; useRegex: boolean }
  | { kind: 'digits'; individual: boolean };

type NormStep = 'NFC' | 'NFD' | 'NFKC' | 'NFKD' | 'Lowercase';

interface TokenizerParts {
  vocab: Map<string, number>;
  merges: [string, string][];
  added: { id: number; content: string; special: boolean }[];
  pre: PreStep[];
  norm: NormStep[];
  ignoreMerges: boolean;
  unkToken: string | null;
  /** Original HF pieces we do not interpret but keep when saving a loaded file. */
  passthrough?: Record<string, unknown>;
}

type SplitBehavior = 'Isolated' | 'Removed' | 'MergedWithPrevious' | 'MergedWithNext';

function applySplit(pieces: string[], re: RegExp, behavior: SplitBehavior): string[] {
  const out: string[] = [];
  for (const p of pieces) {
    let last = 0;
    const parts: { text: string; match: boolean }[] = [];
    re.lastIndex = 0;
    for (const m of p.matchAll(re)) {
      if (m[0].length === 0) continue;
      const at = m.index ?? 0;
      if (at > last) parts.push({ text: p.slice(last, at), match: false });
      parts.push({ text: m[0], match: true });
      last = at + m[0].length;
    }
    if (last < p.length) parts.push({ text: p.slice(last), match: false });
    if (behavior === 'Isolated') for (const x of parts) out.push(x.text);
    else if (behavior === 'Removed') for (const x of parts) { if (!x.match) out.push(x.text); }
    else if (behavior === 'MergedWithPrevious') {
      let cur = '';
      for (const x of parts) { cur += x.text; if (x.match) { out.push(cur); cur = ''; } }
      if (cur) out.push(cur);
    } else {
      let cur = '';
      for (const x of parts) { if (x.match && cur) { out.push(cur); cur = ''; } cur += x.text; }
      if (cur) out.push(cur);
    }
  }
  return out;
}

/** Keeps the pre-tokenizer's pieces and turns them into byte symbols (the ByteLevel step). */
function preTokenize(text: string, steps: PreStep[], first: boolean): string[] {
  let pieces = [text];
  let byteMapped = false;
  for (const step of steps) {
    if (step.kind === 'split') pieces = applySplit(pieces, step.re, step.behavior);
    else if (step.kind === 'digits') pieces = applySplit(pieces, step.individual ? /\p{N}/gu : /\p{N}+/gu, 'Isolated');
    else {
      if (step.addPrefixSpace && first && pieces.length > 0 && !pieces[0].startsWith(' ')) pieces[0] = ' ' + pieces[0];
      if (step.useRegex) pieces = applySplit(pieces, new RegExp(GPT2_SPLIT, 'gu'), 'Isolated');
      pieces = pieces.map(bytesToSymbols);
      byteMapped = true;
    }
  }
  // A byte-level BPE needs the byte alphabet even if a loaded file forgot the ByteLevel step.
  return byteMapped ? pieces.filter((p) => p.length > 0) : pieces.filter((p) => p.length > 0).map(bytesToSymbols);
}

export interface TrainOptions {
  vocabSize: number;
  specialTokens: readonly string[];
  /** Pairs seen fewer times than this are never merged (default 2). */
  minFrequency?: number;
}

export class Tokenizer {
  readonly vocabSize: number;
  readonly specialTokens: string[];
  private readonly vocab: Map<string, number>;
  private readonly idToToken: string[];
  private readonly mergeRanks: Map<string, number>;
  private readonly merges: [string, string][];
  private readonly added: { id: number; content: string; special: boolean }[];
  private readonly addedById: Map<number, string>;
  private readonly addedRe: RegExp | null;
  private readonly pre: PreStep[];
  private readonly norm: NormStep[];
  private readonly ignoreMerges: boolean;
  private readonly unkId: number | null;
  private readonly passthrough: Record<string, unknown> | undefined;
  private readonly cache = new Map<string, number[]>();

  private constructor(p: TokenizerParts) {
    this.vocab = p.vocab;
    this.merges = p.merges;
    this.added = p.added;
    this.pre = p.pre;
    this.norm = p.norm;
    this.ignoreMerges = p.ignoreMerges;
    this.passthrough = p.passthrough;
    let maxId = -1;
    for (const id of p.vocab.values()) maxId = Math.max(maxId, id);
    for (const a of p.added) maxId = Math.max(maxId, a.id);
    this.vocabSize = maxId + 1;
    this.idToToken = new Array(this.vocabSize);
    for (const [tok, id] of p.vocab) this.idToToken[id] = tok;
    this.addedById = new Map(p.added.map((a) => [a.id, a.content]));
    this.specialTokens = p.added.filter((a) => a.special).map((a) => a.content);
    this.mergeRanks = new Map(p.merges.map(([a, b], i) => [a + ' ' + b, i]));
    // Longest first so that e.g. `</sql>` wins over a hypothetical `</s`.
    const contents = p.added.map((a) => a.content).filter((c) => c.length > 0).sort((a, b) => b.length - a.length || (a < b ? -1 : 1));
    this.addedRe = contents.length ? new RegExp(contents.map(escapeRegex).join('|'), 'g') : null;
    this.unkId = p.unkToken !== null ? (p.vocab.get(p.unkToken) ?? null) : null;
  }

  /** Deterministic byte-level BPE training: the most frequent pair wins, ties go to the smallest (left, right) id pair. */
  static train(corpus: Iterable<string>, opts: TrainOptions): Tokenizer {
    const specials = [...new Set(opts.specialTokens)];
    const minFreq = opts.minFrequency ?? 2;
    const base = specials.length + 256;
    if (!Number.isInteger(opts.vocabSize) || opts.vocabSize < base) {
      throw new AgroError('invalid_input', `tokenizer vocabSize must be an integer >= ${base} (${specials.length} special tokens + 256 bytes), got ${opts.vocabSize}`);
    }
    const pre: PreStep[] = [
      { kind: 'split', re: translateHfRegex(LLAMA3_SPLIT), behavior: 'Isolated' },
      { kind: 'bytelevel', addPrefixSpace: false, useRegex: false },
    ];
    const specialRe = specials.length ? new RegExp(specials.map(escapeRegex).join('|'), 'g') : null;
    const wordCounts = new Map<string, number>();
    for (const doc of corpus) {
      const spans = specialRe ? doc.split(specialRe) : [doc];
      for (const span of spans) {
        if (!span) continue;
        for (const w of preTokenize(span, pre, false)) wordCounts.set(w, (wordCounts.get(w) ?? 0) + 1);
      }
    }
    const symbols: string[] = [...specials, ...BYTE_TO_CHAR];
    // Byte symbols are single UTF-16 units (U+0021..U+0143): a table from unit to id, no per-character strings.
    const symId = new Int32Array(0x144).fill(-1);
    BYTE_TO_CHAR.forEach((c, i) => { symId[c.charCodeAt(0)] = specials.length + i; });
    // Sorted so the word order (and so every tie-break downstream) does not depend on corpus order.
    const entries = [...wordCounts.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    const words = entries.map(([w]) => {
      const ids = new Int32Array(w.length);
      for (let i = 0; i < w.length; i++) ids[i] = symId[w.charCodeAt(i)];
      return ids;
    });
    const merges: [string, string][] = [];
    for (const [a, b] of learnMerges(words, entries.map(([, c]) => c), symbols.length, opts.vocabSize - symbols.length, minFreq)) {
      merges.push([symbols[a], symbols[b]]);
      symbols.push(symbols[a] + symbols[b]);
    }
    const vocab = new Map<string, number>();
    symbols.forEach((s, i) => vocab.set(s, i));
    return new Tokenizer({
      vocab,
      merges,
      added: specials.map((content, id) => ({ id, content, special: isControlToken(content) })),
      pre,
      norm: [],
      ignoreMerges: false,
      unkToken: null,
    });
  }

  static load(path: string): Tokenizer {
    return Tokenizer.fromJSON(readJsonFile(path, 'tokenizer'));
  }

  /** Parse a Hugging Face tokenizer.json holding a byte-level BPE model. */
  static fromJSON(json: unknown): Tokenizer {
    const bad = (msg: string): never => { throw new AgroError('invalid_input', `tokenizer.json: ${msg}`); };
    if (!isObj(json)) bad('not a JSON object');
    const root = json as Record<string, unknown>;
    const model = root.model;
    if (!isObj(model)) bad('missing "model"');
    const m = model as Record<string, unknown>;
    if (m.type !== undefined && m.type !== 'BPE') bad(`model.type "${String(m.type)}" is not supported (only byte-level "BPE")`);
    if (!isObj(m.vocab)) bad('model.vocab must be an object of token -> id');
    const vocab = new Map<string, number>();
    for (const [tok, id] of Object.entries(m.vocab as Record<string, unknown>)) {
      if (!Number.isInteger(id) || (id as number) < 0) bad(`model.vocab["${tok}"] is not a non-negative integer id`);
      vocab.set(tok, id as number);
    }
    if (!Array.isArray(m.merges)) bad('model.merges must be an array');
    const merges: [string, string][] = (m.merges as unknown[]).map((x, i) => {
      if (typeof x === 'string') {
        const sp = x.indexOf(' ');
        if (sp <= 0 || sp === x.length - 1 || x.indexOf(' ', sp + 1) !== -1) bad(`merge #${i} "${x}" is not "left right"`);
        return [x.slice(0, sp), x.slice(sp + 1)] as [string, string];
      }
      if (Array.isArray(x) && x.length === 2 && typeof x[0] === 'string' && typeof x[1] === 'string') return [x[0], x[1]] as [string, string];
      return bad(`merge #${i} is neither "a b" nor ["a", "b"]`);
    });
    const added: { id: number; content: string; special: boolean }[] = [];
    if (root.added_tokens !== undefined && root.added_tokens !== null) {
      if (!Array.isArray(root.added_tokens)) bad('added_tokens must be an array');
      for (const t of root.added_tokens as unknown[]) {
        if (!isObj(t)) bad('added_tokens entries must be objects');
        const o = t as Record<string, unknown>;
        if (!Number.isInteger(o.id) || typeof o.content !== 'string') bad('added_tokens entries need an integer "id" and a string "content"');
        added.push({ id: o.id as number, content: o.content as string, special: o.special === true });
      }
    }
    const pre = parsePre(root.pre_tokenizer, bad);
    const norm = parseNorm(root.normalizer, bad);
    if (m.continuing_subword_prefix || m.end_of_word_suffix) bad('continuing_subword_prefix / end_of_word_suffix are not supported (not a byte-level BPE)');
    for (const c of BYTE_TO_CHAR) {
      if (!vocab.has(c) && m.unk_token == null && m.byte_fallback !== true) {
        bad(`vocab lacks the byte symbol "${c}" (U+${c.codePointAt(0)?.toString(16).toUpperCase()}); only byte-level BPE tokenizers are supported`);
      }
    }
    const passthrough: Record<string, unknown> = {};
    for (const k of ['normalizer', 'pre_tokenizer', 'post_processor', 'decoder', 'truncation', 'padding']) if (k in root) passthrough[k] = root[k];
    return new Tokenizer({
      vocab, merges, added, pre, norm,
      ignoreMerges: m.ignore_merges === true,
      unkToken: typeof m.unk_token === 'string' ? m.unk_token : null,
      passthrough,
    });
  }

  toJSON(): object {
    const vocab: Record<string, number> = {};
    for (const [t, id] of [...this.vocab.entries()].sort((a, b) => a[1] - b[1])) vocab[t] = id;
    const pt = this.passthrough;
    return {
      version: '1.0',
      truncation: pt?.truncation ?? null,
      padding: pt?.padding ?? null,
      added_tokens: this.added.map((a) => ({ id: a.id, content: a.content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: a.special })),
      normalizer: pt ? (pt.normalizer ?? null) : null,
      pre_tokenizer: pt ? (pt.pre_tokenizer ?? null) : {
        type: 'Sequence',
        pretokenizers: [
          { type: 'Split', pattern: { Regex: LLAMA3_SPLIT }, behavior: 'Isolated', invert: false },
          { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false },
        ],
      },
      post_processor: pt ? (pt.post_processor ?? null) : null,
      decoder: pt ? (pt.decoder ?? null) : { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
      model: {
        type: 'BPE', dropout: null, unk_token: this.unkId !== null ? this.idToToken[this.unkId] : null,
        continuing_subword_prefix: null, end_of_word_suffix: null, fuse_unk: false, byte_fallback: false,
        ignore_merges: this.ignoreMerges, vocab, merges: this.merges.map(([a, b]) => `${a} ${b}`),
      },
    };
  }

  save(path: string): void {
    writeJsonAtomic(path, this.toJSON());
  }

  tokenId(special: string): number {
    const a = this.added.find((x) => x.content === special);
    if (a) return a.id;
    const id = this.vocab.get(special);
    if (id === undefined) throw new AgroError('not_found', `tokenizer has no token "${special}"`);
    return id;
  }

  hasToken(token: string): boolean {
    return this.added.some((x) => x.content === token) || this.vocab.has(token);
  }

  encode(text: string): number[] {
    const out: number[] = [];
    let last = 0;
    let first = true;
    if (this.addedRe) {
      this.addedRe.lastIndex = 0;
      for (const m of text.matchAll(this.addedRe)) {
        const at = m.index ?? 0;
        if (at > last) { this.encodeSpan(text.slice(last, at), first, out); }
        out.push(this.tokenId(m[0]));
        first = false;
        last = at + m[0].length;
      }
    }
    if (last < text.length) this.encodeSpan(text.slice(last), first, out);
    return out;
  }

  private encodeSpan(span: string, first: boolean, out: number[]): void {
    let s = span;
    for (const n of this.norm) s = n === 'Lowercase' ? s.toLowerCase() : s.normalize(n);
    for (const word of preTokenize(s, this.pre, first)) {
      let ids = this.cache.get(word);
      if (!ids) {
        ids = this.bpe(word);
        // Long words are rare and would pin megabytes of keys: only ordinary ones are kept.
        if (word.length <= 256) {
          if (this.cache.size > 100_000) this.cache.clear();
          this.cache.set(word, ids);
        }
      }
      for (const id of ids) out.push(id);
    }
  }

  /**
   * Merge the lowest-ranked adjacent pair until none is left (what HF's BPE does, ignoring dropout). A
   * word longer than MAX_BPE_SYMBOLS is merged in pieces of that many symbols: its cost stays bounded
   * (a megabyte of one "word" is hostile input, not text) and every shorter word is encoded as before.
   */
  private bpe(word: string): number[] {
    if (this.ignoreMerges) {
      const whole = this.vocab.get(word);
      if (whole !== undefined) return [whole];
    }
    const all = [...word];
    const syms: string[] = [];
    for (let at = 0; at < all.length; at += MAX_BPE_SYMBOLS) {
      for (const x of this.mergeSymbols(all.slice(at, at + MAX_BPE_SYMBOLS))) syms.push(x);
    }
    const ids: number[] = [];
    for (const s of syms) {
      const id = this.vocab.get(s);
      if (id !== undefined) { ids.push(id); continue; }
      // A merge result missing from the vocab (malformed file): fall back to single byte symbols.
      for (const c of s) {
        const cid = this.vocab.get(c) ?? this.unkId;
        if (cid === null) throw new AgroError('invalid_input', `tokenizer cannot encode symbol "${c}": not in vocab and no unk_token`);
        ids.push(cid);
      }
    }
    return ids;
  }

  /**
   * The merges of one word in O(n log n): symbols in a linked list, candidate pairs in a heap by (rank,
   * position). A rank's occurrences merge left to right, as the pass-per-rank definition does; a pair
   * formed meanwhile with a lower rank than the one being merged waits until that pass ends (only an
   * inconsistent merge list has such pairs), so the result is the definition's exactly.
   */
  private mergeSymbols(syms: string[]): string[] {
    const n = syms.length;
    if (n < 2) return syms;
    const sym: (string | null)[] = syms.slice();
    const next = new Int32Array(n);
    const prev = new Int32Array(n);
    for (let i = 0; i < n; i++) { next[i] = i + 1 < n ? i + 1 : -1; prev[i] = i - 1; }
    // Merge candidates by (rank, position): the lowest rank first, the leftmost among equals.
    const heap = new PairHeap();
    const rankAt = (i: number): number | undefined => {
      const j = next[i];
      return j < 0 ? undefined : this.mergeRanks.get(`${sym[i]} ${sym[j]}`);
    };
    for (let i = 0; i + 1 < n; i++) { const r = rankAt(i); if (r !== undefined) heap.push(r, i); }
    let current = -1;
    let waiting: number[] = [];
    for (;;) {
      if (waiting.length && (heap.size === 0 || heap.topFirst() !== current)) {
        for (let k = 0; k < waiting.length; k += 2) heap.push(waiting[k], waiting[k + 1]);
        waiting = [];
      }
      if (heap.size === 0) break;
      const [rank, pos] = heap.pop()!;
      current = rank;
      // A stale candidate: its left symbol was merged away, or its pair is not this one any more.
      if (sym[pos] === null || rankAt(pos) !== rank) continue;
      const j = next[pos];
      sym[pos] = (sym[pos] as string) + (sym[j] as string);
      sym[j] = null;
      next[pos] = next[j];
      if (next[j] >= 0) prev[next[j]] = pos;
      for (const at of [prev[pos], pos]) {
        if (at < 0) continue;
        const r = rankAt(at);
        if (r === undefined) continue;
        if (r < current) waiting.push(r, at);
        else heap.push(r, at);
      }
    }
    const out: string[] = [];
    for (let i = 0; i >= 0; i = next[i]) out.push(sym[i] as string);
    return out;
  }

  decode(ids: number[], opts: { skipSpecial?: boolean } = {}): string {
    let text = '';
    let bytes: number[] = [];
    const flush = (): void => { if (bytes.length) { text += utf8Decoder.decode(new Uint8Array(bytes)); bytes = []; } };
    for (const id of ids) {
      const addedContent = this.addedById.get(id);
      if (addedContent !== undefined) {
        flush();
        if (!(opts.skipSpecial && this.specialTokens.includes(addedContent))) text += addedContent;
        continue;
      }
      const tok = this.idToToken[id];
      if (tok === undefined) throw new AgroError('invalid_input', `token id ${id} is outside the tokenizer vocabulary (size ${this.vocabSize})`);
      for (const c of tok) {
        const b = CHAR_TO_BYTE.get(c);
        if (b === undefined) { flush(); text += c; } else bytes.push(b);
      }
    }
    flush();
    return text;
  }

  /** The token string of an id (byte symbols, not decoded text): for debugging and tests. */
  idToTokenString(id: number): string | undefined {
    return this.addedById.get(id) ?? this.idToToken[id];
  }
}

function parsePre(spec: unknown, bad: (m: string) => never): PreStep[] {
  if (spec === null || spec === undefined) return [];
  if (!isObj(spec)) return bad('pre_tokenizer must be an object or null');
  const o = spec as Record<string, unknown>;
  switch (o.type) {
    case 'Sequence':
      if (!Array.isArray(o.pretokenizers)) return bad('Sequence pre_tokenizer needs "pretokenizers"');
      return (o.pretokenizers as unknown[]).flatMap((p) => parsePre(p, bad));
    case 'ByteLevel':
      return [{ kind: 'bytelevel', addPrefixSpace: o.add_prefix_space === true, useRegex: o.use_regex !== false }];
    case 'Digits':
      return [{ kind: 'digits', individual: o.individual_digits === true }];
    case 'Split': {
      const pat = o.pattern as Record<string, unknown> | undefined;
      if (o.invert === true) return bad('Split pre_tokenizer with invert=true is not supported');
      const behavior = String(o.behavior ?? 'Isolated');
      if (!['Isolated', 'Removed', 'MergedWithPrevious', 'MergedWithNext'].includes(behavior)) return bad(`Split behavior "${behavior}" is not supported`);
      let re: RegExp;
      if (pat && typeof pat.Regex === 'string') re = translateHfRegex(pat.Regex);
      else if (pat && typeof pat.String === 'string') re = new RegExp(escapeRegex(pat.String), 'gu');
      else return bad('Split pre_tokenizer needs pattern.Regex or pattern.String');
      return [{ kind: 'split', re, behavior: behavior as SplitBehavior }];
    }
    default:
      return bad(`pre_tokenizer type "${String(o.type)}" is not supported (Sequence, Split, ByteLevel, Digits)`);
  }
}

function parseNorm(spec: unknown, bad: (m: string) => never): NormStep[] {
  if (spec === null || spec === undefined) return [];
  if (!isObj(spec)) return bad('normalizer must be an object or null');
  const o = spec as Record<string, unknown>;
  if (o.type === 'Sequence') {
    if (!Array.isArray(o.normalizers)) return bad('Sequence normalizer needs "normalizers"');
    return (o.normalizers as unknown[]).flatMap((n) => parseNorm(n, bad));
  }
  if (o.type === 'NFC' || o.type === 'NFD' || o.type === 'NFKC' || o.type === 'NFKD' || o.type === 'Lowercase') return [o.type];
  return bad(`normalizer type "${String(o.type)}" is not supported (NFC, NFD, NFKC, NFKD, Lowercase, Sequence)`);
}

function isObj(x: unknown): boolean {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

function escapeRegex(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
