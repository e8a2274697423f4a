import { useEffect, useRef, useState } from 'preact/hooks';
import { apiUrl, getJson, postJson } from '../api.ts';
import { SelectField, type Choice } from '../components/Picker.tsx';
import { ResultView } from '../components/Table.tsx';
import { useOverview } from '../overview.ts';
import type { PlaygroundEvent, ResultTable } from '../../../src/server/dashboard/api-types.ts';

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
  const source = useRef<EventSource | null>(null);

  useEffect(() => {
    if (!overview) return;
    if (!policy && overview.policies[0]) setPolicy(overview.policies[0].id);
    if (!db && overview.databases[0]) setDb(overview.databases[0].id);
  }, [overview]);
  useEffect(() => {
    setPrompt(null);
    if (policy && db) getJson<{ prompt: string | null }>('playground/prompt', { policy, db }).then((r) => setPrompt(r.prompt), (e: Error) => setPrompt(`(${e.message})`));
  }, [policy, db]);
  useEffect(() => () => source.current?.close(), []);

  const ask = () => {
    source.current?.close();
    setEvents([]);
    setWriting(null);
    setResult(null);
    setSqlErr(null);
    setRunning(true);
    const es = new EventSource(apiUrl('playground/ask', [['policy', policy], ['db', db], ['question', question]]));
    source.current = es;
    const finish = () => {
      es.close();
      setRunning(false);
    };
    es.addEventListener('text', (m) => {
      const e = JSON.parse((m as MessageEvent<string>).data) as Extract<PlaygroundEvent, { type: 'text' }>;
      setWriting((cur) => (cur && cur.turn === e.turn ? { turn: e.turn, text: cur.text + e.delta } : { turn: e.turn, text: e.delta }));
    });
    for (const type of ['start', 'assistant', 'observation', 'end', 'error']) {
      es.addEventListener(type, (m) => {
        const e = JSON.parse((m as MessageEvent<string>).data) as PlaygroundEvent;
        if (e.type === 'assistant' || e.type === 'end' || e.type === 'error') setWriting(null);
        setEvents((cur) => [...cur, e]);
        if (e.type === 'end') {
          if (e.answer !== undefined) setSql(e.answer);
          if (e.result) setResult(e.result);
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
    postJson<ResultTable>('sql', { db, sql }).then(setResult, (e: Error) => setSqlErr(e.message));
  };

  if (error) return <p class="error">{error}</p>;
  if (!overview) return <p class="muted">loading…</p>;
  const policyChoices: Choice[] = overview.policies.map((p) => ({ value: p.id, label: p.label, group: KIND_GROUP[p.kind] ?? p.kind }));
  return (
    <div class="layout">
      <aside>
        <h3>Ask the agent</h3>
        <SelectField label="policy" value={policy} choices={policyChoices} onChange={setPolicy} empty="no policy: no checkpoint or .gguf in this folder" testId="policy" />
        <SelectField label="database" value={db} choices={overview.databases.map((d) => ({ value: d.id, label: d.label }))} onChange={setDb} empty="no database" testId="database" />
        <label class="field">
          question
          <textarea rows={3} value={question} onInput={(e) => setQuestion((e.target as HTMLTextAreaElement).value)} data-testid="question" placeholder="How many genres are there?" />
        </label>
        <button onClick={ask} disabled={!policy || !db || !question.trim() || running} data-testid="ask">
          {running ? 'running…' : 'Ask'}
        </button>
        <details class="schema" open>
          <summary>What the model sees (system prompt)</summary>
          <pre data-testid="prompt">{prompt ?? '…'}</pre>
        </details>
      </aside>
      <section class="content">
        <div class="turns" data-testid="turns">
          {events.map((e) => (
            <Step e={e} />
          ))}
          {writing ? <Writing turn={writing.turn} text={writing.text} /> : null}
        </div>
        <section class="card">
          <h3>Final SQL</h3>
          <textarea class="sql-edit" rows={4} value={sql} onInput={(e) => setSql((e.target as HTMLTextAreaElement).value)} data-testid="final-sql" placeholder="the agent's answer lands here; edit it and run it" />
          <div>
            <button onClick={run} disabled={!db || !sql.trim()} data-testid="run-sql">
              Run SQL
            </button>
          </div>
          {sqlErr ? <p class="error">{sqlErr}</p> : null}
          {result ? <ResultView result={result} csvName="result.csv" testId="final-result" /> : null}
        </section>
      </section>
    </div>
  );
}
