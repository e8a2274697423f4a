/**
 * Checks the user documentation against the repository and the CLI: every relative link resolves (the file
 * exists, and a `#anchor` into a Markdown file names one of its headings), every repository path named in inline
 * code exists, and every `agro …` command shown in
 * a code block names a real subcommand whose `--help` lists each flag used. The CLI's own help is the
 * reference, so a renamed flag or a removed command fails here before a reader finds it.
 */
import type { Command } from 'commander';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { loadCommands } from '../../src/cli/commands/index.ts';
import { buildProgram } from '../../src/cli/main.ts';

export interface DocProblem {
  file: string;
  line: number;
  message: string;
}

/** README.md, CHANGELOG.md and docs/*.md under `root`, as paths relative to it. */
export function docFiles(root: string): string[] {
  const docs = existsSync(join(root, 'docs'))
    ? readdirSync(join(root, 'docs'))
        .filter((f) => f.endsWith('.md'))
        .sort()
        .map((f) => join('docs', f))
    : [];
  return [...['README.md', 'CHANGELOG.md'].filter((f) => existsSync(join(root, f))), ...docs];
}

interface Block {
  lang: string;
  /** 1-based line of the block's first content line. */
  line: number;
  lines: string[];
}

/** Splits Markdown into fenced code blocks and the prose lines outside them (code lines blanked, so numbers stay). */
export function splitMarkdown(md: string): { prose: string[]; blocks: Block[] } {
  const prose: string[] = [];
  const blocks: Block[] = [];
  let open: { fence: string; block: Block } | null = null;
  md.split('\n').forEach((text, i) => {
    const fence = /^\s*(`{3,}|~{3,})\s*([\w+-]*)/.exec(text);
    if (open) {
      prose.push('');
      if (fence && fence[1][0] === open.fence[0] && fence[1].length >= open.fence.length && !fence[2]) open = null;
      else open.block.lines.push(text);
    } else if (fence) {
      prose.push('');
      const block = { lang: fence[2].toLowerCase(), line: i + 2, lines: [] };
      blocks.push(block);
      open = { fence: fence[1], block };
    } else {
      prose.push(text);
    }
  });
  return { prose, blocks };
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, each space a hyphen; repeats get -1, -2, … */
export function headingAnchors(md: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of splitMarkdown(md).prose) {
    const h = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!h) continue;
    const text = h[1].replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1');
    const base = text
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** Relative link targets in the prose (not in code), with their line numbers. */
export function relativeLinks(md: string): { target: string; line: number }[] {
  const out: { target: string; line: number }[] = [];
  splitMarkdown(md).prose.forEach((text, i) => {
    const withoutCode = text.replace(/`[^`]*`/g, '');
    for (const m of withoutCode.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      const target = m[1];
      if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('/')) continue; // a URL or an absolute path
      out.push({ target, line: i + 1 });
    }
  });
  return out;
}

/** Problems with the relative links of `file` (relative to `root`). */
export function checkLinks(root: string, file: string): DocProblem[] {
  const md = readFileSync(join(root, file), 'utf8');
  const problems: DocProblem[] = [];
  for (const { target, line } of relativeLinks(md)) {
    const [pathPart, anchor] = target.split('#', 2) as [string, string | undefined];
    const path = pathPart ? resolve(root, dirname(file), decodeURI(pathPart)) : resolve(root, file);
    if (!existsSync(path)) {
      problems.push({ file, line, message: `broken link: ${target} (no ${relative(root, path)})` });
      continue;
    }
    if (anchor && path.endsWith('.md') && !headingAnchors(readFileSync(path, 'utf8')).has(anchor)) {
      problems.push({ file, line, message: `broken link: ${target} (no heading #${anchor} in ${relative(root, path)})` });
    }
  }
  return problems;
}

/** Folders of the repository whose files the docs name in code spans (`src/sql/pool.ts`). */
const REPO_DIRS = /^(src|test|bench|scripts|native|integrations|web|bin|data)\//;

/** Problems with the repository paths `file` names in inline code: each must exist (placeholders and globs skipped). */
export function checkPaths(root: string, file: string): DocProblem[] {
  const problems: DocProblem[] = [];
  splitMarkdown(readFileSync(join(root, file), 'utf8')).prose.forEach((text, i) => {
    for (const m of text.matchAll(/`([^`\s]+)`/g)) {
      const path = m[1].replace(/[:#].*$/, '');
      if (!REPO_DIRS.test(path) || /[<>*{}[\]|]/.test(path)) continue;
      if (!existsSync(join(root, path))) problems.push({ file, line: i + 1, message: `no such file: ${path}` });
    }
  });
  return problems;
}

/** Languages whose blocks hold no shell commands. */
const NOT_SHELL = new Set(['python', 'py', 'json', 'jsonc', 'yaml', 'yml', 'ts', 'typescript', 'js', 'javascript', 'toml']);

export interface ShownCommand {
  file: string;
  line: number;
  /** The words after `agro`, up to the end of the command. */
  words: string[];
}

/** Every `agro …` (or `npx agro …`) command in the shell-like code blocks of `md`. */
export function shownCommands(file: string, md: string): ShownCommand[] {
  const out: ShownCommand[] = [];
  for (const block of splitMarkdown(md).blocks) {
    if (NOT_SHELL.has(block.lang)) continue;
    // Join continued lines, remembering where each logical line starts.
    const logical: { text: string; line: number }[] = [];
    let pending: { text: string; line: number } | null = null;
    block.lines.forEach((raw, i) => {
      const text = raw.replace(/(^|\s)#.*$/, '$1'); // a shell comment
      const cont = /\\\s*$/.test(text);
      const piece = text.replace(/\\\s*$/, ' ');
      pending = pending ? { text: pending.text + piece, line: pending.line } : { text: piece, line: block.line + i };
      if (!cont) {
        logical.push(pending);
        pending = null;
      }
    });
    if (pending) logical.push(pending);
    for (const { text, line } of logical) {
      // Each `agro <word>` starts a command that runs to the next one or to a shell separator.
      const starts = [...text.matchAll(/(?:^|[\s;&|(])(?:npx\s+)?agro\s+(?=[a-z-])/g)];
      starts.forEach((m, k) => {
        const from = m.index + m[0].length;
        const to = k + 1 < starts.length ? starts[k + 1].index : text.length;
        const words: string[] = [];
        for (const w of text.slice(from, to).split(/\s+/).filter(Boolean)) {
          if (/^(;|&&?|\|\|?|>|2>|<)$/.test(w) || w.startsWith('(')) break;
          if (w.endsWith(';')) {
            words.push(w.slice(0, -1));
            break;
          }
          words.push(w);
        }
        out.push({ file, line, words });
      });
    }
  }
  return out;
}

/** What a command's `--help` says: its long flags and its subcommands. */
export interface HelpInfo {
  flags: Set<string>;
  commands: Set<string>;
}

/** Reads commander's help text. */
export function parseHelp(text: string): HelpInfo {
  const flags = new Set<string>();
  const commands = new Set<string>();
  let section = '';
  for (const line of text.split('\n')) {
    const head = /^(\w[\w ]*):\s*$/.exec(line);
    if (head) {
      section = head[1];
      continue;
    }
    if (section === 'Options') {
      // An option line starts with its flags (`  -h, --help  …`); wrapped description lines start with more spaces.
      const m = /^ {2}(-[^ ].*?)(?: {2,}|$)/.exec(line);
      if (m) for (const f of m[1].matchAll(/--[a-z0-9][a-z0-9-]*/g)) flags.add(f[0]);
    } else if (section === 'Commands') {
      const m = /^ {2}([a-z][\w-]*)/.exec(line);
      if (m) commands.add(m[1]);
    }
  }
  return { flags, commands };
}

export type HelpSource = (path: string[]) => Promise<string>;

/**
 * The CLI's own help, from the program `bin/agro.js` runs (every command registered, in this process): one load
 * of the command modules instead of a `node bin/agro.js <cmd> --help` process per command.
 */
export function programHelp(): HelpSource {
  const program = (async () => buildProgram(await loadCommands(['node', 'agro'])))();
  return async (path) => {
    let cmd: Command = await program;
    for (const name of path) {
      const sub = cmd.commands.find((c) => c.name() === name);
      if (!sub) return '';
      cmd = sub;
    }
    return cmd.helpInformation();
  };
}

/** Problems with the commands shown: an unknown subcommand, or a flag its `--help` does not list. */
export async function checkCommands(commands: readonly ShownCommand[], help: HelpSource): Promise<DocProblem[]> {
  const root = parseHelp(await help([]));
  const problems: DocProblem[] = [];
  for (const c of commands) {
    const [name, ...rest] = c.words;
    // `agro serve:` or `agro checkpoint,` is prose in a diagram, not a command.
    if (!name || !/^[a-z][a-z-]*$/.test(name)) continue;
    if (!root.commands.has(name)) {
      problems.push({ file: c.file, line: c.line, message: `agro ${name}: no such command` });
      continue;
    }
    const path = [name];
    let info = parseHelp(await help(path));
    for (const w of rest) {
      const word = w.replace(/^\[+/, '').replace(/[\],]+$/, '');
      if (word === '--') break;
      if (!word.startsWith('--')) {
        // The first plain word may name a subcommand (`agro export gguf`).
        if (path.length === 1 && info.commands.has(word)) {
          path.push(word);
          info = parseHelp(await help(path));
        }
        continue;
      }
      const flag = word.split('=')[0];
      if (!info.flags.has(flag)) problems.push({ file: c.file, line: c.line, message: `agro ${path.join(' ')}: unknown flag ${flag}` });
    }
  }
  return problems;
}

/** Every problem in the documentation under `root`. */
export async function checkDocs(root: string, help: HelpSource = programHelp()): Promise<DocProblem[]> {
  const files = docFiles(root);
  const links = files.flatMap((f) => [...checkLinks(root, f), ...checkPaths(root, f)]);
  const commands = files.flatMap((f) => shownCommands(f, readFileSync(join(root, f), 'utf8')));
  return [...links, ...(await checkCommands(commands, help))];
}

export function formatProblems(problems: readonly DocProblem[]): string {
  return problems.map((p) => `${p.file}:${p.line}: ${p.message}`).join('\n');
}
