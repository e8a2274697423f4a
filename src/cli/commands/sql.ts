import type { Command } from 'commander';
import { AgroError } from '../../errors.ts';
import { LIMITS, addPrivilegedRoleOption, numberArg, timeoutArg } from '../options.ts';
import { createExecutor } from '../../sql/executor.ts';
import { EXEC_DEFAULTS } from '../../sql/pool.ts';
import { EXEC_ERROR_KIND, type ExecResult, type Row, type SqlValue } from '../../sql/types.ts';
import { printOut } from '../print.ts';

function cellText(v: SqlValue, width: number): string {
  let s: string;
  if (v === null) s = 'NULL';
  else if (v instanceof Uint8Array) s = `<blob ${v.byteLength} bytes>`;
  else s = String(v).replace(/[\r\n\t]+/g, ' ');
  return s.length > width ? `${s.slice(0, width - 1)}…` : s;
}

/** An aligned text table; numbers right-aligned, every cell cut to 40 characters. */
export function formatTable(columns: string[], rows: Row[]): string {
  const cells = rows.map((r) => r.map((v) => cellText(v, 40)));
  const widths = columns.map((c, i) => Math.max(Math.min(c.length, 40), ...cells.map((r) => r[i].length)));
  const numeric = columns.map((_, i) => rows.length > 0 && rows.every((r) => r[i] === null || typeof r[i] === 'number' || typeof r[i] === 'bigint'));
  const line = (vals: string[]) => vals.map((v, i) => (numeric[i] ? v.padStart(widths[i]) : v.padEnd(widths[i]))).join(' | ').trimEnd();
  return [line(columns.map((c) => cellText(c, 40))), widths.map((w) => '-'.repeat(w)).join('-+-'), ...cells.map(line)].join('\n');
}

function jsonSafe(v: SqlValue): unknown {
  if (typeof v === 'bigint') return v.toString();
  if (v instanceof Uint8Array) return { blob: Buffer.from(v).toString('base64') };
  return v;
}

/** Why a result was cut, naming the cap that cut it and the flag that raises it. */
export function truncationNote(r: Extract<ExecResult, { ok: true }>, maxBytes: number): string {
  if (!r.truncated) return '';
  if (r.truncatedBy === 'bytes') return ` (truncated: the result passed the ${formatBytes(maxBytes)} cap on result bytes, counted as UTF-8; raise --max-bytes to see more)`;
  return ' (truncated: the result has more; raise --max-rows to see them)';
}

function formatBytes(n: number): string {
  if (n >= 2 ** 20 && n % 2 ** 20 === 0) return `${n / 2 ** 20} MiB`;
  if (n >= 1024 && n % 1024 === 0) return `${n / 1024} KiB`;
  return `${n}-byte`;
}

export function register(program: Command): void {
  const cmd = program
    .command('sql')
    .description('Run one read-only query against a SQLite database or a PostgreSQL server (sandboxed: time limit, row and byte caps).')
    .argument('<sql>', 'a single SELECT / WITH / VALUES statement (one that starts with "-", such as a -- comment, goes after --)')
    .usage('[options] [--] <sql>')
    .addHelpText('after', '\nA query that starts with "-" (a -- comment) goes after --:\n  agro sql --db music.sqlite -- $\'-- top artists\\nSELECT name FROM artists LIMIT 5\'')
    .requiredOption('--db <path|url>', 'SQLite database file or postgres:// URL')
    .option('--json', 'print {columns, rows, truncated, elapsedMs} as JSON (blobs as {blob: base64})')
    .option('--timeout <ms>', 'wall-clock limit in milliseconds', timeoutArg(), 5000)
    .option('--max-rows <n>', 'rows kept before the result is cut', numberArg('--max-rows', { min: 0, max: LIMITS.rows }), 10_000)
    .option('--max-bytes <n>', 'bytes of cell data (text as UTF-8) kept before the result is cut', numberArg('--max-bytes', { min: 0, max: LIMITS.resultBytes }), EXEC_DEFAULTS.maxBytes);
  addPrivilegedRoleOption(cmd)
    .action(async (query: string, opts: { db: string; json?: boolean; timeout: number; maxRows: number; maxBytes: number; allowPrivilegedRole?: boolean }) => {
      const pool = createExecutor({ size: 1, allowPrivilegedRole: opts.allowPrivilegedRole });
      try {
        const r = await pool.execute(opts.db, query, { timeoutMs: opts.timeout, maxRows: opts.maxRows, maxBytes: opts.maxBytes });
        if (!r.ok) throw new AgroError(EXEC_ERROR_KIND[r.error], r.message);
        if (opts.json) {
          const out = { columns: r.columns, rows: r.rows.map((row) => row.map(jsonSafe)), truncated: r.truncated, ...(r.truncatedBy ? { truncatedBy: r.truncatedBy } : {}), elapsedMs: Math.round(r.elapsedMs * 10) / 10 };
          process.stdout.write(`${JSON.stringify(out)}\n`);
          return;
        }
        const n = r.rows.length;
        const note = truncationNote(r, opts.maxBytes);
        printOut(`${formatTable(r.columns, r.rows)}\n${n} row${n === 1 ? '' : 's'}${note} in ${r.elapsedMs.toFixed(1)} ms\n`);
      } finally {
        await pool.close();
      }
    });
}
