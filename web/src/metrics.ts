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

export function chartPlan(keys: Iterable<string>): { title: string; keys: string[]; internal?: true }[] {
  const all = [...new Set(keys)].filter((k) => !HIDDEN.has(k));
  const used = new Set<string>();
  const plan: { title: string; keys: string[]; internal?: true }[] = [];
  for (const g of CHART_GROUPS) {
    const ks = all.filter((k) => !used.has(k) && g.keys(k));
    ks.forEach((k) => used.add(k));
    if (ks.length) plan.push({ title: g.title, keys: ks });
  }
  // Anything else is the trainer's internals (hooks.active_skipped, adv_mean, …): the page folds them away.
  for (const k of all) if (!used.has(k)) plan.push({ title: k, keys: [k], internal: true });
  return plan;
}

/**
 * TensorBoard's smoothing: an exponential moving average with the bias of its start corrected (the first
 * points are not pulled toward 0). weight 0 is the raw series; nulls stay nulls and do not move the average.
 */
export function smooth(y: readonly (number | null)[], weight: number): (number | null)[] {
  if (weight <= 0) return [...y];
  let last = 0;
  let n = 0;
  return y.map((v) => {
    if (v === null || !Number.isFinite(v)) return v;
    last = last * weight + (1 - weight) * v;
    n++;
    return last / (1 - weight ** n);
  });
}

export interface RunProgress {
  step: number;
  /** The steps the run was started for (its config), when it says. */
  total?: number;
  /** Seconds left at the pace of the last rows (elapsed_s per step), when both are known. */
  etaS?: number;
}

/** Where a run is: its last step of its total (sft_config.json `steps`, train_config.json `train.steps`), and an ETA. */
export function runProgress(m: MetricColumns, config: unknown): RunProgress | null {
  const steps = (m.columns.step ?? []).filter((v): v is number => v !== null);
  if (steps.length === 0) return null;
  const step = steps[steps.length - 1];
  const c = config as { steps?: unknown; train?: { steps?: unknown } } | null;
  const t = typeof c?.steps === 'number' ? c.steps : typeof c?.train?.steps === 'number' ? c.train.steps : undefined;
  const out: RunProgress = { step, ...(t ? { total: t } : {}) };
  // The pace over the last rows (up to 20): a run's first steps (compiling, warming caches) say little.
  const el = m.columns.elapsed_s ?? [];
  const rows: [number, number][] = [];
  for (let i = 0; i < el.length; i++) if (el[i] !== null && m.columns.step?.[i] != null) rows.push([m.columns.step[i] as number, el[i] as number]);
  const recent = rows.slice(-20);
  if (t !== undefined && recent.length >= 2) {
    const [s0, e0] = recent[0];
    const [s1, e1] = recent[recent.length - 1];
    if (s1 > s0 && e1 >= e0) out.etaS = Math.max(0, ((e1 - e0) / (s1 - s0)) * (t - step));
  }
  return out;
}

/** 95 s → "1 min 35 s", 4000 s → "1 h 7 min". */
export function duration(s: number): string {
  if (s < 60) return `${Math.round(s)} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
  return `${Math.floor(s / 3600)} h ${Math.round((s % 3600) / 60)} min`;
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
