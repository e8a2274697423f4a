import type { Command } from 'commander';
import { introspectSchema } from '../../sql/introspect.ts';
import { renderSchema } from '../../sql/render.ts';
import { LIMITS, numberArg } from '../options.ts';

export function register(program: Command): void {
  program
    .command('schema')
    .description('Print the schema of a SQLite database as prompt-ready DDL with sample values.')
    .requiredOption('--db <path>', 'SQLite database file')
    .option('--json', 'print the full DbSchema (columns, keys, row counts, column statistics) as JSON')
    .option('--max-chars <n>', 'trim the text to at most this many characters', numberArg('--max-chars', { min: 1, max: LIMITS.chars }))
    .option('--samples <n>', 'sample values per column', numberArg('--samples', { min: 0, max: 100 }), 3)
    .action((opts: { db: string; json?: boolean; maxChars?: number; samples: number }) => {
      const schema = introspectSchema(opts.db, { samples: opts.samples });
      if (opts.json) {
        const replacer = (_k: string, v: unknown) => (typeof v === 'bigint' ? v.toString() : v);
        process.stdout.write(`${JSON.stringify(schema, replacer, 2)}\n`);
        return;
      }
      process.stdout.write(`${renderSchema(schema, { maxChars: opts.maxChars, samples: opts.samples })}\n`);
    });
}
