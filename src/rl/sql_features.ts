/**
 * A light, tokenizer-based extraction of what a SQL query touches (tables, columns, literal values), for
 * partial-credit rewards. It is deliberately forgiving: it must say something useful about broken SQL too,
 * which is exactly what a full parser refuses to do.
 */

export interface SqlFeatures {
  tables: Set<string>;
  columns: Set<string>;
  values: Set<string>;
}

type Tok = { kind: 'ident' | 'word' | 'string' | 'number' | 'punct'; text: string };

const KEYWORDS = new Set(
  (
    'select from where join inner left right outer full cross natural on using and or not in is null like glob between ' +
    'group by order having limit offset as distinct all union except intersect case when then else end asc desc exists ' +
    'with recursive values cast collate escape true false nulls first last over partition rows range filter ' +
    'current_date current_time current_timestamp'
  ).split(' '),
);

/** Keywords after which a table name comes; commas keep the FROM list going. */
const TABLE_INTRO = new Set(['from', 'join']);
/** Keywords that end a FROM list. */
const FROM_END = new Set(['where', 'group', 'order', 'having', 'limit', 'union', 'except', 'intersect', 'on', 'using', 'window']);

export function tokenizeSql(sql: string): Tok[] {
  const out: Tok[] = [];
  let i = 0;
  while (i < sql.length) {
    const c = sql[i];
    if (/\s/.test(c)) {
      i++;
    } else if (c === "'") {
      let j = i + 1;
      let s = '';
      while (j < sql.length) {
        if (sql[j] === "'" && sql[j + 1] === "'") {
          s += "'";
          j += 2;
        } else if (sql[j] === "'") break;
        else s += sql[j++];
      }
      out.push({ kind: 'string', text: s });
      i = j + 1;
    } else if (c === '"' || c === '`' || c === '[') {
      const close = c === '[' ? ']' : c;
      const j = sql.indexOf(close, i + 1);
      const end = j < 0 ? sql.length : j;
      out.push({ kind: 'ident', text: sql.slice(i + 1, end) });
      i = end + 1;
    } else if (/[0-9]/.test(c) || (c === '.' && /[0-9]/.test(sql[i + 1] ?? ''))) {
      const m = /^[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?/.exec(sql.slice(i));
      const text = m ? m[0] : c;
      out.push({ kind: 'number', text });
      i += text.length;
    } else if (/[A-Za-z_]/.test(c)) {
      const m = /^[A-Za-z_][A-Za-z0-9_$]*/.exec(sql.slice(i));
      const text = m ? m[0] : c;
      out.push({ kind: KEYWORDS.has(text.toLowerCase()) ? 'word' : 'ident', text });
      i += text.length;
    } else {
      out.push({ kind: 'punct', text: c });
      i++;
    }
  }
  return out;
}

/** Numbers compare by value (1.0 = 1), strings by their lower-cased text, identifiers case-insensitively. */
function normNumber(text: string): string {
  const x = Number(text);
  return Number.isFinite(x) ? String(x) : text;
}

export function extractSqlFeatures(sql: string): SqlFeatures {
  const toks = tokenizeSql(sql);
  const tables = new Set<string>();
  const aliases = new Set<string>();
  const columns = new Set<string>();
  const values = new Set<string>();
  const lower = (t: Tok | undefined): string => (t ? t.text.toLowerCase() : '');
  let inFrom = false;
  let expectTable = false;
  for (let i = 0; i < toks.length; i++) {
    const t = toks[i];
    const w = lower(t);
    if (t.kind === 'string') values.add(w);
    else if (t.kind === 'number') values.add(normNumber(t.text));
    else if (t.kind === 'word') {
      if (TABLE_INTRO.has(w)) {
        inFrom = true;
        expectTable = true;
      } else if (FROM_END.has(w) || w === 'select') inFrom = false;
      if (w === 'as' && toks[i + 1]?.kind === 'ident') aliases.add(lower(toks[++i]));
    } else if (t.kind === 'punct') {
      if (t.text === ',' && inFrom) expectTable = true;
      if (t.text === '(') expectTable = false;
    } else if (t.kind === 'ident') {
      const next = toks[i + 1];
      if (expectTable) {
        tables.add(w);
        expectTable = false;
        // `FROM t x` or `JOIN t x`: x is an alias
        if (next?.kind === 'ident') aliases.add(lower(toks[++i]));
      } else if (next?.kind === 'punct' && next.text === '(') {
        // a function name
      } else if (next?.kind === 'punct' && next.text === '.') {
        // qualifier `t.`: the column comes next
      } else columns.add(w);
    }
  }
  for (const a of aliases) columns.delete(a);
  for (const tb of tables) columns.delete(tb);
  return { tables, columns, values };
}

/** F1 of two sets; both empty → null (nothing to compare). */
export function setF1(pred: Set<string>, gold: Set<string>): number | null {
  if (pred.size === 0 && gold.size === 0) return null;
  if (pred.size === 0 || gold.size === 0) return 0;
  let hit = 0;
  for (const x of pred) if (gold.has(x)) hit++;
  if (hit === 0) return 0;
  const p = hit / pred.size;
  const r = hit / gold.size;
  return (2 * p * r) / (p + r);
}
