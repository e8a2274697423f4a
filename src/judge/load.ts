/**
 * The judge as the answer path takes it (answer.ts CandidateJudge), and which judge a command uses: the one a
 * policy's prompt contract names (the quickstart's fine-tuned judge), else one given by path, else the built-in
 * one. Without any, the transparent ranker's confidence stands, and the command says so once.
 */
import { fileURLToPath } from 'node:url';
import type { CandidateJudge } from '../answer/answer.ts';
import { hasJudge, readJudge } from './checkpoint.ts';
import { groupProbabilities, type JudgeModel } from './model.ts';

export function candidateJudge(model: JudgeModel): CandidateJudge {
  return (question, candidates) => {
    const { logits, none } = model.logits(question, candidates);
    const signatures = candidates.map((c) => c.signature);
    const ranked = groupProbabilities(signatures, logits, none).groups;
    const calibrated = groupProbabilities(signatures, logits, none, model.temperature).groups;
    return { rank: signatures.map((s) => ranked.get(s)!), confidence: signatures.map((s) => calibrated.get(s)!) };
  };
}

/** The judge that ships with agro, in this installation (models/judge: its card says how it was made). */
export function builtinJudgeDir(): string {
  return fileURLToPath(new URL('../../models/judge', import.meta.url));
}

/**
 * The judge to use: `false` for none (the transparent ranker), a folder, or (undefined) the built-in one. A folder
 * given that holds no judge or a mismatched one is an error (exit 3 or 4); a missing built-in one falls back with
 * one line through `warn`.
 */
export function loadJudge(spec: string | false | undefined, warn: (line: string) => void, dir = builtinJudgeDir()): CandidateJudge | undefined {
  if (spec === false) return undefined;
  if (spec !== undefined) return candidateJudge(readJudge(spec));
  if (!hasJudge(dir)) {
    warn(`no judge in this installation (${dir}): the transparent ranker's confidence stands (agro judge pretrain makes one)`);
    return undefined;
  }
  return candidateJudge(readJudge(dir));
}
