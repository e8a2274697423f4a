import { Command, CommanderError } from 'commander';
import { AgroError, exitCodeFor, oneLine } from '../errors.ts';
import { loadCommands, type RegisterCommand } from './commands/index.ts';

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

/** Turns a commander parse error into the project's one-line usage error. */
export function usageError(err: CommanderError, command: string | undefined): AgroError {
  const text = err.message.replace(/^error:\s*/, '');
  const where = command ? `${command}: ` : '';
  const help = command ? `agro ${command} --help` : 'agro --help';
  return new AgroError('usage', `${where}${text} (see ${help})`);
}

/** Runs the CLI and returns the process exit code; never throws for user errors. */
export async function main(argv: string[]): Promise<number> {
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
      const e = usageError(err, failed.name);
      process.stderr.write(`agro: ${e.message}\n`);
      return e.exitCode;
    }
    if (err instanceof AgroError && err.kind !== 'internal') {
      process.stderr.write(`agro: ${err.message}\n`);
      return err.exitCode;
    }
    process.stderr.write(`agro: internal error: ${oneLine(err)} (${REPORT_HINT})\n`);
    if (process.env.AGRO_DEBUG) console.error(err);
    return exitCodeFor('internal');
  }
}
