/** Hash routes (#/runs?...): the server needs no route of its own for pages. Pages and components link through here, not through main.tsx. */
export interface Route {
  page: string;
  params: URLSearchParams;
}

export function parseHash(): Route {
  const h = location.hash.replace(/^#\/?/, '');
  const [page, query] = h.split('?');
  return { page: page || 'runs', params: new URLSearchParams(query ?? '') };
}

export function navigate(page: string, params: Record<string, string> = {}): void {
  const q = new URLSearchParams(params).toString();
  location.hash = `#/${page}${q ? `?${q}` : ''}`;
}
