/**
 * Train-time noise: a checked question as people also type it, in lower case, without its final
 * punctuation, or with one slip of the keyboard (two letters swapped, one dropped). Put on after the
 * round trip, which checks the clean question; quoted values and numbers are never touched, so the
 * question still says what the SQL asks.
 */
import type { Rng } from '../../util/rng.ts';
import type { Stage, SynthPair } from '../types.ts';

export type NoiseKind = 'case' | 'punctuation' | 'typo';
const KINDS: readonly NoiseKind[] = ['case', 'punctuation', 'typo'];

/** A quoted value as the parsers read one (intent-parse.ts maskLiterals). */
const QUOTED = /(^|\s)'[^']*'(?=$|[\s,.?])/g;

/** Spans of a question noise may change: the text outside quoted values, and no number. */
function wordSpans(question: string): Array<[number, number]> {
  const spans: Array<[number, number]> = [];
  const blocked = new Array<boolean>(question.length).fill(false);
  for (const m of question.matchAll(QUOTED)) for (let i = m.index!; i < m.index! + m[0].length; i++) blocked[i] = true;
  for (const m of question.matchAll(/\p{L}{5,}/gu)) {
    const s = m.index!;
    if (!blocked.slice(s, s + m[0].length).some(Boolean)) spans.push([s, s + m[0].length]);
  }
  return spans;
}

/** One slip in a word of five letters or more outside the values: two inner letters swapped or one dropped. */
function typo(question: string, rng: Rng): string | null {
  const spans = wordSpans(question);
  if (!spans.length) return null;
  const [s, e] = spans[rng.int(spans.length)];
  const i = s + 1 + rng.int(e - s - 2); // never the first letter, never the last
  const w = [...question];
  if (rng.int(2) === 0 && w[i] !== w[i + 1]) [w[i], w[i + 1]] = [w[i + 1], w[i]];
  else w.splice(i, 1);
  return w.join('');
}

/** Lower case outside the quoted values (a value keeps its case: it is what the SQL compares). */
function lowerCase(question: string): string {
  let out = '';
  let last = 0;
  for (const m of question.matchAll(QUOTED)) {
    const start = m.index! + m[1].length;
    out += question.slice(last, start).toLowerCase() + question.slice(start, m.index! + m[0].length);
    last = m.index! + m[0].length;
  }
  return out + question.slice(last).toLowerCase();
}

/** The question with one or two kinds of noise, and which. */
export function addNoise(question: string, rng: Rng): { text: string; kinds: NoiseKind[] } {
  const want = new Set<NoiseKind>([KINDS[rng.int(KINDS.length)]]);
  if (rng.int(3) === 0) want.add(KINDS[rng.int(KINDS.length)]);
  let text = question;
  const kinds: NoiseKind[] = [];
  for (const k of KINDS) {
    if (!want.has(k)) continue;
    const next = k === 'case' ? lowerCase(text) : k === 'punctuation' ? text.replace(/[?.]$/, '') : typo(text, rng);
    if (next !== null && next !== text) {
      text = next;
      kinds.push(k);
    }
  }
  return { text, kinds };
}

/** The noise stage: a `share` of the questions noised (provenance.noise says how); the SQL is untouched. */
export const noiseStage = (share: number): Stage<SynthPair, SynthPair> => ({
  name: 'noise',
  async run(items, ctx) {
    for (const p of items) {
      if (ctx.rng.next() >= share) continue;
      const { text, kinds } = addNoise(p.question, ctx.rng);
      if (!kinds.length) continue;
      p.question = text;
      p.provenance.noise = kinds;
      p.provenance.stages.push('noise');
    }
    return items;
  },
});
