// `npm run bench -- <name> [args]` runs bench/<name>.ts, which exports `run(args)`.
// Benchmarks print their own figures side by side with a reference measured in the same run.
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const dir = fileURLToPath(new URL('.', import.meta.url));
const names = readdirSync(dir)
  .filter((f) => f.endsWith('.ts') && f !== 'index.ts' && !f.startsWith('_'))
  .map((f) => f.slice(0, -3))
  .sort();

const [name, ...args] = process.argv.slice(2);
const chosen = name ? [name] : names;
for (const n of chosen) {
  if (!names.includes(n)) {
    console.error(`bench: unknown benchmark '${n}' (have: ${names.join(', ') || 'none'})`);
    process.exit(2);
  }
  const mod = (await import(`./${n}.ts`)) as { run: (args: string[]) => Promise<void> };
  console.log(`\n=== bench ${n} ===`);
  await mod.run(args);
}
