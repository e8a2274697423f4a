// Issue 59: the memory the README's "without any training" path builds is the one the bench measures and the
// quickstart trains beside: one recipe (src/factory/memory-recipe.ts), the same file on the bundled database.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { agro, MUSIC, tempDir } from '../adversarial/support.ts';
import { readmeMemoryArgs } from '../../bench/human.ts';
import { quickstartConfigSchema } from '../../src/pipeline/quickstart.ts';
import { MEMORY_RECIPE } from '../../src/factory/memory-recipe.ts';
import { readMemory } from '../../src/memory/legacy.ts';
import { Command } from 'commander';
import { register as registerSynth } from '../../src/cli/commands/synth.ts';

const tmp = tempDir();
after(() => tmp.cleanup());

/** The README's `agro synth …` of its "Using agro on your own database", as argv. */
function readmeSynth(): string[] {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const section = readme.slice(readme.indexOf('## Using agro on your own database'));
  const m = /`agro (synth --db [^\s`]+ --out [^\s`]+[^`]*)`/.exec(section);
  assert.ok(m, "the README's path names an agro synth command");
  return m[1].trim().split(/\s+/);
}

// The store's pairs and what they were verified on (the file's bytes hold a random generation id as well).
const hash = (file: string): string => createHash('sha256').update(JSON.stringify(readMemory(file))).digest('hex');

test("the README's synth, the bench's and the quickstart's recipe build the same memory file on the bundled database", { timeout: 180_000 }, () => {
  const readme = readmeSynth();
  // The README's command with its paths swapped for ours is the bench's (which adds only --json).
  const flags = (args: string[]): string[] => args.filter((a, i) => a !== '--json' && args[i - 1] !== '--db' && args[i - 1] !== '--out');
  assert.deepEqual(flags(readme), flags(readmeMemoryArgs('x', 'y')));
  const cfg = quickstartConfigSchema.parse({});
  assert.deepEqual({ pairs: cfg.pairs, phrasings: cfg.phrasings, variants: cfg.variants }, MEMORY_RECIPE);
  // The README's command names no --n: synth's defaults are the recipe (held here on the registered options, as
  // commander hands them to the command), so both commands below, given the same smaller --n, show what the
  // default-sized ones would: the same memory. 300 pairs take seconds where the recipe's 2,400 took a minute each.
  const program = new Command();
  registerSynth(program);
  const synth = program.commands.find((c) => c.name() === 'synth')!;
  const defaultOf = (flag: string): unknown => synth.options.find((o) => o.long === flag)?.defaultValue;
  assert.deepEqual({ pairs: defaultOf('--n'), phrasings: defaultOf('--phrasings'), variants: defaultOf('--variants') }, { pairs: String(MEMORY_RECIPE.pairs), phrasings: String(MEMORY_RECIPE.phrasings), variants: String(MEMORY_RECIPE.variants) });
  const n = ['--n', '300'];
  const a = join(tmp.dir, 'readme');
  const b = join(tmp.dir, 'recipe');
  const ra = agro([...readmeMemoryArgs(MUSIC, a), ...n], { timeoutMs: 120_000 });
  assert.equal(ra.status, 0, ra.stderr);
  const rb = agro(['synth', '--db', MUSIC, '--out', b, ...n, '--phrasings', String(cfg.phrasings), '--variants', String(cfg.variants), '--json'], { timeoutMs: 120_000 });
  assert.equal(rb.status, 0, rb.stderr);
  assert.ok(readMemory(join(a, 'memory.db')).entries.length >= 100, 'a memory of some size');
  assert.equal(hash(join(a, 'memory.db')), hash(join(b, 'memory.db')));
});
