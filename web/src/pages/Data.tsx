import { useEffect, useMemo, useState } from 'preact/hooks';
import { postJson, useJson } from '../api.ts';
import { BarChart } from '../components/Chart.tsx';
import { DataTable, ResultView } from '../components/Table.tsx';
import { ListPage } from '../components/Picker.tsx';
import { useOverview } from '../overview.ts';
import type { DatasetDetail, PairRow, ResultTable } from '../../../src/server/dashboard/api-types.ts';

interface ManifestLike {
  db?: string;
  dbId?: string;
  stages?: { stage: string; in: number; out: number; rejected: Record<string, number> }[];
  rejections?: Record<string, Record<string, number>>;
  difficulty?: Record<string, number>;
  templates?: Record<string, number>;
  styles?: Record<string, number>;
  variants?: string[];
  caughtByVariants?: number;
  coverage?: { distinctStructures?: number; structureCoverage?: number };
}

const DIFFICULTY_ORDER = ['simple', 'moderate', 'challenging'];

function histogram(h: Record<string, number> | undefined, order?: string[]): { labels: string[]; values: number[] } {
  const entries = Object.entries(h ?? {});
  entries.sort((a, b) => (order ? order.indexOf(a[0]) - order.indexOf(b[0]) : b[1] - a[1] || a[0].localeCompare(b[0])));
  return { labels: entries.map((e) => e[0]), values: entries.map((e) => e[1]) };
}

function Filter(props: { label: string; value: string; options: string[]; onChange: (v: string) => void }) {
  return (
    <label class="filter">
      {props.label}
      <select value={props.value} onChange={(e) => props.onChange((e.target as HTMLSelectElement).value)} data-filter={props.label}>
        <option value="">all</option>
        {props.options.map((o) => (
          <option value={o}>{o}</option>
        ))}
      </select>
    </label>
  );
}

function PairDetail({ pair, db }: { pair: PairRow; db: string | null }) {
  const [result, setResult] = useState<ResultTable | null>(null);
  const [err, setErr] = useState<string | null>(null);
  useEffect(() => {
    setResult(null);
    setErr(null);
    if (db) postJson<ResultTable>('sql', { db, sql: pair.SQL }).then(setResult, (e: Error) => setErr(e.message));
  }, [pair.question_id, db]);
  return (
    <section class="card" data-testid="pair-detail">
      <h3>Pair {pair.question_id}</h3>
      <p class="question">{pair.question}</p>
      {pair.evidence ? <p class="muted">Evidence: {pair.evidence}</p> : null}
      <pre class="sql">{pair.SQL}</pre>
      <h4>Result on {pair.db_id}</h4>
      {!db ? <p class="muted">the database is not available to run the query</p> : null}
      {err ? <p class="error">{err}</p> : null}
      {result ? <ResultView result={result} csvName={`pair-${pair.question_id}.csv`} testId="pair-result" /> : null}
      <h4>Provenance</h4>
      <pre>{JSON.stringify(pair.provenance, null, 2)}</pre>
    </section>
  );
}

export function DataPage({ params }: { params: URLSearchParams }) {
  const { data: overview, error } = useOverview();
  const [f, setF] = useState({ difficulty: '', style: '', shape: '', table: '', text: '' });
  const [open, setOpen] = useState<number | null>(null);
  const id = params.get('id') ?? overview?.datasets[0]?.id ?? null;
  const { data: detail, error: loadError } = useJson<DatasetDetail>('dataset', id ? { id } : null);
  useEffect(() => setOpen(null), [id]);

  const pairs = detail?.pairs ?? [];
  const facets = useMemo(() => {
    const uniq = (xs: string[]) => [...new Set(xs)].sort();
    return {
      difficulty: uniq(pairs.map((p) => p.difficulty)).sort((a, b) => DIFFICULTY_ORDER.indexOf(a) - DIFFICULTY_ORDER.indexOf(b)),
      style: uniq(pairs.map((p) => p.style)),
      shape: uniq(pairs.map((p) => p.shape)),
      table: uniq(pairs.flatMap((p) => p.tables)),
    };
  }, [pairs]);
  const filtered = useMemo(() => {
    const text = f.text.trim().toLowerCase();
    return pairs.filter(
      (p) =>
        (!f.difficulty || p.difficulty === f.difficulty) &&
        (!f.style || p.style === f.style) &&
        (!f.shape || p.shape === f.shape) &&
        (!f.table || p.tables.includes(f.table)) &&
        (!text || p.question.toLowerCase().includes(text) || p.SQL.toLowerCase().includes(text)),
    );
  }, [pairs, f]);

  if (error) return <p class="error">{error}</p>;
  if (!overview) return <p class="muted">loading…</p>;
  if (!overview.datasets.length) return <p class="muted">No factory output here (a folder with manifest.json and dataset.jsonl, as `agro synth` writes).</p>;
  const m = (detail?.manifest ?? {}) as ManifestLike;
  const stages = m.stages ?? [];
  const rejections = Object.entries(m.rejections ?? {}).flatMap(([stage, rs]) => Object.entries(rs).map(([r, n]) => [`${stage}: ${r}`, n] as [string, number]));
  rejections.sort((a, b) => b[1] - a[1]);
  const dif = histogram(m.difficulty, DIFFICULTY_ORDER);
  const shapes = histogram(m.templates);
  const styles = histogram(m.styles);
  const dbId = detail?.db ?? null;
  const cov = detail?.coverage ?? [];
  const colsTotal = cov.reduce((a, t) => a + t.columns.length, 0);
  const colsUsed = cov.reduce((a, t) => a + t.columns.filter((c) => c.pairs > 0).length, 0);

  return (
    <ListPage title="Factory outputs" page="data" items={overview.datasets} active={id} error={loadError}>
      {!detail ? (
        <p class="muted">loading…</p>
      ) : (
        <>
          <p class="stats">
            <strong>{detail.info.rows}</strong> pairs from <strong>{m.dbId}</strong> · {m.variants?.length ?? 0} variant databases · {m.caughtByVariants ?? 0} pairs rejected only thanks to the variants
            {m.coverage?.distinctStructures !== undefined ? ` · ${m.coverage.distinctStructures} SQL structures` : ''}
          </p>
          <div class="charts">
            <BarChart title="Stage funnel (pairs in and out)" labels={stages.map((s) => s.stage)} series={[{ label: 'in', values: stages.map((s) => s.in) }, { label: 'out', values: stages.map((s) => s.out) }]} rotate />
            <BarChart title="Rejections by reason" labels={rejections.slice(0, 20).map((r) => r[0])} series={[{ label: 'rejected', values: rejections.slice(0, 20).map((r) => r[1]) }]} rotate height={rejections.length > 12 ? 300 : 260} />
            <BarChart title="Difficulty" labels={dif.labels} series={[{ label: 'pairs', values: dif.values }]} />
            <BarChart title="Shape (template)" labels={shapes.labels} series={[{ label: 'pairs', values: shapes.values }]} rotate height={260} />
            <BarChart title="Question style" labels={styles.labels} series={[{ label: 'pairs', values: styles.values }]} />
          </div>
          <section class="card">
            <h3>
              Schema coverage: {colsUsed} of {colsTotal} columns used
            </h3>
            {cov.length === 0 ? <p class="muted">the database is not available</p> : null}
            <div class="coverage" data-testid="coverage">
              {cov.map((t) => (
                <div class={`cov-table ${t.pairs ? '' : 'unused'}`}>
                  <strong>{t.table}</strong> <span class="muted">{t.pairs} pairs</span>
                  <div>
                    {t.columns.map((c) => (
                      <span class={`chip ${c.pairs ? 'used' : 'unused'}`} title={`${c.pairs} pairs`}>
                        {c.name} {c.pairs || ''}
                      </span>
                    ))}
                  </div>
                </div>
              ))}
            </div>
          </section>
          <section class="card">
            <h3>Pairs</h3>
            <div class="filters">
              <Filter label="difficulty" value={f.difficulty} options={facets.difficulty} onChange={(v) => setF({ ...f, difficulty: v })} />
              <Filter label="style" value={f.style} options={facets.style} onChange={(v) => setF({ ...f, style: v })} />
              <Filter label="shape" value={f.shape} options={facets.shape} onChange={(v) => setF({ ...f, shape: v })} />
              <Filter label="table" value={f.table} options={facets.table} onChange={(v) => setF({ ...f, table: v })} />
              <label class="filter">
                search
                <input type="search" value={f.text} onInput={(e) => setF({ ...f, text: (e.target as HTMLInputElement).value })} placeholder="question or SQL" />
              </label>
            </div>
            <DataTable
              testId="pairs"
              caption={`${filtered.length} of ${pairs.length} pairs`}
              columns={['id', 'question', 'difficulty', 'style', 'shape', 'tables', 'SQL']}
              rows={filtered.map((p) => [p.question_id, p.question, p.difficulty, p.style, p.shape, p.tables.join(' '), p.SQL])}
              csvName={`pairs-${detail.info.dbId}.csv`}
              limit={200}
              selected={open ?? undefined}
              onRowClick={(i) => setOpen(i)}
            />
          </section>
          {open !== null && filtered[open] ? <PairDetail pair={filtered[open]} db={dbId} /> : null}
        </>
      )}
    </ListPage>
  );
}
