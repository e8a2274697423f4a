import { Command, CommanderError } from 'commander';
import { AgroError, escapeControls, exitCodeFor, oneLine, redactSecrets } from '../errors.ts';
import { COMMAND_LOADERS, commandWord, loadCommands, type RegisterCommand } from './commands/index.ts';

/** Where a bug report goes; printed with every internal error so users know it is not their fault. */
export const REPORT_HINT = 'this is a bug in agro: please report it with the command you ran (AGRO_DEBUG=1 prints the stack)';

/** Commander exits that are not errors: help and version output. */
const NOT_ERRORS = new Set(['commander.helpDisplayed', 'commander.version']);

export function buildProgram(commands: readonly RegisterCommand[]): Command {
  const program = new Command('agro')
    .description('Turn a SQLite database into a trained text-to-SQL agent.')
    .version('0.1.0')
    .exitOverride();
  for (const register of commands) register(program);
  return program;
}

/**
 * Commander prints its own `error: ...` line (and help) for every parse error. Here every command
 * stays silent and records which command failed, so main() prints one `agro: ...` line for all of them.
 */
function silenceParseErrors(cmd: Command, failed: { name?: string }): void {
  cmd.configureOutput({
    outputError: () => {
      failed.name = cmd.parent ? cmd.name() : undefined;
    },
  });
  cmd.showHelpAfterError(false);
  for (const sub of cmd.commands) silenceParseErrors(sub, failed);
}

/**
 * An "unknown option" that is no flag at all (`-- comment ...`, `-5 rows`) is an argument that starts
 * with "-": it goes after `--`, which the hint shows with the command's own argument name.
 */
function dashArgumentHint(err: CommanderError, command: string | undefined, argName: string | undefined): string {
  if (err.code !== 'commander.unknownOption' || !command || !argName) return '';
  const option = /unknown option '(.*)'/s.exec(err.message)?.[1] ?? '';
  if (/^--?[A-Za-z][\w-]*(=.*)?$/s.test(option)) return '';
  return `; an argument that starts with "-" goes after --: agro ${command} [options] -- "<${argName}>"`;
}

/** Turns a commander parse error into the project's one-line usage error. */
export function usageError(err: CommanderError, command: string | undefined, argName?: string): AgroError {
  const text = err.message.replace(/^error:\s*/, '');
  const where = command ? `${command}: ` : '';
  const help = command ? `agro ${command} --help` : 'agro --help';
  return new AgroError('usage', `${where}${text} (see ${help}${dashArgumentHint(err, command, argName)})`);
}

/** Every error line goes out here: one line, `agro: ` first, control characters from user input escaped. */
function printError(message: string): void {
  process.stderr.write(`agro: ${escapeControls(redactSecrets(message))}\n`);
}

/** Runs the CLI and returns the process exit code; never throws for user errors. */
export async function main(argv: string[]): Promise<number> {
  // An unknown command asked for its help is still an unknown command (commander would print the top-level help, exit 0).
  const first = commandWord(argv);
  if (first !== undefined && first !== 'help' && !(first in COMMAND_LOADERS) && argv.slice(2).some((a) => a === '--help' || a === '-h')) {
    printError(`unknown command '${first}' (see agro --help)`);
    return exitCodeFor('usage');
  }
  const program = buildProgram(await loadCommands(argv));
  const failed: { name?: string } = {};
  silenceParseErrors(program, failed);
  try {
    await program.parseAsync(argv);
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (NOT_ERRORS.has(err.code)) return err.exitCode;
      // `agro` alone prints the help (to stderr): a usage error, but the help is the useful answer.
      if (err.code === 'commander.help') return err.exitCode === 0 ? 0 : exitCodeFor('usage');
      const argName = program.commands.find((c) => c.name() === failed.name)?.registeredArguments[0]?.name();
      const e = usageError(err, failed.name, argName);
      printError(e.message);
      return e.exitCode;
    }
    if (err instanceof AgroError && err.kind !== 'internal') {
      printError(err.message);
      return err.exitCode;
    }
    printError(`internal error: ${oneLine(err)} (${REPORT_HINT})`);
    if (process.env.AGRO_DEBUG) console.error(err);
    return exitCodeFor('internal');
  }
}
