/** Requests to the dashboard's API, relative to the page (the server may mount the app anywhere). */
export async function getJson<T>(path: string, params: Record<string, string | number> = {}): Promise<T> {
  const q = new URLSearchParams(Object.entries(params).map(([k, v]) => [k, String(v)]));
  const res = await fetch(`api/${path}${q.size ? `?${q}` : ''}`);
  const body = (await res.json()) as T & { error?: string };
  if (!res.ok) throw new Error(body.error ?? `${res.status} ${res.statusText}`);
  return body;
}

export async function postJson<T>(path: string, data: unknown): Promise<T> {
  const res = await fetch(`api/${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(data) });
  const body = (await res.json()) as T & { error?: string };
  if (!res.ok) throw new Error(body.error ?? `${res.status} ${res.statusText}`);
  return body;
}

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
