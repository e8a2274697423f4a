/** Small deterministic string hashes (no crypto needed: these spread tokens over buckets and seed random streams). */

/**
 * fnv1a(text, seed) for every seed from 1 to out.length at once, into out: one pass over the text (a MinHash
 * signature asks for all of them of every shingle).
 */
export function fnv1aSeeds(text: string, out: Uint32Array): Uint32Array {
  const n = out.length;
  for (let i = 0; i < n; i++) out[i] = (0x811c9dc5 ^ Math.imul(i + 1, 0x9e3779b1)) >>> 0;
  for (let k = 0; k < text.length; k++) {
    const c = text.charCodeAt(k);
    for (let i = 0; i < n; i++) out[i] = Math.imul(out[i] ^ c, 0x01000193);
  }
  for (let i = 0; i < n; i++) {
    let h = out[i];
    h ^= h >>> 16;
    h = Math.imul(h, 0x85ebca6b) >>> 0;
    h ^= h >>> 13;
    h = Math.imul(h, 0xc2b2ae35) >>> 0;
    out[i] = (h ^ (h >>> 16)) >>> 0;
  }
  return out;
}

/** 32-bit FNV-1a over UTF-16 code units, with a seed mixed into the offset basis. */
export function fnv1a(text: string, seed = 0): number {
  let h = (0x811c9dc5 ^ Math.imul(seed, 0x9e3779b1)) >>> 0;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  // Final avalanche so nearby seeds give unrelated hashes (murmur3 fmix32).
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b) >>> 0;
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35) >>> 0;
  return (h ^ (h >>> 16)) >>> 0;
}
