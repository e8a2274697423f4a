/**
 * A pure function of one string, remembered: the factory asks for the same names' words, singulars and plurals
 * hundreds of thousands of times per run. Only for functions whose answer is a string or other immutable value
 * and depends on nothing but the argument. At most `max` answers are kept; past that the memory starts over.
 */
export function memoized<R>(fn: (s: string) => R, max = 20_000): (s: string) => R {
  const memo = new Map<string, R>();
  return (s: string): R => {
    let r = memo.get(s);
    if (r === undefined && !memo.has(s)) {
      r = fn(s);
      if (memo.size >= max) memo.clear();
      memo.set(s, r);
    }
    return r as R;
  };
}
