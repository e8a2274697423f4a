import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import './styles.css';
import { RunsPage } from './pages/Runs.tsx';
import { DataPage } from './pages/Data.tsx';
import { EvalsPage } from './pages/Evals.tsx';
import { PlaygroundPage } from './pages/Playground.tsx';

/** Hash routes (#/runs?...): the server needs no route of its own for pages. */
export interface Route {
  page: string;
  params: URLSearchParams;
}

function parseHash(): Route {
  const h = location.hash.replace(/^#\/?/, '');
  const [page, query] = h.split('?');
  return { page: page || 'runs', params: new URLSearchParams(query ?? '') };
}

export function navigate(page: string, params: Record<string, string> = {}): void {
  const q = new URLSearchParams(params).toString();
  location.hash = `#/${page}${q ? `?${q}` : ''}`;
}

const PAGES: [string, string][] = [
  ['runs', 'Runs'],
  ['data', 'Data'],
  ['evals', 'Evaluations'],
  ['playground', 'Playground'],
];

function App() {
  const [route, setRoute] = useState(parseHash);
  useEffect(() => {
    const on = () => setRoute(parseHash());
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return (
    <>
      <header>
        <strong>agro</strong>
        <nav>
          {PAGES.map(([id, label]) => (
            <a href={`#/${id}`} class={route.page === id ? 'active' : ''}>
              {label}
            </a>
          ))}
        </nav>
      </header>
      <main>
        {route.page === 'runs' ? <RunsPage params={route.params} /> : null}
        {route.page === 'data' ? <DataPage params={route.params} /> : null}
        {route.page === 'evals' ? <EvalsPage params={route.params} /> : null}
        {route.page === 'playground' ? <PlaygroundPage /> : null}
      </main>
    </>
  );
}

render(<App />, document.getElementById('app')!);
