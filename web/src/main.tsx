import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import './styles.css';
import { RunsPage } from './pages/Runs.tsx';
import { DataPage } from './pages/Data.tsx';
import { EvalsPage } from './pages/Evals.tsx';
import { PlaygroundPage } from './pages/Playground.tsx';
import { parseHash } from './routes.ts';

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
