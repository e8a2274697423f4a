import { useEffect, useMemo, useState } from 'preact/hooks';
import { apiUrl, getJson } from '../api.ts';
import { LineChart, type Series } from '../components/Chart.tsx';
import { navigate } from '../routes.ts';
import { appendColumns, chartPlan, duration, rowCount, runProgress, seriesOf, smooth } from '../metrics.ts';
import { useOverview } from '../overview.ts';
import type { MetricsEvent, RunDetail } from '../../../src/server/dashboard/api-types.ts';

function pct(x: unknown): string {
  return typeof x === 'number' ? `${(100 * x).toFixed(1)}%` : '–';
}

interface PolicyEvalLike {
  accuracy: number;
  n: number;
  byDifficulty: Record<string, { n: number; correct: number }>;
  toolCalls?: number;
}
interface QuickstartLike {
  config?: { algo?: string };
  sft?: { eval?: PolicyEvalLike };
  rl?: { eval?: PolicyEvalLike };
}

function QuickstartSummary({ report }: { report: QuickstartLike }) {
  const a = report.sft?.eval;
  const b = report.rl?.eval;
  if (!a && !b) return null;
  const buckets = [...new Set([...Object.keys(a?.byDifficulty ?? {}), ...Object.keys(b?.byDifficulty ?? {})])].sort();
  const cell = (e: PolicyEvalLike | undefined, d: string) => (e?.byDifficulty[d] ? `${e.byDifficulty[d].correct}/${e.byDifficulty[d].n}` : '–');
  return (
    <section class="card">
      <h3>Quickstart: held-out execution accuracy</h3>
      <table class="compact">
        <thead>
          <tr>
            <th></th>
            <th>all</th>
            {buckets.map((d) => (
              <th>{d}</th>
            ))}
          </tr>
        </thead>
        <tbody>
          <tr>
            <td>after SFT</td>
            <td>{pct(a?.accuracy)}</td>
            {buckets.map((d) => (
              <td>{cell(a, d)}</td>
            ))}
          </tr>
          <tr>
            <td>after {report.config?.algo ?? 'RL'}</td>
            <td>{pct(b?.accuracy)}</td>
            {buckets.map((d) => (
              <td>{cell(b, d)}</td>
            ))}
          </tr>
        </tbody>
      </table>
    </section>
  );
}

export function RunsPage({ params }: { params: URLSearchParams }) {
  const { data: overview, error } = useOverview();
  const [details, setDetails] = useState<Record<string, RunDetail>>({});
  const [live, setLive] = useState<number>(0);
  const [loadError, setLoadError] = useState<string | null>(null);
  const [smoothing, setSmoothing] = useState(0);
  const runs = overview?.runs ?? [];
  const picked = params.get('run');
  // Default: the four most recently written runs.
  const selected = picked !== null ? picked.split(',').filter(Boolean) : [...runs].sort((a, b) => b.modifiedMs - a.modifiedMs).slice(0, 4).map((r) => r.id).sort();
  const key = selected.join(',');

  // Runs named in the address are fetched at once; the default choice waits for the list of runs. The
  // requests start while rendering (effects run only after the first paint).
  const ready = picked !== null || !!overview;
  const requests = useMemo(() => (ready ? Promise.all(selected.map((id) => getJson<RunDetail>('run', { id }))) : null), [ready, key]);
  useEffect(() => {
    if (!requests) return;
    let stop = false;
    let source: EventSource | null = null;
    setLoadError(null);
    requests.then(
      (list) => {
        if (stop) return;
        const next: Record<string, RunDetail> = {};
        list.forEach((d) => (next[d.run.id] = d));
        setDetails(next);
        if (!list.length) return;
        // Live: the server sends what each run appends after the offset we have.
        source = new EventSource(apiUrl('events', list.flatMap((d) => [['run', d.run.id], ['offset', String(d.offset)]] as [string, string][])));
        source.addEventListener('metrics', (e) => {
          const ev = JSON.parse((e as MessageEvent<string>).data) as MetricsEvent;
          setDetails((cur) => {
            const d = cur[ev.run];
            if (!d) return cur;
            const metrics = ev.reset ? ev.metrics : appendColumns(d.metrics, ev.metrics);
            return { ...cur, [ev.run]: { ...d, metrics, offset: ev.offset, run: { ...d.run, steps: rowCount(metrics) } } };
          });
          setLive(Date.now());
        });
      },
      (e: Error) => setLoadError(e.message),
    );
    return () => {
      stop = true;
      source?.close();
    };
  }, [requests]);

  const shown = selected.map((id) => details[id]).filter((d): d is RunDetail => !!d);
  const plan = useMemo(() => chartPlan(shown.flatMap((d) => d.metrics.keys)), [shown.map((d) => d.metrics.keys.join()).join('|')]);
  // Series are rebuilt only when a run's metrics change (a live row), not on every render of the page.
  const charts = useMemo(
    () =>
      plan.map((c) => {
        const series: Series[] = [];
        for (const d of shown)
          for (const k of c.keys) {
            if (!d.metrics.columns[k]) continue;
            const s = seriesOf(d.metrics, k);
            series.push({ label: `${shown.length > 1 ? `${d.run.id} · ` : ''}${k}`, x: s.x, y: smoothing > 0 ? smooth(s.y, smoothing) : s.y });
          }
        return { title: c.title, series, internal: c.internal === true };
      }),
    [plan, smoothing, ...shown.map((d) => d.metrics)],
  );
  const toggle = (id: string) => {
    const next = selected.includes(id) ? selected.filter((x) => x !== id) : [...selected, id];
    navigate('runs', { run: next.join(',') });
  };
  const quickstart = shown.find((d) => d.quickstart)?.quickstart as QuickstartLike | undefined;

  if (error) return <p class="error">{error}</p>;
  if (!overview) return <p class="muted">loading…</p>;
  return (
    <div class="layout">
      <aside>
        <h3>Runs in {overview.root}</h3>
        {runs.length === 0 ? <p class="muted">No run here yet (a run is a folder with a metrics.jsonl).</p> : null}
        <ul class="runs">
          {runs.map((r) => (
            <li>
              <label>
                <input type="checkbox" checked={selected.includes(r.id)} onChange={() => toggle(r.id)} data-run={r.id} />
                <span class="run-id">{r.id}</span>
                <span class={`tag ${r.kind}`}>{r.algo ?? r.kind}</span>
                <span class="muted"> {details[r.id]?.run.steps ?? r.steps} steps</span>
              </label>
            </li>
          ))}
        </ul>
        {live && Date.now() - live < 60_000 ? <p class="live">● live: updated {new Date(live).toLocaleTimeString()}</p> : null}
      </aside>
      <section class="content">
        {loadError ? <p class="error">{loadError}</p> : null}
        {quickstart ? <QuickstartSummary report={quickstart} /> : null}
        {shown.map((d) => {
          const p = runProgress(d.metrics, d.config);
          if (!p) return null;
          const live = d.run.modifiedMs > Date.now() - 120_000 && (p.total === undefined || p.step < p.total);
          return (
            <div class="run-progress" data-testid="run-progress" data-run={d.run.id}>
              <span class="run-id">{d.run.id}</span>
              <span>
                step {p.step}
                {p.total !== undefined ? ` / ${p.total}` : ''}
              </span>
              {p.total !== undefined ? <progress max={p.total} value={Math.min(p.step, p.total)} /> : null}
              <span class="muted">{p.total !== undefined && p.step >= p.total ? 'done' : p.etaS !== undefined ? `ETA ${duration(p.etaS)}${live ? '' : ' (not written to lately)'}` : ''}</span>
            </div>
          );
        })}
        <label class="smoothing">
          smoothing <input type="range" min={0} max={0.99} step={0.01} value={smoothing} onInput={(e) => setSmoothing(Number((e.target as HTMLInputElement).value))} data-testid="smoothing" />{' '}
          <span class="muted">{smoothing.toFixed(2)}</span>
        </label>
        <div class="charts">
          {charts
            .filter((c) => !c.internal)
            .map((c) => (
              <LineChart title={c.title} series={c.series} />
            ))}
        </div>
        {charts.some((c) => c.internal) ? (
          <details class="card internals" data-testid="internals">
            <summary>Internals ({charts.filter((c) => c.internal).length} more metrics: {charts.filter((c) => c.internal).map((c) => c.title).slice(0, 6).join(', ')}…)</summary>
            <div class="charts">
              {charts
                .filter((c) => c.internal)
                .map((c) => (
                  <LineChart title={c.title} series={c.series} />
                ))}
            </div>
          </details>
        ) : null}
        {shown.map((d) => (
          <details class="card">
            <summary>
              Configuration of <strong>{d.run.id}</strong>
              {d.eval ? ` · held-out EX at the end: ${pct((d.eval as { accuracy?: number }).accuracy)}` : ''}
            </summary>
            <pre>{JSON.stringify(d.config, null, 2)}</pre>
            {d.eval ? <pre>{JSON.stringify({ ...(d.eval as object), predictions: undefined }, null, 2)}</pre> : null}
          </details>
        ))}
      </section>
    </div>
  );
}
