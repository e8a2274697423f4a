import type { Command } from 'commander';
import { AgroError } from '../../errors.ts';
import { assertReaderRoleFit, copySqliteToPostgres, runAdminSql } from '../../sql/pg-copy.ts';
import { sandboxRoleSql } from '../../sql/pg-setup.ts';
import { dropVariantSchemas } from '../../sql/pg-variants.ts';
import { isPostgresUrl, redactUrl } from '../../sql/postgres.ts';
import { printOut } from '../print.ts';

export function register(program: Command): void {
  const db = program.command('db').description('Move databases between engines, and drop the variant databases a server holds.');
  db.command('copy')
    .description('Load a SQLite database into PostgreSQL (types mapped, primary and foreign keys kept), creating the database when missing.')
    .argument('<sqlite>', 'SQLite database file')
    .argument('<url>', 'postgres://user:password@host:port/database (a role that may create tables there)')
    .option('--replace', 'drop tables of the same names first')
    .option('--keep-case', "keep names' case (default: lower case, as PostgreSQL folds unquoted names)")
    .option('--reader <role>', 'also create or reset a read-only role for agro (password from AGRO_READER_PASSWORD)')
    .action(async (sqlite: string, url: string, opts: { replace?: boolean; keepCase?: boolean; reader?: string }) => {
      if (!isPostgresUrl(url)) throw new AgroError('usage', `not a postgres:// URL: ${url}`);
      const password = process.env.AGRO_READER_PASSWORD;
      if (opts.reader && !password) throw new AgroError('usage', '--reader needs the role\'s password in AGRO_READER_PASSWORD');
      // Before the copy: a role that cannot be the reader stops it with nothing changed.
      if (opts.reader) await assertReaderRoleFit(url, opts.reader);
      const r = await copySqliteToPostgres(sqlite, url, { replace: opts.replace, keepCase: opts.keepCase });
      for (const t of r.tables) printOut(`${t.name}: ${t.rows} rows (${t.columns.map((c) => `${c.name} ${c.type}`).join(', ')})\n`);
      for (const s of r.skipped) printOut(`skipped ${s}\n`);
      if (opts.reader && password) {
        const database = decodeURIComponent(new URL(url).pathname.replace(/^\//, ''));
        await runAdminSql(url, sandboxRoleSql({ role: opts.reader, password, database }));
        printOut(`role ${opts.reader} may read ${database} (read-only)\n`);
      }
      printOut(`copied ${r.tables.length} tables into ${redactUrl(url)} in ${(r.elapsedMs / 1000).toFixed(1)} s\n`);
    });
  db.command('drop-variants')
    .description('Drop the variant databases `agro synth` made on a server (every agro_variant_* schema of the database).')
    .argument('<url>', 'postgres://user:password@host:port/database (the role that made them, or the owner)')
    .action(async (url: string) => {
      if (!isPostgresUrl(url)) throw new AgroError('usage', `not a postgres:// URL: ${url}`);
      const dropped = await dropVariantSchemas(url);
      printOut(`dropped ${dropped.length} variant schema${dropped.length === 1 ? '' : 's'} from ${redactUrl(url)}${dropped.length ? `: ${dropped.join(', ')}` : ''}\n`);
    });
}
