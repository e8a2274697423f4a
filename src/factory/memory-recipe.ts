/**
 * The recipe of a database's memory (the factory's verified pairs the answer path reads): `agro synth`'s
 * defaults, the quickstart's factory stage and `npm run bench -- human --zero-shot` all take it from here, so
 * the memory the README's path builds is the one its figure measures. The variant databases belong to it: a pair
 * the original database accepts and a variant rejects is dropped, so they decide which pairs are kept.
 */
export const MEMORY_RECIPE = {
  /** Verified pairs to synthesize. */
  pairs: 2400,
  /** Questions per query: the question and up to phrasings-1 paraphrases, each parsed back to it. */
  phrasings: 2,
  /** Variant databases a pair must also hold on (and the quickstart's RL reward runs on). */
  variants: 2,
} as const;
