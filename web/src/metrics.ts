/** Which metrics go on which chart, and merging rows a live run appends. */
import type { MetricColumns } from '../../src/server/dashboard/api-types.ts';

export interface ChartGroup {
  title: string;
  keys: (k: string) => boolean;
}

const exact = (...names: string[]) => (k: string) => names.includes(k);

/** Charts in page order; a metric goes on the first chart whose test it passes, the rest get one chart each. */
export const CHART_GROUPS: ChartGroup[] = [
  { title: 'Reward (total and per component)', keys: (k) => k === 'reward' || k.startsWith('rewards.') },
  { title: 'Accuracy (training batch) and held-out EX', keys: exact('accuracy', 'eval_accuracy') },
  { title: 'Loss', keys: exact('loss', 'pg_loss', 'heldout_loss') },
  { title: 'KL', keys: exact('kl', 'approx_kl') },
  { title: 'Entropy', keys: exact('entropy') },
  { title: 'Clip fractions', keys: exact('clip_frac_low', 'clip_frac_high') },
  { title: 'Response length (tokens)', keys: exact('response_tokens') },
  { title: 'Turns and tool calls per episode', keys: exact('turns', 'tool_calls') },
  { title: 'Tokens per second', keys: exact('tokens_per_s') },
  { title: 'Time split (s per step)', keys: (k) => k.startsWith('time_') && k.endsWith('_s') },
  { title: 'Reward spread and groups', keys: exact('reward_std', 'groups', 'dropped_groups', 'truncated') },
  { title: 'Ratio and gradient norm', keys: exact('ratio', 'grad_norm') },
  { title: 'Learning rate', keys: exact('lr') },
];

/** Not charted: the x axis and bookkeeping. */
const HIDDEN = new Set(['step', 'skipped', 'elapsed_s', 'tokens']);

export function chartPlan(keys: Iterable<string>): { title: string; keys: string[] }[] {
  const all = [...new Set(keys)].filter((k) => !HIDDEN.has(k));
  const used = new Set<string>();
  const plan: { title: string; keys: string[] }[] = [];
  for (const g of CHART_GROUPS) {
    const ks = all.filter((k) => !used.has(k) && g.keys(k));
    ks.forEach((k) => used.add(k));
    if (ks.length) plan.push({ title: g.title, keys: ks });
  }
  for (const k of all) if (!used.has(k)) plan.push({ title: k, keys: [k] });
  return plan;
}

export { appendColumns, rowCount } from '../../src/server/dashboard/columns.ts';

/**
 * x (step, else the row number) and y of one metric, without the rows that lack it. A metric every row
 * has (most of them) is returned as the columns themselves, not copied: its series share one x array,
 * which the chart then uses as is.
 */
export function seriesOf(m: MetricColumns, key: string): { x: number[]; y: number[] } {
  const ys = m.columns[key] ?? [];
  const steps = m.columns.step;
  const stepsWhole = !!steps && steps.length === ys.length && !steps.includes(null);
  if (stepsWhole && !ys.includes(null)) return { x: steps as number[], y: ys as number[] };
  const x: number[] = [];
  const y: number[] = [];
  for (let i = 0; i < ys.length; i++) {
    const v = ys[i];
    if (v === null) continue;
    x.push(stepsWhole ? (steps[i] as number) : (steps?.[i] ?? i + 1));
    y.push(v);
  }
  return { x, y };
}
