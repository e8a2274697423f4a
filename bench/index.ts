// `npm run bench -- <name> [args]` runs bench/<name>.ts, which exports `run(args)`.
// `npm run bench -- <name> --help` (or -h) prints that bench's usage and exits 0 without importing it: the
// usage is the bench's opening comment (its first line is `npm run bench -- <name> [flags]`), the one home
// of its flags and defaults, so help never loads a model or starts a run.
// Benchmarks print their own figures side by side with a reference measured in the same run.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const dir = fileURLToPath(new URL('.', import.meta.url));
const names = readdirSync(dir)
  .filter((f) => f.endsWith('.ts') && f !== 'index.ts' && !f.startsWith('_'))
  .map((f) => f.slice(0, -3))
  .sort();

/** The opening `//` comment block of a bench file (after any `/// <reference>`), without the slashes. */
function usageOf(file: string): string {
  const lines: string[] = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (line.startsWith('///')) continue;
    if (!line.startsWith('//')) break;
    lines.push(line.replace(/^\/\/ ?/, ''));
  }
  return lines.join('\n');
}

const isHelp = (a: string): boolean => a === '--help' || a === '-h';
const [name, ...args] = process.argv.slice(2);
if (name !== undefined && isHelp(name)) {
  console.log(`usage: npm run bench -- <name> [flags]   (npm run bench -- <name> --help for one bench's flags)\nbenchmarks: ${names.join(', ')}`);
  process.exit(0);
}
const chosen = name ? [name] : names;
for (const n of chosen) {
  if (!names.includes(n)) {
    console.error(`bench: unknown benchmark '${n}' (have: ${names.join(', ') || 'none'})`);
    process.exit(2);
  }
}
if (name !== undefined && args.some(isHelp)) {
  const usage = usageOf(join(dir, `${name}.ts`));
  if (!usage.includes(`npm run bench -- ${name}`)) {
    console.error(`bench: bench/${name}.ts does not open with its usage (\`npm run bench -- ${name} [flags]\`)`);
    process.exit(2);
  }
  console.log(usage.startsWith('`') ? `usage: ${usage}` : usage);
  process.exit(0);
}
for (const n of chosen) {
  const mod = (await import(`./${n}.ts`)) as { run: (args: string[]) => Promise<void> };
  console.log(`\n=== bench ${n} ===`);
  await mod.run(args);
}
