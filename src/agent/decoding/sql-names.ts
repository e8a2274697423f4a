/**
 * Constrained decoding for the SQL agent (PICARD's idea, at the level of words rather than a full
 * parser): inside a `<sql>` or `<answer>` block, every bare word the model writes must fit where it
 * stands. A small model that has read thousands of schemas still writes names it remembers instead of
 * the ones in its prompt (`tbl_publication` for `publication`); such a query can never run, so its
 * tokens are refused as they are drawn and the row draws again from the rest of its distribution
 * (generate.ts's drawAllowed), which leaves the model's own ranking of the names that do exist.
 *
 * Where a word stands decides what it may be:
 *   - right after FROM or JOIN: a table of the database;
 *   - right after a dot: a column of the database;
 *   - before a dot: a table, an alias declared with AS, or T1, T2, … (a query often qualifies a column
 *     with an alias its FROM declares later);
 *   - anywhere else: SQL's own words (keywords, functions, types), a table or column, a declared alias.
 * A name in double quotes, backticks or brackets is checked the same way where a table or column must
 * stand. A 'string' (and a "word" where a string may stand: SQLite reads "France" as one when no column has
 * that name) must be copied from the conversation or from the text the database stores (sql-literals.ts),
 * when the policy hands the filter both; the first argument of a date or format function ('%Y', 'now') is
 * free. Not checked: text outside the blocks (the think block is free), numbers, and the word after AS (an
 * alias being declared). Words compare case-insensitively, literals exactly. There is no other loophole:
 * every escape is one the model finds (`FROM tb20`, `FROM "match"`, half a UTF-8 character where the
 * database has no such names). Every Spider train gold query passes (8,475 on their 143 databases but one,
 * which names a table its database lacks: test/agent/decoding/sql-names.test.ts).
 */
import type { TokenFilter } from '../../model/generate.ts';
import type { Tokenizer } from '../../model/tokenizer.ts';
import { SQL_KEYWORDS, WORD_PART, WORD_START } from '../../sql/lexer.ts';
import type { DbSchema } from '../../sql/types.ts';
import { AGENT_SPECIAL_TOKENS, TAGS } from '../protocol.ts';
import { literalAllowed, StoredLiterals } from './sql-literals.ts';
import type { ChatMessage, SchemaNames } from '../types.ts';

/**
 * Functions, type names and PostgreSQL's words that are not SQLite keywords, lower case: words SQL may
 * hold that name nothing in a schema. Generous on purpose: a word missing here is a query refused.
 */
const SQL_FUNCTION_WORDS =
  'count sum avg min max total group_concat string_agg array_agg abs round ceil ceiling floor length ' +
  'char_length lower upper substr substring trim ltrim rtrim replace instr position coalesce ifnull nullif ' +
  'iif typeof strftime date time datetime julianday unixepoch now printf format random hex quote char ' +
  'concat concat_ws split_part greatest least mod power sqrt sign ln log exp cast extract date_trunc ' +
  'date_part to_char to_date age interval epoch year month day hour minute second dow doy week quarter ' +
  'ilike similar any some lag lead row_number rank dense_rank ntile first_value last_value percent_rank ' +
  'cume_dist integer int real text numeric float double precision varchar boolean bigint smallint decimal ' +
  'timestamp unbounded preceding following current top both leading trailing overlay placing within';

/**
 * SQLite keywords that only statements other than a query use (DDL, transactions, pragmas): a read-only
 * query never holds them, and a model short of a name reaches for them (`SELECT foreign FROM customers`).
 */
const NOT_IN_QUERIES = new Set(
  ('abort action add after alter analyze attach autoincrement before begin cascade check commit conflict ' +
    'constraint create database default deferrable deferred delete detach drop each exclusive explain fail ' +
    'foreign ignore immediate index indexed initially insert instead key no nothing plan pragma primary query ' +
    'raise references reindex release rename restrict rollback savepoint set table temp temporary ' +
    'transaction trigger update vacuum view virtual without').split(' '),
);

/** Every word a query may hold that names nothing in a schema: SQL's keywords a query uses, functions, types, date parts. */
export const SQL_WORDS: readonly string[] = [...[...SQL_KEYWORDS].filter((w) => !NOT_IN_QUERIES.has(w)), ...SQL_FUNCTION_WORDS.split(' ')];

/**
 * Functions whose arguments hold a FROM of their own (PostgreSQL's `EXTRACT(YEAR FROM d)`, `SUBSTRING(s FROM 1
 * FOR 3)`, `TRIM(BOTH ' ' FROM s)`, `OVERLAY(s PLACING 'x' FROM 2)`): inside their parentheses FROM is no clause,
 * and a column or a number follows it.
 */
const FROM_ARGUMENT = new Set(['extract', 'substring', 'trim', 'overlay']);
/** What a FROM inside such a function's parentheses is remembered as: a word no query holds, so no table slot follows. */
const ARGUMENT_FROM = '\u0000from';

/** Functions whose first argument is a format or a date word, not a stored value: `strftime('%Y', d)`, `date('now')`. */
const FORMAT_FUNCTIONS = new Set(['strftime', 'date', 'time', 'datetime', 'julianday', 'unixepoch', 'printf', 'format', 'to_char', 'to_date', 'to_timestamp', 'date_trunc', 'date_part', 'interval']);

/** Operators whose right side is a pattern, not a value. */
const PATTERN_OPERATORS = new Set(['like', 'glob', 'ilike']);

/** The alias a query may use before declaring it: T1, T2, … (lower case here). */
const NUMBERED_ALIAS = /^t\d+$/;

/**
 * A database's tables and columns, as constrained decoding reads them, and `read` for the text it stores
 * (src/agent/decoding/stored-text.ts): called once, when a filter first needs it.
 */
export function schemaNames(schema: DbSchema, read?: () => readonly string[] | null): SchemaNames {
  let text: readonly string[] | null | undefined;
  const tables = schema.tables.map((t) => ({ name: t.name, columns: t.columns.map((c) => c.name) }));
  return { tables, ...(read ? { storedText: () => (text === undefined ? (text = read()) : text) } : {}) };
}

/** Per tokenizer: each id's text, the ids that open a SQL-bearing block (with the id that closes it), and every added token. */
interface TokenTable {
  texts: string[];
  opens: Map<number, number>;
  added: Set<number>;
}
const tokenTables = new WeakMap<Tokenizer, TokenTable | null>();

function tokenTable(tok: Tokenizer): TokenTable | null {
  let t = tokenTables.get(tok);
  if (t === undefined) {
    const tags = [TAGS.sql, TAGS.answer];
    // A tokenizer without the protocol's tags as tokens cannot say where a block starts: no filter.
    if (!tags.every((g) => tok.hasToken(g.open) && tok.hasToken(g.close))) t = null;
    else
      t = {
        texts: Array.from({ length: tok.vocabSize }, (_, id) => tok.decode([id])),
        opens: new Map(tags.map((g) => [tok.tokenId(g.open), tok.tokenId(g.close)])),
        added: new Set(AGENT_SPECIAL_TOKENS.filter((t) => tok.hasToken(t)).map((t) => tok.tokenId(t))),
      };
    tokenTables.set(tok, t);
  }
  return t;
}

/** What the word being written may be, from what precedes it. */
type Slot = 'table' | 'column' | 'any';

/** Where a row is in its text. */
interface State {
  inSql: boolean;
  /** The token that closes the block (-1 outside one). */
  close: number;
  /** The closing quote being waited for, or ''. */
  quote: string;
  /** The bare word being written, lower case. */
  word: string;
  /** The word is not checked (a number, an alias after AS, half a character). */
  free: boolean;
  slot: Slot;
  /** The last two whole words, lower case, and the characters written since the last. */
  prev: string;
  prev2: string;
  since: string;
  /** The word before the dot, when the word being written follows one. */
  qual: string;
  /** The open parentheses, innermost last: 'f' for a FROM_ARGUMENT function's, 'p' for any other. */
  parens: string;
  /** The quoted text being written when it must be a copied literal (or, in double quotes, a name); else null. */
  lit: string | null;
  /** The quoted text is a LIKE/GLOB pattern (checked piece by piece, never as a whole value). */
  pattern: boolean;
}

const OUTSIDE: State = { inSql: false, close: -1, quote: '', word: '', free: false, slot: 'any', prev: '', prev2: '', since: '', qual: '', parens: '', lit: null, pattern: false };
const CLOSING: Record<string, string> = { "'": "'", '"': '"', '`': '`', '[': ']' };

/** A set of words and every prefix of them. */
class Words {
  readonly all: Set<string>;
  readonly prefixes = new Set<string>();
  constructor(words: Iterable<string>) {
    this.all = new Set([...words].map((w) => w.toLowerCase()));
    for (const w of this.all) for (let i = 1; i <= w.length; i++) this.prefixes.add(w.slice(0, i));
  }
}

/** Aliases declared so far, lower case, each with its table (lower case; '' when not a table's). */
type Aliases = Map<string, string>;

/** What may stand where, for one database. */
class Grammar {
  private readonly tables: Words;
  private readonly columns: Words;
  private readonly columnsOf = new Map<string, Words>();
  private readonly sql = new Words(SQL_WORDS);
  /** Some name holds a character beyond ASCII (which byte-level tokens may split). */
  readonly nonAscii: boolean;
  constructor(names: SchemaNames) {
    this.tables = new Words(names.tables.map((t) => t.name));
    this.columns = new Words(names.tables.flatMap((t) => t.columns));
    for (const t of names.tables) this.columnsOf.set(t.name.toLowerCase(), new Words(t.columns));
    this.nonAscii = names.tables.some((t) => [t.name, ...t.columns].some((n) => /[^ -~]/.test(n)));
  }
  isTable(w: string): boolean {
    return this.tables.all.has(w);
  }
  /** The columns a word after `qual.` may be: its table's where `qual` names one (or aliases it), else any. */
  private columnsAfter(qual: string, aliases: Aliases): Words {
    return this.columnsOf.get(aliases.get(qual) || qual) ?? this.columns;
  }
  /** `w` may end here, followed by `next` ('' at the end of the block). */
  whole(w: string, s: Pick<State, 'slot' | 'qual'>, next: string, aliases: Aliases): boolean {
    if (s.slot === 'table') return this.tables.all.has(w);
    if (s.slot === 'column') return this.columnsAfter(s.qual, aliases).all.has(w);
    if (next === '.') return this.tables.all.has(w) || aliases.has(w) || NUMBERED_ALIAS.test(w);
    return this.sql.all.has(w) || this.columns.all.has(w) || this.tables.all.has(w) || aliases.has(w);
  }
  /** A word still being written could become one allowed here. */
  start(w: string, s: Pick<State, 'slot' | 'qual'>, aliases: Aliases): boolean {
    if (s.slot === 'table') return this.tables.prefixes.has(w);
    if (s.slot === 'column') return this.columnsAfter(s.qual, aliases).prefixes.has(w);
    if (this.sql.prefixes.has(w) || this.columns.prefixes.has(w) || this.tables.prefixes.has(w) || /^t\d*$/.test(w)) return true;
    for (const a of aliases.keys()) if (a.startsWith(w)) return true;
    return false;
  }
}

/** What a word starting here may be: a column after a dot, a table right after FROM or JOIN. */
function slotAt(prev: string, since: string): Slot {
  if (since === '.') return 'column';
  return (prev === 'from' || prev === 'join') && since.trim() === '' ? 'table' : 'any';
}

/**
 * Feed `text` to a copy of `s`; null when `check` is on and it writes a word that cannot stand where it
 * does. A word declared after AS is added to `record` when given. A name in double quotes, backticks or
 * brackets is checked like a bare word where a table or column must stand; elsewhere it may be a string
 * (SQLite reads "France" as one when no column has that name), so it is free there.
 */
function feed(s: State, text: string, g: Grammar, aliases: Aliases, check: boolean, lits: Literals, record?: Aliases): State | null {
  let { quote, word, free, slot, prev, prev2, since, qual, parens, lit, pattern } = s;
  const close = s.close;
  const here = (): Pick<State, 'slot' | 'qual'> => ({ slot, qual });
  const endWord = (next: string): boolean => {
    if (check && !free && !g.whole(word, here(), next, aliases)) return false;
    // `t AS x` names table t's rows x.
    if (prev === 'as') record?.set(word, g.isTable(prev2) ? prev2 : '');
    prev2 = prev;
    prev = word === 'from' && parens.endsWith('f') ? ARGUMENT_FROM : word;
    since = '';
    word = '';
    free = false;
    return true;
  };
  const startWord = (): void => {
    slot = slotAt(prev, since);
    if (slot !== 'column') qual = '';
  };
  for (const c of text) {
    if (quote === "'") {
      if (c === quote) {
        quote = '';
        if (check && lit !== null && !lits?.(lit, true, pattern)) return null;
        lit = null;
      } else if (lit !== null) lit += c;
      since += c;
      continue;
    }
    if (quote) {
      if (c === quote) {
        quote = '';
        // A double-quoted word where a string may stand: a name, or else a copied literal.
        if (check && lit !== null && !g.whole(word, here(), '', aliases) && !lits?.(lit, true, pattern)) return null;
        lit = null;
        if (!endWord('')) return null;
        continue;
      }
      word += c.toLowerCase();
      if (lit !== null) lit += c;
      if (check && !free && !g.start(word, here(), aliases)) return null;
      continue;
    }
    // Right after a qualifying dot comes the column: a name (bare or quoted) or `*`, never a second dot.
    if (check && word === '' && since === '.' && !WORD_START.test(c) && !CLOSING[c] && c !== '*') return null;
    const isDigit = c >= '0' && c <= '9';
    if (word === '' ? WORD_START.test(c) || isDigit : WORD_PART.test(c) || (c === '.' && free && /^[0-9]/.test(word))) {
      if (word === '') {
        startWord();
        // A number is free, except where a name must stand.
        if (check && isDigit && slot !== 'any') return null;
        free = isDigit || prev === 'as';
      }
      // Half of a character split across byte tokens cannot be judged, and where the database has no
      // name beyond ASCII it cannot be part of one.
      if (c === '\ufffd' && g.nonAscii) free = true;
      word += c.toLowerCase();
      continue;
    }
    if (word !== '') {
      const w = word;
      if (!endWord(c)) return null;
      if (c === '.') qual = w;
    }
    // Right after FROM or JOIN comes a name, a quoted name or a subquery.
    if (check && c.trim() !== '' && c !== '(' && c !== "'" && !CLOSING[c] && slotAt(prev, since) === 'table') return null;
    if (c === '(') parens += FROM_ARGUMENT.has(prev) && since.trim() === '' ? 'f' : 'p';
    else if (c === ')') parens = parens.slice(0, -1);
    if (CLOSING[c]) {
      quote = CLOSING[c];
      pattern = PATTERN_OPERATORS.has(prev) && since.trim() === '';
      if (c === "'") lit = lits && !(FORMAT_FUNCTIONS.has(prev) && since.trim() === '(') ? '' : null;
      else {
        startWord();
        free = slot === 'any' || prev === 'as';
        lit = lits && c === '"' && slot === 'any' && prev !== 'as' ? '' : null;
      }
    }
    since += c;
  }
  if (check && word !== '' && !quote && !free && !g.start(word, here(), aliases)) return null;
  if (check && quote && lit && !lits?.(lit, false, pattern) && !(quote === '"' && g.start(word, here(), aliases))) return null;
  return { inSql: true, close, quote, word, free, slot, prev, prev2, since, qual, parens, lit, pattern };
}

/** Whether a literal (or the part written so far) is copied from the conversation or the database (sql-literals.ts); null: not checked. */
type Literals = ((body: string, closed: boolean, pattern: boolean) => boolean) | null;

/**
 * Makes the filter for one row: `conversation` is what the row continues (every message so far), which string
 * literals may be copied from besides the database's stored text. Without it (or without the stored text)
 * literals are free.
 */
export type NameFilterFactory = (conversation?: readonly ChatMessage[]) => TokenFilter;

/** One factory per (tokenizer, database): a policy and the RL rollouts hand every episode of a database the same names. */
const factories = new WeakMap<Tokenizer, WeakMap<SchemaNames, NameFilterFactory | undefined>>();

/**
 * A filter factory for one database: each call makes a fresh filter for one row. `undefined` when the
 * tokenizer has no protocol tags to find the blocks by. Built once per tokenizer and names object.
 */
export function sqlNameFilter(tokenizer: Tokenizer, names: SchemaNames): NameFilterFactory | undefined {
  let byNames = factories.get(tokenizer);
  if (!byNames) factories.set(tokenizer, (byNames = new WeakMap()));
  if (!byNames.has(names)) byNames.set(names, buildNameFilter(tokenizer, names));
  return byNames.get(names);
}

function buildNameFilter(tokenizer: Tokenizer, names: SchemaNames): NameFilterFactory | undefined {
  const table = tokenTable(tokenizer);
  if (!table) return undefined;
  const g = new Grammar(names);
  const values = names.storedText?.();
  const stored = values ? new StoredLiterals(values) : null;
  return (conversation) => {
    const context = conversation?.map((m) => m.content).join('\n');
    const lits: Literals = stored && context !== undefined ? (body, closed, pattern) => literalAllowed(body, stored, context, closed, pattern) : null;
    let state: State = OUTSIDE;
    const aliases: Aliases = new Map();
    const next = (token: number, check: boolean, record?: Aliases): State | null => {
      const s = state;
      if (!s.inSql) {
        const close = table.opens.get(token);
        return close === undefined ? s : { ...OUTSIDE, inSql: true, close };
      }
      if (token === s.close) {
        // A block may not end inside quotes, nor in the middle of a word that cannot stand there.
        if (check && (s.quote !== '' || (s.word !== '' && !s.free && !g.whole(s.word, s, '', aliases)))) return null;
        return OUTSIDE;
      }
      // Another tag or control token inside the block would break the turn's protocol.
      if (table.added.has(token)) return check ? null : OUTSIDE;
      return feed(s, table.texts[token], g, aliases, check, lits, record);
    };
    return {
      allows: (token) => next(token, true) !== null,
      // The model's own choice stands where nothing near the top was allowed: follow it unchecked.
      push: (token) => void (state = next(token, false, aliases) as State),
    };
  };
}
