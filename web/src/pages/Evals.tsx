import { useEffect, useMemo, useState } from 'preact/hooks';
import { useJson } from '../api.ts';
import { BarChart } from '../components/Chart.tsx';
import { DataTable, ResultView } from '../components/Table.tsx';
import { ListPage } from '../components/Picker.tsx';
import { useOverview } from '../overview.ts';
import type { CompareResult, EvalDetail, EvalPeer, EvalQuestion } from '../../../src/server/dashboard/api-types.ts';

function Trajectory({ turns }: { turns: { role: string; content: string }[] }) {
  return (
    <div class="turns">
      {turns.map((t) => (
        <div class={`turn ${t.role}`}>
          <span class="role">{t.role}</span>
          <pre>{t.content}</pre>
        </div>
      ))}
    </div>
  );
}

function Compare({ evalId, q }: { evalId: string; q: EvalQuestion }) {
  const { data: res, error: err } = useJson<CompareResult>('eval/compare', { id: evalId, index: q.index });
  // Rows are marked only when both queries ran: against an error every gold row would be "missing".
  const both = !!res && res.pred.ok && res.gold.ok;
  return (
    <section class="card" data-testid="compare">
      <h3>
        Question {q.questionId ?? q.index} · {q.bucket} · <span class={`outcome ${q.outcome}`}>{q.outcome}</span>
      </h3>
      {q.question ? <p class="question">{q.question}</p> : null}
      {q.message ? <p class="muted">{q.message}</p> : null}
      {res?.variant ? <p class="muted" data-testid="compare-variant">Rows of the variant database the question failed on: {res.variant}</p> : null}
      {err ? <p class="error">{err}</p> : null}
      <div class="side-by-side">
        <div>
          <h4>Predicted</h4>
          <pre class="sql">{q.pred || '(no answer)'}</pre>
          {res ? <ResultView result={res.pred} marked={both ? res.predExtra : undefined} csvName={`q${q.index}-pred.csv`} testId="pred-result" /> : null}
        </div>
        <div>
          <h4>Gold</h4>
          <pre class="sql">{q.gold}</pre>
          {res ? <ResultView result={res.gold} marked={both ? res.goldMissing : undefined} csvName={`q${q.index}-gold.csv`} testId="gold-result" /> : null}
        </div>
      </div>
      {both && res ? (
        <p class="muted">
          Marked rows have no equal row on the other side: {res.predExtra.filter(Boolean).length} predicted, {res.goldMissing.filter(Boolean).length} gold.
        </p>
      ) : null}
      {q.trajectory ? (
        <>
          <h4>Trajectory</h4>
          <Trajectory turns={q.trajectory} />
        </>
      ) : null}
    </section>
  );
}

/** The reports on the same question file, one column per policy: EX overall and per difficulty (empty ones left out). */
function Peers({ id }: { id: string }) {
  const { data } = useJson<{ reports: EvalPeer[] }>('eval/peers', { id });
  const reports = data?.reports ?? [];
  if (reports.length < 2) return null;
  const buckets = [...new Set(reports.flatMap((r) => r.summary.byDifficulty.filter((b) => b.count > 0).map((b) => b.bucket)))];
  const cell = (r: EvalPeer, bucket: string) => {
    const b = r.summary.byDifficulty.find((x) => x.bucket === bucket);
    return b && b.count > 0 ? `${b.accuracy.toFixed(1)}% (${b.correct}/${b.count})` : '–';
  };
  return (
    <section class="card" data-testid="peers">
      <h3>The same questions, {reports.length} policies</h3>
      <table class="compact">
        <thead>
          <tr>
            <th></th>
            {reports.map((r) => (
              <th class={r.id === id ? 'current' : ''} title={r.label}>
                <a href={`#/evals?id=${encodeURIComponent(r.id)}`}>{r.policy}</a>
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          <tr>
            <td>all</td>
            {reports.map((r) => (
              <td class={r.id === id ? 'current' : ''}>
                <strong>{r.summary.accuracy.toFixed(1)}%</strong> ({r.summary.correct}/{r.summary.count})
              </td>
            ))}
          </tr>
          {buckets.map((b) => (
            <tr>
              <td>{b}</td>
              {reports.map((r) => (
                <td class={r.id === id ? 'current' : ''}>{cell(r, b)}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

export function EvalsPage({ params }: { params: URLSearchParams }) {
  const { data: overview, error } = useOverview();
  const [outcome, setOutcome] = useState('');
  const [open, setOpen] = useState<number | null>(null);
  const id = params.get('id') ?? overview?.evals[0]?.id ?? null;
  const { data: detail, error: loadError } = useJson<EvalDetail>('eval', id ? { id } : null);
  useEffect(() => setOpen(null), [id]);
  const questions = useMemo(() => (detail?.questions ?? []).filter((q) => !outcome || q.outcome === outcome), [detail, outcome]);

  if (error) return <p class="error">{error}</p>;
  if (!overview) return <p class="muted">loading…</p>;
  if (!overview.evals.length) return <p class="muted">No evaluation here (an `agro eval --out report.json` file, or a quickstart's predictions).</p>;
  const s = detail?.summary;
  return (
    <ListPage title="Evaluations" page="evals" items={overview.evals} active={id} error={loadError}>
      {!detail || !s ? (
        !loadError && <p class="muted">loading (a quickstart's predictions are scored now)…</p>
      ) : (
        <>
          <Peers id={detail.info.id} />
          <p class="stats" data-testid="ex">
            Execution accuracy <strong>{s.accuracy.toFixed(2)}%</strong> ({s.correct} of {s.count}, {detail.mode} comparison)
          </p>
          <div class="charts">
            {/* A difficulty no question has is not a 0% bar. */}
            <BarChart title="EX by difficulty (%)" labels={s.byDifficulty.filter((b) => b.count > 0).map((b) => b.bucket)} series={[{ label: 'EX %', values: s.byDifficulty.filter((b) => b.count > 0).map((b) => b.accuracy) }]} />
            {/* Nor is an outcome no question had (a run with no timeout draws no empty timeout slot). */}
            <BarChart title="Outcomes" labels={Object.entries(s.outcomes).filter(([, n]) => n > 0).map(([k]) => k)} series={[{ label: 'questions', values: Object.values(s.outcomes).filter((n) => n > 0) }]} />
          </div>
          <section class="card">
            <h3>Questions</h3>
            <div class="filters">
              <label class="filter">
                outcome
                <select value={outcome} onChange={(e) => (setOutcome((e.target as HTMLSelectElement).value), setOpen(null))}>
                  <option value="">all</option>
                  {Object.keys(s.outcomes).map((o) => (
                    <option value={o}>{o}</option>
                  ))}
                </select>
              </label>
            </div>
            <DataTable
              testId="questions"
              caption={`${questions.length} questions`}
              columns={['#', 'difficulty', 'outcome', 'question', 'predicted', 'gold']}
              rows={questions.map((q) => [q.questionId ?? q.index, q.bucket, q.outcome, q.question ?? '', q.pred, q.gold])}
              marked={questions.map((q) => q.outcome !== 'match')}
              csvName="evaluation.csv"
              selected={open ?? undefined}
              onRowClick={setOpen}
            />
          </section>
          {open !== null && questions[open] ? <Compare evalId={detail.info.id} q={questions[open]} /> : null}
        </>
      )}
    </ListPage>
  );
}
