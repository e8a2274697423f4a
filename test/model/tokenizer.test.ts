import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MAX_BPE_SYMBOLS, Tokenizer } from '../../src/model/tokenizer.ts';
import { AgroError } from '../../src/errors.ts';
import { AGENT_SPECIAL_TOKENS } from '../../src/agent/protocol.ts';

/** GPT-2's byte alphabet written out the way GPT-2's vocab orders it: printable bytes, then the rest from U+0100. */
function gpt2Alphabet(): Record<string, number> {
  const v: Record<string, number> = {};
  let id = 0;
  const printable = (b: number): boolean => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  for (let b = 0; b < 256; b++) if (printable(b)) v[String.fromCharCode(b)] = id++;
  let n = 0;
  for (let b = 0; b < 256; b++) if (!printable(b)) v[String.fromCharCode(256 + n++)] = id++;
  return v;
}

function hfFile(merges: unknown[], extraVocab: Record<string, number>, preTokenizer: unknown, added: { id: number; content: string }[]): unknown {
  return {
    version: '1.0', truncation: null, padding: null,
    added_tokens: added.map((a) => ({ ...a, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true })),
    normalizer: null, pre_tokenizer: preTokenizer, post_processor: null,
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null, end_of_word_suffix: null, fuse_unk: false, byte_fallback: false, vocab: { ...gpt2Alphabet(), ...extraVocab }, merges },
  };
}

const GPT2_PRE = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true };
const EXTRA = { 'Ġt': 256, he: 257, 'Ġthe': 258, SE: 259, SEL: 260 };
const ADDED = [{ id: 261, content: '<|end|>' }, { id: 262, content: '<sql>' }];

test('the GPT-2 alphabet has the ids GPT-2 gives them', () => {
  const a = gpt2Alphabet();
  assert.equal(a['!'], 0);
  assert.equal(a['Ġ'], 220);
  assert.equal(a['t'], 83);
});

for (const [label, merges] of [
  ['"a b" string merges', ['Ġ t', 'h e', 'Ġt he', 'S E', 'SE L']],
  ['[a, b] pair merges', [['Ġ', 't'], ['h', 'e'], ['Ġt', 'he'], ['S', 'E'], ['SE', 'L']]],
] as const) {
  test(`loads a handwritten HF tokenizer.json with ${label} and encodes by merge rank`, () => {
    const tk = Tokenizer.fromJSON(hfFile([...merges], EXTRA, GPT2_PRE, ADDED));
    assert.equal(tk.vocabSize, 263);
    // "the" -> t + he (no "t h" merge); " theSEL" -> Ġt, he -> Ġthe; S E -> SE; SE L -> SEL.
    assert.deepEqual(tk.encode('the theSEL<sql>SE'), [83, 257, 258, 260, 262, 259]);
    assert.deepEqual(tk.encode('<|end|>'), [261]);
    // "!" is byte 0x21 -> id 0; a newline is byte 10 -> the 11th non-printable -> 188 + 10.
    assert.deepEqual(tk.encode('!\n'), [0, 198]);
    assert.equal(tk.decode(tk.encode('the theSEL<sql>SE')), 'the theSEL<sql>SE');
    assert.deepEqual(tk.specialTokens, ['<|end|>', '<sql>']);
    assert.equal(tk.tokenId('<sql>'), 262);
  });
}

test('a Llama-3 style Split + ByteLevel pre-tokenizer splits digits in threes and keeps case-insensitive contractions', () => {
  const pre = {
    type: 'Sequence',
    pretokenizers: [
      { type: 'Split', pattern: { Regex: "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+" }, behavior: 'Isolated', invert: false },
      { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false },
    ],
  };
  const tk = Tokenizer.fromJSON(hfFile(["' M", '1 2', '12 3', '3 4', 'Ġ 1'], { "'M": 256, '12': 257, '123': 258, '34': 259, 'Ġ1': 260 }, pre, []));
  // Pieces: I | 'M | Ġ | 123 | 4  ("3 4" cannot merge across pieces, "Ġ 1" neither).
  assert.deepEqual(tk.encode("I'M 1234"), [40, 256, 220, 258, 19]);
  // Under GPT-2's regex the same merges give: I | ' | M | Ġ1234 -> Ġ,12,3,4 -> Ġ,123,4.
  const gpt2 = Tokenizer.fromJSON(hfFile(["' M", '1 2', '12 3', '3 4', 'Ġ 1'], { "'M": 256, '12': 257, '123': 258, '34': 259, 'Ġ1': 260 }, GPT2_PRE, []));
  assert.deepEqual(gpt2.encode("I'M 1234"), [40, 6, 44, 220, 258, 19]);
});

test('loading rejects non-BPE models, bad merges and missing files with clear errors', () => {
  assert.throws(() => Tokenizer.fromJSON({ model: { type: 'WordPiece', vocab: {} } }), /only byte-level "BPE"/);
  assert.throws(() => Tokenizer.fromJSON(hfFile(['abc'], EXTRA, GPT2_PRE, [])), /merge #0 "abc" is not "left right"/);
  assert.throws(() => Tokenizer.fromJSON({ model: { type: 'BPE', vocab: { a: 0 }, merges: [] } }), /lacks the byte symbol/);
  assert.throws(() => Tokenizer.load('/nonexistent/tokenizer.json'), (e: unknown) => e instanceof AgroError && e.kind === 'not_found');
  const dir = mkdtempSync(join(tmpdir(), 'agro-tok-'));
  writeFileSync(join(dir, 'tokenizer.json'), '{ not json');
  assert.throws(() => Tokenizer.load(join(dir, 'tokenizer.json')), /not valid JSON/);
});

const CORPUS = [
  'SELECT name FROM singer WHERE age > 30 ORDER BY name;',
  'SELECT count(*) FROM concert WHERE year = 2014;',
  'How many singers are older than 30?',
  'CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT, age INTEGER);',
  '<think>join singer and concert</think><answer>SELECT T1.name FROM singer AS T1 JOIN concert AS T2 ON T1.singer_id = T2.singer_id</answer>',
  'What is the average age of singers from France?',
];

test('training is deterministic and independent of corpus order; save/load keeps encodings', () => {
  const a = Tokenizer.train(CORPUS, { vocabSize: 400, specialTokens: AGENT_SPECIAL_TOKENS });
  const b = Tokenizer.train([...CORPUS].reverse(), { vocabSize: 400, specialTokens: AGENT_SPECIAL_TOKENS });
  assert.deepEqual(a.toJSON(), b.toJSON());
  assert.ok(a.vocabSize > AGENT_SPECIAL_TOKENS.length + 256, 'learned some merges');
  assert.ok(a.vocabSize <= 400);
  // Merges compress: frequent SQL keywords are fewer tokens than bytes.
  assert.ok(a.encode(' singer').length < ' singer'.length);
  const dir = mkdtempSync(join(tmpdir(), 'agro-tok-'));
  a.save(join(dir, 'tokenizer.json'));
  const c = Tokenizer.load(join(dir, 'tokenizer.json'));
  for (const s of CORPUS) assert.deepEqual(c.encode(s), a.encode(s));
  assert.equal(c.vocabSize, a.vocabSize);
  assert.throws(() => Tokenizer.train(CORPUS, { vocabSize: 100, specialTokens: AGENT_SPECIAL_TOKENS }), /vocabSize must be an integer >= 278/);
});

test('decode(encode(x)) === x for unicode, SQL and whitespace', () => {
  const tk = Tokenizer.train(CORPUS, { vocabSize: 350, specialTokens: AGENT_SPECIAL_TOKENS });
  const cases = [
    '', ' ', '   ', '\n\n\t  \r\n', 'héllo wörld', '日本語のテキスト', '🎉👩‍👩‍👧 emoji', 'Ω≈ç√∫˜µ≤≥÷',
    "SELECT \"a b\", 'it''s' FROM `t` WHERE x <> 1.5e-3 -- comment\n  AND y IS NULL;",
    '<think>x</think><sql>SELECT 1</sql><observation>[[1]]</observation><answer>SELECT 1</answer>',
    '<|user|>hi<|end|>', 'a<sqlx>b </sql', '\u0000\u0001\u007f\u00ad', '  leading and trailing  ',
  ];
  for (const s of cases) assert.equal(tk.decode(tk.encode(s)), s, JSON.stringify(s));
});

test('special tokens are single ids, never split, and never produced from ordinary text', () => {
  const tk = Tokenizer.train(CORPUS, { vocabSize: 350, specialTokens: AGENT_SPECIAL_TOKENS });
  for (const sp of AGENT_SPECIAL_TOKENS) {
    assert.deepEqual(tk.encode(sp), [tk.tokenId(sp)]);
    assert.deepEqual(tk.encode(`x${sp}y`), [...tk.encode('x'), tk.tokenId(sp), ...tk.encode('y')]);
  }
  const specialIds = new Set(AGENT_SPECIAL_TOKENS.map((s) => tk.tokenId(s)));
  assert.ok(tk.encode('<sq l> think answer <|en d|>').every((id) => !specialIds.has(id)));
  // Control tokens are special (dropped by skipSpecial); protocol tags are atomic but survive it.
  assert.equal(tk.decode(tk.encode('<|user|><sql>a</sql><|end|>'), { skipSpecial: true }), '<sql>a</sql>');
  assert.deepEqual(tk.specialTokens, AGENT_SPECIAL_TOKENS.filter((t) => t.startsWith('<|')));
  assert.throws(() => tk.tokenId('<nope>'), /has no token "<nope>"/);
});

/** The merge loop as it was before issue #35 (quadratic, one splice spread), kept here only as the reference. */
function referenceBpe(ranks: Map<string, number>, word: string): string[] {
  const syms = [...word];
  while (syms.length > 1) {
    let best = -1, bestRank = Infinity;
    for (let i = 0; i + 1 < syms.length; i++) {
      const r = ranks.get(syms[i] + ' ' + syms[i + 1]);
      if (r !== undefined && r < bestRank) { bestRank = r; best = i; }
    }
    if (best < 0) break;
    const a = syms[best], b = syms[best + 1];
    const next: string[] = [];
    for (let i = 0; i < syms.length; i++) {
      if (i + 1 < syms.length && syms[i] === a && syms[i + 1] === b) { next.push(a + b); i++; } else next.push(syms[i]);
    }
    syms.splice(0, syms.length, ...next);
  }
  return syms;
}

/** A seeded generator (mulberry32): the same random words on every run. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

test('BPE: the heap merge gives the reference loop\'s symbols on real and random words, consistent or not', () => {
  const texts = readFileSync('data/dev.json', 'utf8');
  const tk = Tokenizer.train(texts.split('\n').slice(0, 4000), { vocabSize: 1500, specialTokens: AGENT_SPECIAL_TOKENS });
  const merges = (tk.toJSON() as { model: { merges: string[] } }).model.merges;
  const ranks = new Map(merges.map((m, i) => [m, i]));
  const merge = (t: Tokenizer, w: string): string[] => (t as unknown as { mergeSymbols(s: string[]): string[] }).mergeSymbols([...w]);
  const rand = rng(35);
  const alphabet = [...new Set([...merges.join('').replace(/ /g, '')])];
  const words: string[] = texts.match(/\S+/g)!.slice(0, 3000).map((w) => [...w].map((c) => (c === ' ' ? 'Ġ' : c)).join(''));
  for (let k = 0; k < 3000; k++) {
    const len = 1 + Math.floor(rand() * (k % 10 === 0 ? 400 : 24));
    words.push(Array.from({ length: len }, () => alphabet[Math.floor(rand() * alphabet.length)]).join(''));
    // Runs of one symbol: overlapping pairs.
    if (k % 50 === 0) words.push(alphabet[k % alphabet.length].repeat(len));
  }
  for (const w of words) assert.deepEqual(merge(tk, w), referenceBpe(ranks, w), w);
  // An inconsistent merge list (a merge that uses a symbol made by a later-ranked one): still the loop's result.
  const shuffled = merges.slice().sort(() => rand() - 0.5);
  const odd = Tokenizer.fromJSON({ ...(tk.toJSON() as object), model: { ...(tk.toJSON() as { model: object }).model, merges: shuffled } });
  const oddRanks = new Map(shuffled.map((m, i) => [m, i]));
  for (const w of words.slice(0, 3000)) assert.deepEqual(merge(odd, w), referenceBpe(oddRanks, w), w);
  // And through encode(): the same ids as the reference symbols mapped through the vocabulary.
  const vocab = (tk.toJSON() as { model: { vocab: Record<string, number> } }).model.vocab;
  for (const w of ['SELECT', 'singer_id', 'Ġhow', 'ĠCOUNT(*)']) assert.deepEqual(tk.encode(w.replace(/Ġ/g, ' ')), referenceBpe(ranks, w).map((x) => vocab[x]));
});

test('BPE: a 1,000,000-character word encodes in seconds without a stack overflow, in pieces of MAX_BPE_SYMBOLS', () => {
  const tk = Tokenizer.train(['aaaa bbbb abab', 'select select'], { vocabSize: 300, specialTokens: AGENT_SPECIAL_TOKENS });
  const t0 = Date.now();
  const ids = tk.encode('ab'.repeat(500_000));
  assert.ok(Date.now() - t0 < 10_000, `${Date.now() - t0} ms`);
  assert.ok(ids.length > 0);
  assert.equal(tk.decode(ids), 'ab'.repeat(500_000));
  // Below the bound a word is one piece; above it, pieces of the bound, each merged as a word of its own.
  const long = 'ab'.repeat(MAX_BPE_SYMBOLS);
  assert.deepEqual(tk.encode(long), [...tk.encode(long.slice(0, MAX_BPE_SYMBOLS)), ...tk.encode(long.slice(MAX_BPE_SYMBOLS))]);
});

test('BPE: merge work per symbol does not grow with the word (a word that needs hundreds of distinct merges)', () => {
  // A vocabulary of ~750 merges and one long word of real letters: the pass-per-rank loop rescans the whole
  // piece once per distinct merge (~160 rank lookups a symbol here, ~13 s for 1,000,000 characters), and
  // the word-length bound alone does not make it linear. The heap merge looks up a few ranks per symbol.
  const texts = readFileSync('data/dev.json', 'utf8');
  const tk = Tokenizer.train(texts.split('\n'), { vocabSize: 1500, specialTokens: AGENT_SPECIAL_TOKENS });
  const ranks = (tk as unknown as { mergeRanks: Map<string, number> }).mergeRanks;
  let lookups = 0;
  const get = ranks.get.bind(ranks);
  ranks.get = (k: string) => {
    lookups++;
    return get(k);
  };
  const letters = texts.match(/[A-Za-z]+/g)!.join('');
  const perSymbol: number[] = [];
  for (const n of [20_000, 200_000]) {
    const word = letters.repeat(Math.ceil(n / letters.length)).slice(0, n);
    lookups = 0;
    const ids = tk.encode(word);
    assert.ok(ids.length > 0 && ids.length < n / 2, `${ids.length} ids: the merges ran`);
    assert.ok(lookups > 0, 'the merge rank lookups were not counted (mergeRanks no longer used?)');
    perSymbol.push(lookups / n);
  }
  assert.ok(perSymbol.every((x) => x <= 8), `rank lookups per symbol: ${perSymbol.map((x) => x.toFixed(1)).join(', ')} (at most 8)`);
});
