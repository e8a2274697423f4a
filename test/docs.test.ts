// The user documentation (README.md, docs/*.md) against the repository and the CLI: links and named source files
// resolve, and every `agro …` command shown in a code block names a real subcommand and only flags its help lists.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { checkDocs, formatProblems, headingAnchors, parseHelp, programHelp, shownCommands } from './support/docs-check.ts';

const ROOT = resolve(import.meta.dirname, '..');
const help = programHelp();

test('every relative link and source path in README.md, CHANGELOG.md and docs/ resolves, and every agro command shown parses with the current CLI', async () => {
  const problems = await checkDocs(ROOT, help);
  assert.equal(formatProblems(problems), '');
});

test('a broken link, a missing anchor, a missing source file, an unknown flag and an unknown command are each reported', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'agro-docs-'));
  try {
    mkdirSync(join(dir, 'docs'));
    writeFileSync(join(dir, 'docs', 'page.md'), '# A page\n\n## Real heading\n');
    writeFileSync(
      join(dir, 'README.md'),
      [
        '# Fixture',
        '',
        'Good: [page](docs/page.md), [heading](docs/page.md#real-heading), [here](#fixture), [web](https://example.org/x.md).',
        'Bad: [gone](docs/missing.md) and [anchor](docs/page.md#no-such-heading).',
        'Not a link: `[code](docs/absent.md)`. Paths: `docs/page.md`, `src/gone.ts`, `test/<module>/`.',
        '',
        '```sh',
        'agro sql --db x.sqlite --json "SELECT 1"   # --not-a-flag in a comment',
        'agro sql --db x.sqlite --no-such-flag "SELECT 1"',
        'npx agro frobnicate --db x.sqlite',
        'agro export gguf ck out.gguf --no-such-gguf-flag',
        'agro train --data d.jsonl \\',
        '  --init runs/sft --bogus-continued 3',
        '```',
        '',
        '```python',
        'agro sql --not-checked-in-python',
        '```',
      ].join('\n'),
    );
    const problems = await checkDocs(dir, (path) => help(path));
    const text = formatProblems(problems);
    assert.deepEqual(
      problems.map((p) => `${p.file}:${p.line}: ${p.message}`),
      [
        'README.md:4: broken link: docs/missing.md (no docs/missing.md)',
        'README.md:4: broken link: docs/page.md#no-such-heading (no heading #no-such-heading in docs/page.md)',
        'README.md:5: no such file: src/gone.ts',
        'README.md:9: agro sql: unknown flag --no-such-flag',
        'README.md:10: agro frobnicate: no such command',
        'README.md:11: agro export gguf: unknown flag --no-such-gguf-flag',
        'README.md:12: agro train: unknown flag --bogus-continued',
      ],
      text,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('anchors follow GitHub: punctuation dropped, each space a hyphen, repeats numbered', () => {
  const anchors = headingAnchors('# Faster rollouts with llama.cpp (`--engine llama.cpp`)\n## Notes\n## Notes\n```sh\n# not a heading\n```\n');
  assert.deepEqual([...anchors], ['faster-rollouts-with-llamacpp---engine-llamacpp', 'notes', 'notes-1']);
});

test('commands: continued lines join, comments and separators end them, two on one line are two', () => {
  const md = '```sh\nagro serve --policy p --port 8000 &  # then\nagro ask --llm-url u "q"; agro sql --db d "x" | head\nagro dashboard runs/ \\\n  [--no-open] [--port 8321]\n```\n';
  assert.deepEqual(
    shownCommands('f.md', md).map((c) => [c.line, c.words.join(' ')]),
    [
      [2, 'serve --policy p --port 8000'],
      [3, 'ask --llm-url u "q"'],
      [3, 'sql --db d "x"'],
      [4, 'dashboard runs/ [--no-open] [--port 8321]'],
    ],
  );
});

test('help parsing reads option flags and subcommands, not flags named in descriptions', () => {
  const info = parseHelp(
    'Usage: agro x [options] [command]\n\nOptions:\n  --db <path>   a database (see --other-flag)\n                wrapped text --also-not\n  -h, --help    help\n\nCommands:\n  gguf <a> <b>  export\n',
  );
  assert.deepEqual([...info.flags].sort(), ['--db', '--help']);
  assert.deepEqual([...info.commands], ['gguf']);
});

test('every body limit the docs state is the one the servers apply (agro serve --max-body, the dashboard 1 MiB)', async () => {
  const { readdirSync, readFileSync } = await import('node:fs');
  const { MAX_API_BODY } = await import('../src/server/dashboard.ts');
  const serveHelp = (await help(['serve'])).replace(/\s+/g, ' ');
  const m = /--max-body <bytes> .*?\(default: (\d+)\)/.exec(serveHelp);
  assert.ok(m, 'agro serve --help shows the --max-body default');
  const mib = (n: number): string => `${n / 2 ** 20} MiB`;
  const files = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
  const stated: string[] = [];
  for (const file of files) {
    for (const [i, line] of readFileSync(join(ROOT, file), 'utf8').split('\n').entries()) {
      // "bodies up to 8 MiB", "body limit (`--max-body`, 4 MiB)", "body limit 1 MiB": the dashboard's own line says so.
      for (const s of line.matchAll(/bod(?:y|ies) (?:up to|limit)[^.;|]{0,60}?(\d+(?:\.\d+)?) MiB/gi)) {
        const want: number = /dashboard/i.test(line) ? MAX_API_BODY : Number(m[1]);
        stated.push(`${file}:${i + 1}: ${s[1]} MiB`);
        assert.equal(`${s[1]} MiB`, mib(want), `${file}:${i + 1} states "${s[0]}"; the server applies ${mib(want)}`);
      }
    }
  }
  // The check found the statements it is about (a reworded page would make it pass vacuously).
  assert.ok(stated.length >= 3, stated.join('\n'));
});
