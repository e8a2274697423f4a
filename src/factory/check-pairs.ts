/**
 * The shape of a stage that checks pairs (verify, augment's ambiguity rule, align): each pair's check runs
 * STAGE_CONCURRENCY at a time (results keep input order) to a rejection reason or null; then, in input order,
 * `admit` may still refuse a pair that passed (a quota); a refused pair is rejected under its reason, a kept one
 * marked with the stage and the checks it passed.
 */
import { mapConcurrent } from '../util/concurrency.ts';
import { STAGE_CONCURRENCY, type StageContext, type SynthPair } from './types.ts';

export async function checkPairs(
  ctx: StageContext,
  stage: string,
  items: SynthPair[],
  check: (p: SynthPair) => Promise<string | null>,
  checks: readonly string[],
  admit?: (p: SynthPair) => string | null,
): Promise<SynthPair[]> {
  ctx.progress.start(stage, items.length);
  const reasons = await mapConcurrent(items, STAGE_CONCURRENCY, undefined, async (p) => {
    const r = await check(p);
    ctx.progress.tick();
    return r;
  });
  const out: SynthPair[] = [];
  for (const [i, p] of items.entries()) {
    const reason = reasons[i] || admit?.(p) || null;
    if (reason) {
      ctx.reject(p, reason);
      continue;
    }
    p.provenance.stages.push(stage);
    p.provenance.checks.push(...checks);
    out.push(p);
  }
  ctx.progress.stop();
  return out;
}
