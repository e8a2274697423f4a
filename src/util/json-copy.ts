/**
 * A deep copy of plain data with exactly the result of JSON.parse(JSON.stringify(v)) (undefined, function and
 * symbol members dropped, or null in arrays; NaN and ±Infinity to null; -0 to 0), without building the text:
 * the factory copies every drafted query's AST, and the round trip through a string was a visible share of
 * synthesis. What is not plain data (a class instance, a toJSON, a key named __proto__) takes the round trip.
 */
export function jsonCopy<T>(v: T): T {
  return copy(v) as T;
}


function copy(v: unknown): unknown {
  switch (typeof v) {
    case 'string':
    case 'boolean':
      return v;
    case 'number':
      return Number.isFinite(v) ? (v === 0 ? 0 : v) : null;
    case 'object':
      break;
    default:
      // undefined, functions and symbols have no JSON; bigint throws there as here.
      if (typeof v === 'bigint') return JSON.stringify(v);
      return undefined;
  }
  if (v === null) return null;
  if (Array.isArray(v)) {
    const out = new Array<unknown>(v.length);
    for (let i = 0; i < v.length; i++) {
      const x = copy(v[i]);
      out[i] = x === undefined ? null : x;
    }
    return out;
  }
  const proto = Object.getPrototypeOf(v);
  if ((proto !== Object.prototype && proto !== null) || typeof (v as { toJSON?: unknown }).toJSON === 'function') return roundTrip(v);
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(v)) {
    if (k === '__proto__') return roundTrip(v);
    const x = copy((v as Record<string, unknown>)[k]);
    if (x !== undefined) out[k] = x;
  }
  return out;
}

function roundTrip(v: unknown): unknown {
  const text = JSON.stringify(v);
  return text === undefined ? undefined : JSON.parse(text);
}
