/**
 * Cheap surface variants of an answer or an entity name, so a correct answer written another common
 * way still matches: numbers as digits and words, ISO dates spelled out, "Last, First" for people,
 * "&" and "and". Case and punctuation variants need no alias: normalization already covers them.
 */

const ONES = [
  'zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten',
  'eleven', 'twelve', 'thirteen', 'fourteen', 'fifteen', 'sixteen', 'seventeen', 'eighteen', 'nineteen',
];
const TENS = ['', '', 'twenty', 'thirty', 'forty', 'fifty', 'sixty', 'seventy', 'eighty', 'ninety'];
const MONTHS = [
  'January', 'February', 'March', 'April', 'May', 'June',
  'July', 'August', 'September', 'October', 'November', 'December',
];

/** English words for 0 ≤ n < 1,000,000 ("forty-two", "three hundred five"); undefined outside. */
export function numberToWords(n: number): string | undefined {
  if (!Number.isInteger(n) || n < 0 || n >= 1_000_000) return undefined;
  const under1000 = (x: number): string => {
    const parts: string[] = [];
    if (x >= 100) {
      parts.push(`${ONES[Math.floor(x / 100)]} hundred`);
      x %= 100;
    }
    if (x >= 20) parts.push(TENS[Math.floor(x / 10)] + (x % 10 ? `-${ONES[x % 10]}` : ''));
    else if (x > 0 || parts.length === 0) parts.push(ONES[x]);
    return parts.join(' ');
  };
  if (n < 1000) return under1000(n);
  const rest = n % 1000;
  return `${under1000(Math.floor(n / 1000))} thousand` + (rest ? ` ${under1000(rest)}` : '');
}

/** How a year is read aloud: 1999 → "nineteen ninety-nine", 1905 → "nineteen oh five", 2015 → "twenty fifteen". */
export function yearWords(n: number): string | undefined {
  if (!Number.isInteger(n) || n < 1100 || n > 2099 || (n >= 2000 && n < 2010)) return undefined;
  const hi = Math.floor(n / 100);
  const lo = n % 100;
  const tail = lo === 0 ? 'hundred' : lo < 10 ? `oh ${ONES[lo]}` : numberToWords(lo)!;
  return `${numberToWords(hi)} ${tail}`;
}

/** Variants of an answer value (the value itself first, then unique alternatives). */
export function answerAliases(value: string): string[] {
  const out = [value];
  const v = value.trim();
  if (/^-?\d+(\.\d+)?$/.test(v)) {
    const num = Number(v);
    if (Number.isInteger(num)) {
      const w = numberToWords(Math.abs(num));
      if (w) {
        const sign = num < 0 ? 'minus ' : '';
        out.push(sign + w);
        if (w.includes('-')) out.push(sign + w.replace(/-/g, ' '));
        const year = yearWords(num);
        if (year) out.push(year, year.replace(/-/g, ' '));
      }
    } else {
      // Money-like reals: "9.9" is also written "9.90".
      const fixed = num.toFixed(2);
      if (Number(fixed) === num) out.push(fixed);
    }
  }
  const iso = /^(\d{4})-(\d{2})-(\d{2})$/.exec(v);
  if (iso) {
    const month = MONTHS[Number(iso[2]) - 1];
    const day = Number(iso[3]);
    if (month && day >= 1 && day <= 31) out.push(`${month} ${day}, ${iso[1]}`, `${day} ${month} ${iso[1]}`);
  }
  if (v.includes('&')) out.push(v.replace(/\s*&\s*/g, ' and '));
  else if (/\band\b/.test(v)) out.push(v.replace(/\s+and\s+/g, ' & '));
  return [...new Set(out)];
}

/** Variants of an entity's title; people ("First Last") are also "Last, First". */
export function entityAliases(title: string, person: boolean): string[] {
  const out = answerAliases(title).slice(1);
  const words = title.trim().split(/\s+/);
  if (person && words.length === 2) out.push(`${words[1]}, ${words[0]}`);
  return [...new Set(out)].filter((a) => a !== title);
}
