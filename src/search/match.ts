/**
 * Answer and entity matching for the search agent.
 *
 * Answers are scored the way Search-R1 (and SQuAD/HotpotQA before it) score them: lowercase, delete
 * ASCII punctuation, drop the articles a/an/the, collapse whitespace; then exact match and token F1
 * against the gold answer and each alias, keeping the best.
 *
 * Entities are matched for E-GRPO's entity match rate γ: the fraction of ground-truth entities that
 * the agent mentioned in its reasoning text (which text counts is the caller's choice; see env.ts).
 */

import type { Entity } from '../agent/types.ts';

// string.punctuation in Python: the set Search-R1's normalize_answer deletes.
const ASCII_PUNCT = /[!"#$%&'()*+,\-./:;<=>?@[\\\]^_`{|}~]/g;

/** Search-R1's normalize_answer: lower → delete punctuation → drop articles → collapse whitespace. */
export function normalizeAnswer(s: string): string {
  return s
    .toLowerCase()
    .replace(ASCII_PUNCT, '')
    .replace(/\b(a|an|the)\b/g, ' ')
    .split(/\s+/)
    .filter(Boolean)
    .join(' ');
}

export function exactMatch(prediction: string, golds: readonly string[]): boolean {
  const p = normalizeAnswer(prediction);
  return golds.some((g) => normalizeAnswer(g) === p);
}

/** Token F1 between two strings after normalization (multiset overlap), as in SQuAD/HotpotQA. */
export function tokenF1(prediction: string, gold: string): number {
  const p = normalizeAnswer(prediction);
  const g = normalizeAnswer(gold);
  // HotpotQA's rule: a yes/no/noanswer that is not exactly the gold gets no partial credit.
  if ((['yes', 'no', 'noanswer'].includes(p) || ['yes', 'no', 'noanswer'].includes(g)) && p !== g) return 0;
  const pt = p ? p.split(' ') : [];
  const gt = g ? g.split(' ') : [];
  if (pt.length === 0 || gt.length === 0) return pt.length === gt.length ? 1 : 0;
  const counts = new Map<string, number>();
  for (const t of gt) counts.set(t, (counts.get(t) ?? 0) + 1);
  let common = 0;
  for (const t of pt) {
    const c = counts.get(t) ?? 0;
    if (c > 0) {
      common++;
      counts.set(t, c - 1);
    }
  }
  if (common === 0) return 0;
  const precision = common / pt.length;
  const recall = common / gt.length;
  return (2 * precision * recall) / (precision + recall);
}

export function bestF1(prediction: string, golds: readonly string[]): number {
  return golds.reduce((m, g) => Math.max(m, tokenF1(prediction, g)), 0);
}

/**
 * Text prepared for entity mention search: lowercase, accents removed, and the article-free word
 * sequence padded with spaces so a mention must sit on word boundaries (" al " is not in " album ").
 * Two variants of punctuation handling: punctuation as a word break ("Adams," → "adams"), and
 * punctuation deleted as Search-R1 does ("U.S.A." → "usa"); a mention counts under either.
 */
function matchForms(s: string): [string, string] {
  const base = s.normalize('NFKD').replace(/\p{M}+/gu, '').toLowerCase();
  const words = (t: string) =>
    t
      .split(/\s+/)
      .filter((w) => w && w !== 'a' && w !== 'an' && w !== 'the')
      .join(' ');
  const broken = words(base.replace(/[^\p{L}\p{N}]+/gu, ' '));
  const deleted = words(base.replace(/[^\p{L}\p{N}\s]+/gu, '').replace(/\s+/g, ' '));
  return [` ${broken} `, ` ${deleted} `];
}

/** A prepared haystack for many entity lookups against the same reasoning text. */
export class MentionIndex {
  private readonly forms: [string, string];
  constructor(text: string) {
    this.forms = matchForms(text);
  }
  /** True when the name or any alias occurs on word boundaries (after normalization). */
  mentions(entity: Entity): boolean {
    for (const name of [entity.name, ...(entity.aliases ?? [])]) {
      const [b, d] = matchForms(name);
      // A name that normalizes to nothing (all punctuation or only articles) can never be "mentioned".
      if (b.trim() && this.forms[0].includes(b)) return true;
      if (d.trim() && this.forms[1].includes(d)) return true;
    }
    return false;
  }
}

/**
 * E-GRPO's entity match rate γ = |entities mentioned| / |entities|; 0 when the task has no entities.
 * Each entity counts once however often it is mentioned.
 */
export function entityMatchRate(reasoning: string, entities: readonly Entity[]): { rate: number; matched: string[] } {
  if (entities.length === 0) return { rate: 0, matched: [] };
  const idx = new MentionIndex(reasoning);
  const matched = entities.filter((e) => idx.mentions(e)).map((e) => e.name);
  return { rate: matched.length / entities.length, matched };
}
