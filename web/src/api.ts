import { useEffect, useState } from 'preact/hooks';

/** Requests to the dashboard's API, relative to the page (the server may mount the app anywhere); its error line thrown. */
async function send<T>(method: string, path: string, params: Record<string, string | number>, data?: unknown): Promise<T> {
  const q = new URLSearchParams(Object.entries(params).map(([k, v]) => [k, String(v)]));
  const init: RequestInit = data === undefined ? { method } : { method, headers: { 'content-type': 'application/json' }, body: JSON.stringify(data) };
  const res = await fetch(`api/${path}${q.size ? `?${q}` : ''}`, init);
  const body = (await res.json()) as T & { error?: string };
  if (!res.ok) throw new Error(body.error ?? `${res.status} ${res.statusText}`);
  return body;
}

export const getJson = <T>(path: string, params: Record<string, string | number> = {}): Promise<T> => send<T>('GET', path, params);
export const postJson = <T>(path: string, data: unknown): Promise<T> => send<T>('POST', path, {}, data);
export const deleteJson = <T>(path: string, params: Record<string, string | number> = {}): Promise<T> => send<T>('DELETE', path, params);

export function apiUrl(path: string, params: [string, string][]): string {
  return `api/${path}?${new URLSearchParams(params)}`;
}

/** Save a Blob or data URL under a file name. */
export function download(name: string, data: Blob | string): void {
  const a = document.createElement('a');
  a.href = typeof data === 'string' ? data : URL.createObjectURL(data);
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  if (typeof data !== 'string') setTimeout(() => URL.revokeObjectURL(a.href), 1000);
}

/**
 * A GET as a page needs it: fetched when the params change (null: nothing to fetch yet), an answer for
 * older params dropped, and nothing shown from the previous params while the new answer is on its way.
 */
export function useJson<T>(path: string, params: Record<string, string | number> | null): { data: T | null; error: string | null } {
  const key = params ? JSON.stringify(params) : null;
  const [state, setState] = useState<{ key: string | null; data: T | null; error: string | null }>({ key: null, data: null, error: null });
  useEffect(() => {
    if (key === null) return;
    let live = true;
    getJson<T>(path, params!).then(
      (data) => live && setState({ key, data, error: null }),
      (e: Error) => live && setState({ key, data: null, error: e.message }),
    );
    return () => {
      live = false;
    };
  }, [path, key]);
  return state.key === key ? { data: state.data, error: state.error } : { data: null, error: null };
}
