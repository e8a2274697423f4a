import { useEffect, useState } from 'preact/hooks';
import { getJson } from './api.ts';
import type { DatabaseInfo, EvalInfo, PolicyInfo, RunInfo } from '../../src/server/dashboard/api-types.ts';

export interface Overview {
  root: string;
  runs: RunInfo[];
  datasets: { id: string }[];
  evals: EvalInfo[];
  policies: PolicyInfo[];
  databases: DatabaseInfo[];
  /** Where the Playground starts (the server's choice: src/server/dashboard.ts). */
  defaults?: { policy: string | null; database: string | null };
  /** Whether this page may ask and correct: opened with the link printed at start (its token), or a server without one. */
  writable: boolean;
}

// The first page's request leaves as the bundle starts, not after the first paint (when effects run).
let first: Promise<Overview> | null = getJson<Overview>('overview');
first.catch(() => {});

/** What the folder holds, fetched once per page. */
export function useOverview(): { data: Overview | null; error: string | null } {
  const [data, setData] = useState<Overview | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    const p = first ?? getJson<Overview>('overview');
    first = null;
    p.then(setData, (e: Error) => setError(e.message));
  }, []);
  return { data, error };
}
