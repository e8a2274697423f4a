/**
 * Factory stage 7: drop duplicates (exact SQL, same skeleton with the same result, near-duplicate
 * questions), then, when a target size is set, keep a subset that covers the space of SQL
 * structure and question wording at the requested difficulty mix.
 */
import type { Difficulty, Stage, StageContext, SynthPair } from '../types.ts';
import { dedup } from './dedup.ts';
import { embedHybrid } from './embed.ts';
import { resultFingerprint } from './fingerprint.ts';
import { selectIndices } from './select.ts';
import type { SelectionMethod } from './select.ts';

export interface DiversityStageOptions {
  /** Pairs to keep after dedup; all when omitted. */
  size?: number;
  /** Wanted share per difficulty, e.g. { simple: 0.3, moderate: 0.4, challenging: 0.3 }. */
  mix?: Partial<Record<Difficulty, number>>;
  method?: SelectionMethod;
  sqlWeight?: number;
  questionThreshold?: number;
}

export function diversityStage(opts: DiversityStageOptions = {}): Stage<SynthPair, SynthPair> {
  return {
    name: 'diversify',
    async run(items: SynthPair[], ctx: StageContext): Promise<SynthPair[]> {
      ctx.progress.start('diversify', items.length);
      const fps: Array<string | undefined> = [];
      for (const p of items) {
        const r = await ctx.executor.execute(ctx.dbPath, p.sql, { timeoutMs: ctx.timeoutMs });
        fps.push(r.ok && !r.truncated ? resultFingerprint(r.rows) : undefined);
        ctx.progress.tick();
      }
      ctx.progress.stop();
      const { kept, dropped } = dedup(
        items.map((p, i) => ({ id: p.id, dbId: p.dbId, sql: p.sql, question: p.question, resultFingerprint: fps[i], pair: p })),
        { questionThreshold: opts.questionThreshold },
      );
      for (const d of dropped) ctx.reject(d.item.pair, `duplicate_${d.reason}`);
      let out = kept.map((k) => k.pair);
      if (opts.size !== undefined && opts.size < out.length) {
        const vectors = embedHybrid(
          out.map((p) => ({ sqls: [p.sql], text: `${p.question} ${p.evidence}` })),
          { sqlWeight: opts.sqlWeight },
        );
        const idx = selectIndices(vectors, opts.size, opts.method ?? 'kcenter', {
          seed: ctx.rng.int(0x7fffffff),
          groups: opts.mix ? out.map((p) => p.difficulty) : undefined,
          mix: opts.mix as Record<string, number> | undefined,
        });
        const keep = new Set(idx);
        out.forEach((p, i) => {
          if (!keep.has(i)) ctx.reject(p, 'not_selected');
        });
        out = out.filter((_, i) => keep.has(i));
      }
      return out.map((p) => ({ ...p, provenance: { ...p.provenance, stages: [...p.provenance.stages, 'diversify'], checks: [...p.provenance.checks, 'dedup'] } }));
    },
  };
}
