import { useEffect, useRef, useState } from 'preact/hooks';
import { apiUrl, deleteJson, download, getJson, postJson } from '../api.ts';
import { toCsv } from '../csv.ts';
import { SelectField, type Choice } from '../components/Picker.tsx';
import { ResultChartView } from '../components/ResultChart.tsx';
import { ResultView } from '../components/Table.tsx';
import { useOverview } from '../overview.ts';
import type { CheckedAnswer, PersonCorrection, PlaygroundEvent, ResultTable, StoredCorrection } from '../../../src/server/dashboard/api-types.ts';

/** One finished question of the conversation: what the next one may follow up. */
interface Exchange {
  question: string;
  /** The answer's SQL ('' when the episode gave none). */
  sql: string;
  /** One line on its result (rows, or why none). */
  summary: string;
}

function summary(e: Extract<PlaygroundEvent, { type: 'end' }>): string {
  const r = e.result;
  if (e.answer === undefined) return `no answer (${e.reason})`;
  if (!r) return '';
  if (!r.ok) return `${r.error}`;
  if (r.rows.length === 1 && r.columns.length === 1) return `= ${String(r.rows[0][0])}`;
  return `${r.rows.length}${r.truncated ? '+' : ''} row${r.rows.length === 1 ? '' : 's'}`;
}

/** The conversation so far, oldest first: each question, the SQL that answered it, and its result in a word. */
function History({ turns, onClear }: { turns: Exchange[]; onClear: () => void }) {
  if (turns.length === 0) return null;
  return (
    <section class="card history" data-testid="history">
      <h3>
        Conversation <span class="muted">(the next question may follow up: "only the top three", "and in 2009?")</span>{' '}
        <button class="small" onClick={onClear} data-testid="new-conversation">
          New conversation
        </button>
      </h3>
      <ol>
        {turns.map((t) => (
          <li>
            <span class="question">{t.question}</span> <span class="muted">{t.summary}</span>
            {t.sql ? <pre class="sql">{t.sql}</pre> : null}
          </li>
        ))}
      </ol>
    </section>
  );
}

/** While the policy answers: the turn it is on (or the answer path's check) and the time it has taken. */
function Progress({ since, turn, checking }: { since: number; turn: number; checking: number | null }) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 200);
    return () => clearInterval(t);
  }, []);
  const stage = checking === null ? `answering · turn ${turn + 1}` : `checking the answer: ${checking} more samples, the memory, question-time synthesis`;
  return (
    <p class="progress-line" data-testid="progress">
      <span class="spinner" /> {stage} · {((now - since) / 1000).toFixed(1)} s
    </p>
  );
}

/**
 * What the answer path says of the answer: its reading and confidence (a low one marked), where it came from, and
 * the person's verdict: right (the pair is stored as theirs) or wrong with the right SQL (stored once it runs).
 */
function AnswerCheck(p: {
  checked: CheckedAnswer | null;
  question: string;
  sql: string;
  onStore: (sql: string) => Promise<StoredCorrection>;
  onSuggest: (q: string) => void;
  busy: boolean;
}) {
  const [fixing, setFixing] = useState(false);
  const [right, setRight] = useState(p.sql);
  const [status, setStatus] = useState<{ ok: boolean; text: string } | null>(null);
  const [saving, setSaving] = useState(false);
  // A new answer starts a new verdict.
  useEffect(() => {
    setFixing(false);
    setRight(p.sql);
    setStatus(null);
  }, [p.question, p.sql]);
  const store = (sql: string) => {
    setSaving(true);
    setStatus(null);
    p.onStore(sql).then(
      (r) => {
        const n = r.result.rows.length;
        setStatus({ ok: true, text: `stored in ${r.memory} (${n}${r.result.truncated ? '+' : ''} row${n === 1 && !r.result.truncated ? '' : 's'}): the next question like this one finds it` });
      },
      (e: Error) => setStatus({ ok: false, text: e.message }),
    ).finally(() => setSaving(false));
  };
  const c = p.checked;
  return (
    <section class={`card answer-check${c?.low ? ' low' : ''}`} data-testid="answer-check">
      {c ? (
        <>
          <p class="reading" data-testid="reading">
            {c.reading ? (
              <>
                <span class="muted">I read this as:</span> {c.reading}
              </>
            ) : (
              <span class="muted">The factory cannot read this query back into words.</span>
            )}
          </p>
          <p class="confidence-line">
            <span class={`confidence${c.low ? ' low' : ''}`} data-testid="confidence" data-value={c.confidence}>
              confidence {c.confidence.toFixed(2)}
              {c.low ? ' · low: check it before trusting it' : ''}
            </span>{' '}
            <span class="muted">from {c.sources.join(', ') || 'the policy'}</span>
            {c.policyAnswer ? <span class="muted"> · the policy itself answered <code>{c.policyAnswer}</code></span> : null}
          </p>
        </>
      ) : (
        <p class="muted">The policy's own answer (the answer path is off): no reading or confidence.</p>
      )}
      <div class="verdict">
        <span class="muted">Is this right for “{p.question}”?</span>{' '}
        <button class="small" disabled={saving || p.busy} onClick={() => store(p.sql)} data-testid="mark-right">
          ✓ Right
        </button>{' '}
        <button class="small" disabled={saving || p.busy} onClick={() => setFixing(true)} data-testid="mark-wrong">
          ✗ Wrong: give the right SQL
        </button>
      </div>
      {fixing ? (
        <div class="fix">
          <textarea class="sql-edit" rows={3} value={right} onInput={(e) => setRight((e.target as HTMLTextAreaElement).value)} data-testid="correct-sql" />
          <button disabled={saving || !right.trim()} onClick={() => store(right)} data-testid="store-correction">
            {saving ? 'running…' : 'Run and store the right SQL'}
          </button>
        </div>
      ) : null}
      {status ? (
        <p class={status.ok ? 'stored' : 'error'} data-testid="correction-status">
          {status.text}
        </p>
      ) : null}
      {c?.suggestions.length ? (
        <div class="suggestions" data-testid="suggestions">
          <span class="muted">You might also ask:</span>
          {c.suggestions.map((q) => (
            <button class="small suggestion" disabled={p.busy} onClick={() => p.onSuggest(q)}>
              {q}
            </button>
          ))}
        </div>
      ) : null}
    </section>
  );
}

/**
 * Performance marks: Run SQL clicked, its result arrived; measures from each to the result's chart drawn above its
 * table (the whole wait, and the page's own part: the server's query and chart drawing are not in the second).
 */
const RUN_MARK = 'agro:run-sql';
const RESULT_MARK = 'agro:run-sql-result';
const DRAWN_MEASURE = 'agro:run-sql-to-chart';
const PAGE_MEASURE = 'agro:result-to-chart';
const measureDrawn = () => {
  if (performance.getEntriesByName(RUN_MARK, 'mark').length === 0 || performance.getEntriesByName(RESULT_MARK, 'mark').length === 0) return;
  performance.measure(DRAWN_MEASURE, RUN_MARK);
  performance.measure(PAGE_MEASURE, RESULT_MARK);
  performance.clearMarks(RUN_MARK);
  performance.clearMarks(RESULT_MARK);
};

/**
 * What people taught the database's memory (here, with agro ask --correct, or over the API): each correction with
 * its questions and time, and a remove button where the page may write (the store keeps it as removed).
 */
function Corrections(p: { policy: string; db: string; writable: boolean; version: number }) {
  const [list, setList] = useState<PersonCorrection[]>([]);
  const [err, setErr] = useState<string | null>(null);
  const [busy, setBusy] = useState<number | null>(null);
  const load = () =>
    getJson<{ corrections: PersonCorrection[] }>('playground/corrections', { policy: p.policy, db: p.db }).then(
      (r) => {
        setList(r.corrections);
        setErr(null);
      },
      (e: Error) => setErr(e.message),
    );
  useEffect(() => {
    setList([]);
    setErr(null);
    if (p.policy && p.db) load();
  }, [p.policy, p.db, p.version]);
  const remove = (id: number) => {
    setBusy(id);
    deleteJson('playground/corrections/' + id, { policy: p.policy, db: p.db })
      .then(load, (e: Error) => setErr(e.message))
      .finally(() => setBusy(null));
  };
  if (!list.length && !err) return null;
  return (
    <details class="card corrections" data-testid="corrections" open>
      <summary>
        Taught to this database's memory: {list.length} correction{list.length === 1 ? '' : 's'}
      </summary>
      {err ? <p class="error">{err}</p> : null}
      <ul>
        {list.map((c) => (
          <li data-testid="correction" key={c.id}>
            <span class="muted">{c.at ? new Date(c.at).toLocaleString() : ''}</span> “{c.questions.join('” · “')}” <code>{c.sql}</code>{' '}
            {p.writable ? (
              <button class="small secondary" disabled={busy === c.id} onClick={() => remove(c.id)} data-testid="remove-correction">
                Remove
              </button>
            ) : null}
          </li>
        ))}
      </ul>
    </details>
  );
}

const KIND_GROUP: Record<string, string> = { checkpoint: 'agro checkpoints', gguf: 'GGUF files', endpoint: 'OpenAI-compatible endpoints' };

/** The turn being written: its text so far. */
function Writing({ turn, text }: { turn: number; text: string }) {
  return (
    <div class="turn assistant writing" data-testid="writing">
      <span class="role">assistant · turn {turn + 1} · writing…</span>
      <pre>{text}</pre>
    </div>
  );
}

function Step({ e }: { e: PlaygroundEvent }) {
  if (e.type === 'assistant')
    return (
      <div class="turn assistant">
        <span class="role">assistant · turn {e.turn + 1}</span>
        {e.action ? (
          <>
            {e.think ? <p class="think">{e.think}</p> : null}
            <pre class="sql">
              <span class="tag">{e.action.kind}</span> {e.action.content}
            </pre>
          </>
        ) : (
          <pre>{e.text}</pre>
        )}
      </div>
    );
  if (e.type === 'observation')
    return (
      <div class="turn tool">
        <span class="role">observation</span>
        {e.table ? <ResultView result={e.table} /> : <pre>{e.text}</pre>}
      </div>
    );
  if (e.type === 'start') {
    const user = e.messages.filter((m) => m.role === 'user').pop();
    return user ? (
      <div class="turn user">
        <span class="role">user</span>
        <pre>{user.content}</pre>
      </div>
    ) : null;
  }
  if (e.type === 'end') return <p class="muted">episode ended: {e.reason}{e.ms !== undefined ? ` (${(e.ms / 1000).toFixed(1)} s)` : ''}</p>;
  if (e.type === 'error') return <p class="error">{e.message}</p>;
  return null;
}

export function PlaygroundPage() {
  const { data: overview, error } = useOverview();
  const [policy, setPolicy] = useState('');
  const [db, setDb] = useState('');
  const [question, setQuestion] = useState('');
  const [events, setEvents] = useState<PlaygroundEvent[]>([]);
  const [writing, setWriting] = useState<{ turn: number; text: string } | null>(null);
  const [running, setRunning] = useState(false);
  const [prompt, setPrompt] = useState<string | null>(null);
  const [sql, setSql] = useState('');
  const [result, setResult] = useState<ResultTable | null>(null);
  const [sqlErr, setSqlErr] = useState<string | null>(null);
  const [conversation, setConversation] = useState<Exchange[]>([]);
  const [startedAt, setStartedAt] = useState(0);
  const [copied, setCopied] = useState(false);
  const [checking, setChecking] = useState<number | null>(null);
  const [checked, setChecked] = useState<CheckedAnswer | null>(null);
  /** The question the answer below answers, and its SQL (what a verdict is about). */
  const [answered, setAnswered] = useState<{ question: string; sql: string } | null>(null);
  const [search, setSearch] = useState(true);
  /** Bumped by each correction stored here: the list of corrections reads the memory again. */
  const [taught, setTaught] = useState(0);
  const source = useRef<EventSource | null>(null);
  const asked = useRef('');

  useEffect(() => {
    if (!overview) return;
    // The server says where the person is: the policy they named or the newest checkpoint, their own database.
    if (!policy) setPolicy(overview.defaults?.policy ?? overview.policies[0]?.id ?? '');
    if (!db) setDb(overview.defaults?.database ?? overview.databases[0]?.id ?? '');
  }, [overview]);
  useEffect(() => {
    setPrompt(null);
    if (policy && db) getJson<{ prompt: string | null }>('playground/prompt', { policy, db }).then((r) => setPrompt(r.prompt), (e: Error) => setPrompt(`(${e.message})`));
  }, [policy, db]);
  useEffect(() => () => source.current?.close(), []);

  /** Asks a question; a suggested one stands alone (the memory holds it as a whole question), the history stays. */
  const ask = (q = question, standalone = false) => {
    source.current?.close();
    setEvents([]);
    setWriting(null);
    setResult(null);
    setSqlErr(null);
    setChecking(null);
    setChecked(null);
    setAnswered(null);
    performance.clearMarks(RUN_MARK);
    setRunning(true);
    setStartedAt(Date.now());
    asked.current = q.trim();
    // The turns travel in the address: the last 10 (the prompt uses fewer, src/prompt/conversation.ts) keep it short.
    const previous = standalone ? [] : conversation.slice(-10).map(({ question: pq, sql: s }) => ({ question: pq, sql: s }));
    const params: [string, string][] = [['policy', policy], ['db', db], ['question', q], ...(previous.length ? [['previous', JSON.stringify(previous)] as [string, string]] : []), ...(search ? [] : [['search', '0'] as [string, string]])];
    const es = new EventSource(apiUrl('playground/ask', params));
    source.current = es;
    const finish = () => {
      es.close();
      setRunning(false);
      setChecking(null);
    };
    es.addEventListener('text', (m) => {
      const e = JSON.parse((m as MessageEvent<string>).data) as Extract<PlaygroundEvent, { type: 'text' }>;
      setWriting((cur) => (cur && cur.turn === e.turn ? { turn: e.turn, text: cur.text + e.delta } : { turn: e.turn, text: e.delta }));
    });
    es.addEventListener('checking', (m) => {
      const e = JSON.parse((m as MessageEvent<string>).data) as Extract<PlaygroundEvent, { type: 'checking' }>;
      setWriting(null);
      setChecking(e.samples);
    });
    for (const type of ['start', 'assistant', 'observation', 'end', 'error']) {
      es.addEventListener(type, (m) => {
        const e = JSON.parse((m as MessageEvent<string>).data) as PlaygroundEvent;
        if (e.type === 'assistant' || e.type === 'end' || e.type === 'error') setWriting(null);
        setEvents((cur) => [...cur, e]);
        if (e.type === 'end') {
          if (e.answer !== undefined) {
            setSql(e.answer);
            setAnswered({ question: asked.current, sql: e.answer });
          }
          setChecked(e.checked ?? null);
          if (e.result) setResult(e.result);
          // The next question follows this one up (a question with no answer stays in the history too).
          setConversation((cur) => [...cur, { question: asked.current, sql: e.answer ?? '', summary: summary(e) }]);
          setQuestion('');
          finish();
        }
        if (e.type === 'error') finish();
      });
    }
    // The server closes the stream after the last step; a broken connection says so.
    es.onerror = () => {
      if (es.readyState === EventSource.CLOSED || es.readyState === EventSource.CONNECTING) finish();
    };
  };
  const run = () => {
    setSqlErr(null);
    // The page's own timing (read by the browser test and the devtools' performance panel): from Run SQL to its chart drawn.
    performance.clearMarks(RUN_MARK);
    performance.clearMarks(RESULT_MARK);
    performance.mark(RUN_MARK);
    postJson<ResultTable>('sql', { db, sql, chart: true }).then(
      (r) => {
        performance.mark(RESULT_MARK);
        setResult(r);
      },
      (e: Error) => setSqlErr(e.message),
    );
  };
  const copySql = () => {
    const done = () => {
      setCopied(true);
      setTimeout(() => setCopied(false), 1500);
    };
    // The clipboard API needs a secure context (loopback is one); a page behind plain http elsewhere falls back.
    if (navigator.clipboard) navigator.clipboard.writeText(sql).then(done, () => setSqlErr('the browser refused the clipboard'));
    else {
      const t = document.querySelector<HTMLTextAreaElement>('[data-testid=final-sql]');
      t?.select();
      if (document.execCommand('copy')) done();
    }
  };
  // Every row the sandbox returns (not only the rows shown): the same bounds as any query's result.
  const downloadCsv = () => {
    setSqlErr(null);
    postJson<ResultTable>('sql', { db, sql, full: true }).then(
      (r) => (r.ok ? download('result.csv', new Blob([toCsv(r.columns, r.rows)], { type: 'text/csv' })) : setSqlErr(`${r.error}: ${r.message ?? ''}`)),
      (e: Error) => setSqlErr(e.message),
    );
  };
  const storeCorrection = (right: string) =>
    postJson<StoredCorrection>('playground/correct', { policy, db, question: answered?.question ?? '', sql: right }).then((r) => {
      setTaught((n) => n + 1);
      return r;
    });
  const turn = events.reduce((n, e) => (e.type === 'assistant' ? Math.max(n, e.turn + 1) : n), writing?.turn ?? 0);

  if (error) return <p class="error">{error}</p>;
  if (!overview) return <p class="muted">loading…</p>;
  const policyChoices: Choice[] = overview.policies.map((p) => ({ value: p.id, label: p.label, group: KIND_GROUP[p.kind] ?? p.kind }));
  return (
    <div class="layout">
      <aside>
        <h3>Ask the agent</h3>
        {overview.writable ? null : (
          <p class="notice" data-testid="read-only">
            Opened without the link agro printed at start: this page reads, but asking and correcting need that link (it carries the server's token).
          </p>
        )}
        <SelectField label="policy" value={policy} choices={policyChoices} onChange={setPolicy} empty="no policy: no checkpoint or .gguf in this folder" testId="policy" />
        <SelectField label="database" value={db} choices={overview.databases.map((d) => ({ value: d.id, label: d.label }))} onChange={setDb} empty="no database" testId="database" />
        <label class="field">
          {conversation.length ? 'follow-up question' : 'question'}
          <textarea rows={3} value={question} onInput={(e) => setQuestion((e.target as HTMLTextAreaElement).value)} data-testid="question" placeholder={conversation.length ? 'and only the top three?' : 'How many genres are there?'} />
        </label>
        <button onClick={() => ask()} disabled={!overview.writable || !policy || !db || !question.trim() || running} data-testid="ask">
          {running ? 'running…' : 'Ask'}
        </button>
        <label class="check" title="The policy's samples, the database's memory and question-time synthesis, run and ranked (as agro ask); off: the policy's greedy answer alone">
          <input type="checkbox" checked={search} onChange={(e) => setSearch((e.target as HTMLInputElement).checked)} data-testid="search" /> check the answer (reading, confidence)
        </label>
        <details class="schema" open>
          <summary>What the model sees (system prompt)</summary>
          <pre data-testid="prompt">{prompt ?? '…'}</pre>
        </details>
      </aside>
      <section class="content">
        <History turns={conversation} onClear={() => setConversation([])} />
        <div class="turns" data-testid="turns">
          {events.map((e) => (
            <Step e={e} />
          ))}
          {writing ? <Writing turn={writing.turn} text={writing.text} /> : null}
          {running ? <Progress since={startedAt} turn={turn} checking={checking} /> : null}
        </div>
        {answered && !running ? (
          <AnswerCheck checked={checked} question={answered.question} sql={answered.sql} onStore={storeCorrection} busy={running} onSuggest={(q) => {
            setQuestion(q);
            ask(q, true);
          }} />
        ) : null}
        <Corrections policy={policy} db={db} writable={overview.writable} version={taught} />
        <section class="card">
          <h3>Final SQL</h3>
          <textarea class="sql-edit" rows={4} value={sql} onInput={(e) => setSql((e.target as HTMLTextAreaElement).value)} data-testid="final-sql" placeholder="the agent's answer lands here; edit it and run it" />
          <div>
            <button onClick={run} disabled={!db || !sql.trim()} data-testid="run-sql">
              Run SQL
            </button>{' '}
            <button class="secondary" onClick={copySql} disabled={!sql.trim()} data-testid="copy-sql">
              {copied ? 'Copied' : 'Copy SQL'}
            </button>{' '}
            <button class="secondary" onClick={downloadCsv} disabled={!db || !sql.trim()} data-testid="download-csv" title="Every row the sandbox returns (up to its row and byte bounds), not only those shown">
              Download CSV
            </button>
          </div>
          {sqlErr ? <p class="error">{sqlErr}</p> : null}
          {result?.chart ? <ResultChartView chart={result.chart} testId="answer-chart" onDrawn={measureDrawn} /> : null}
          {result ? <ResultView result={result} csvName="result.csv" testId="final-result" /> : null}
        </section>
      </section>
    </div>
  );
}
