/** Pull one JSON value out of a model's reply (fences and prose tolerated) and validate it. */
import type { z } from 'zod';

export type JsonParse<T> = { ok: true; value: T } | { ok: false; error: string };

/** Candidate JSON texts, most likely first: a ```json fence, the whole reply, the outermost {...}. */
export function jsonCandidates(reply: string): string[] {
  const out: string[] = [];
  const fence = /```(?:json|JSON)?\s*\n?([\s\S]*?)```/.exec(reply);
  if (fence) out.push(fence[1].trim());
  out.push(reply.trim());
  const first = reply.indexOf('{');
  const last = reply.lastIndexOf('}');
  if (first >= 0 && last > first) out.push(reply.slice(first, last + 1));
  return out;
}

export function parseJsonReply<S extends z.ZodType>(reply: string, schema: S): JsonParse<z.output<S>> {
  let parsedAny = false;
  let lastError = 'the reply contains no JSON object';
  for (const text of jsonCandidates(reply)) {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      continue;
    }
    parsedAny = true;
    const r = schema.safeParse(value);
    if (r.success) return { ok: true, value: r.data };
    lastError = r.error.issues
      .slice(0, 3)
      .map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`)
      .join('; ');
  }
  return { ok: false, error: parsedAny ? `schema mismatch: ${lastError}` : lastError };
}
