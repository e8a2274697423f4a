import type { Command } from 'commander';
import { introspectDatabase } from '../../sql/executor.ts';
import { AgroError } from '../../errors.ts';
import { renderSchema } from '../../prompt/render.ts';
import { LIMITS, numberArg } from '../options.ts';
import { printOut } from '../print.ts';

export function register(program: Command): void {
  program
    .command('schema')
    .description('Print the schema of a SQLite database or a PostgreSQL database as prompt-ready DDL with sample values.')
    .requiredOption('--db <path|url>', 'SQLite database file or postgres:// URL')
    .option('--json', 'print the full DbSchema (columns, keys, row counts, column statistics) as JSON')
    .option('--max-chars <n>', 'trim the text to at most this many characters', numberArg('--max-chars', { min: 1, max: LIMITS.chars }))
    .option('--samples <n>', 'sample values per column', numberArg('--samples', { min: 0, max: 100 }), 3)
    .action(async (opts: { db: string; json?: boolean; maxChars?: number; samples: number }) => {
      const schema = await introspectDatabase(opts.db, { samples: opts.samples });
      // A 0-byte file opens as an empty database: nothing to print is invalid input, as for synth.
      if (schema.tables.length === 0) throw new AgroError('invalid_input', `${opts.db} has no tables or views`);
      if (opts.json) {
        const replacer = (_k: string, v: unknown) => (typeof v === 'bigint' ? v.toString() : v);
        process.stdout.write(`${JSON.stringify(schema, replacer, 2)}\n`);
        return;
      }
      printOut(`${renderSchema(schema, { maxChars: opts.maxChars, samples: opts.samples })}\n`);
    });
}
