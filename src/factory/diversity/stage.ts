/**
 * Factory stage 7: drop duplicates (exact SQL, same skeleton with the same result, near-duplicate
 * questions), then, when a target size is set, keep a subset that covers the space of SQL
 * structure and question wording at the requested difficulty mix.
 */
import type { Row } from '../../sql/types.ts';
import type { Difficulty } from '../../data/dataset-row.ts';
import type { Stage, StageContext, SynthPair } from '../types.ts';
import { dedup } from './dedup.ts';
import { embedHybrid } from './embed.ts';
import { resultFingerprint } from './fingerprint.ts';
import { selectIndices } from './select.ts';
import { shareOf } from '../shapes.ts';
import { primePairFeatures } from '../ast-features.ts';
import type { SelectionMethod } from './select.ts';

export interface DiversityStageOptions {
  /** Pairs to keep after dedup; all when omitted. */
  size?: number;
  /** Wanted share per difficulty, e.g. { simple: 0.3, moderate: 0.4, challenging: 0.3 }. */
  mix?: Partial<Record<Difficulty, number>>;
  method?: SelectionMethod;
  sqlWeight?: number;
  questionThreshold?: number;
  /**
   * A key per pair (e.g. its query shape): one pair of each key is kept first, in input order,
   * before the selection fills the rest, so no kind of query is lost to a small size.
   */
  cover?: (p: SynthPair) => string;
  /**
   * Wanted share of each cover key (e.g. the shapes people ask, shapes.ts). With it the cover
   * goes most-wanted key first and may fill up to 75% of the size (80% without coverItems), and the rest is chosen with a
   * quota per key in proportion to its share (unlisted keys get a small one) instead of the
   * difficulty mix.
   */
  coverMix?: Readonly<Record<string, number>>;
  /**
   * The schema items (tables, columns) a pair uses. After the shape cover, pairs that bring the
   * most items no kept pair uses yet are kept (up to 15% of the size), so the data reaches the
   * whole schema rather than its most connected tables.
   */
  coverItems?: (p: SynthPair) => string[];
}

export function diversityStage(opts: DiversityStageOptions = {}): Stage<SynthPair, SynthPair> {
  return {
    name: 'diversify',
    async run(items: SynthPair[], ctx: StageContext): Promise<SynthPair[]> {
      ctx.progress.start('diversify', items.length);
      const fps: Array<string | undefined> = [];
      for (const p of items) {
        // Verification kept the result; run the query only for pairs that came without one.
        if (p.result !== undefined) fps.push(resultFingerprint(JSON.parse(p.result) as Row[]));
        else {
          const r = await ctx.executor.execute(ctx.dbPath, p.sql, { timeoutMs: ctx.timeoutMs });
          fps.push(r.ok && !r.truncated ? resultFingerprint(r.rows) : undefined);
        }
        ctx.progress.tick();
      }
      ctx.progress.stop();
      const { kept, dropped } = dedup(
        items.map((p, i) => ({ id: p.id, dbId: p.dbId, sql: p.sql, question: p.question, resultFingerprint: fps[i], pair: p })),
        { questionThreshold: opts.questionThreshold },
      );
      for (const d of dropped) ctx.reject(d.item.pair, `duplicate_${d.reason}`);
      let out = kept.map((k) => k.pair);
      // Their structure features from their ASTs: the embedding and the run's coverage then parse none of them.
      primePairFeatures(out, ctx.dialect);
      if (opts.size !== undefined && opts.size < out.length) {
        const keep = new Set<number>();
        const keys = opts.cover ? out.map(opts.cover) : [];
        if (opts.cover) {
          const cm = opts.coverMix;
          const limit = cm ? Math.floor(opts.size * (opts.coverItems ? 0.75 : 0.8)) : Math.floor(opts.size / 2);
          // Stable sort: input order within the same share.
          const order = out.map((_, i) => i);
          if (cm) order.sort((a, b) => shareOf(cm, keys[b]) - shareOf(cm, keys[a]));
          const seen = new Set<string>();
          for (const i of order) {
            if (!seen.has(keys[i]) && keep.size < limit) {
              seen.add(keys[i]);
              keep.add(i);
            }
          }
        }
        if (opts.coverItems) {
          const items = out.map(opts.coverItems);
          const have = new Set([...keep].flatMap((i) => items[i]));
          const limit = keep.size + Math.floor(opts.size * 0.15);
          while (keep.size < limit) {
            let best = -1;
            let gain = 0;
            out.forEach((_, i) => {
              if (keep.has(i)) return;
              const g = new Set(items[i].filter((x) => !have.has(x))).size;
              if (g > gain) [best, gain] = [i, g];
            });
            if (best < 0) break;
            keep.add(best);
            for (const x of items[best]) have.add(x);
          }
        }
        const rest = out.map((_, i) => i).filter((i) => !keep.has(i));
        const vectors = embedHybrid(
          rest.map((i) => ({ sqls: [out[i].sql], text: `${out[i].question} ${out[i].evidence}` })),
          { sqlWeight: opts.sqlWeight },
        );
        let groups: string[] | undefined;
        let mix: Record<string, number> | undefined;
        if (opts.mix) {
          groups = rest.map((i) => out[i].difficulty);
          mix = opts.mix as Record<string, number>;
        } else if (opts.coverMix && opts.cover) {
          groups = rest.map((i) => keys[i]);
          mix = Object.fromEntries(groups.map((k) => [k, shareOf(opts.coverMix!, k)]));
        }
        const idx = selectIndices(vectors, opts.size - keep.size, opts.method ?? 'kcenter', {
          seed: ctx.rng.int(0x7fffffff),
          groups,
          mix,
        });
        for (const j of idx) keep.add(rest[j]);
        out.forEach((p, i) => {
          if (!keep.has(i)) ctx.reject(p, 'not_selected');
        });
        out = out.filter((_, i) => keep.has(i));
      }
      return out.map((p) => ({ ...p, provenance: { ...p.provenance, stages: [...p.provenance.stages, 'diversify'], checks: [...p.provenance.checks, 'dedup'] } }));
    },
  };
}
