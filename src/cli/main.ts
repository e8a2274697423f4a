import { Command, CommanderError } from 'commander';
import { AgroError, oneLine } from '../errors.ts';
import { loadCommands, type RegisterCommand } from './commands/index.ts';

export function buildProgram(commands: readonly RegisterCommand[]): Command {
  const program = new Command('agro')
    .description('Turn a SQLite database into a trained text-to-SQL agent.')
    .version('0.1.0')
    .showHelpAfterError()
    .exitOverride();
  for (const register of commands) register(program);
  return program;
}

/** Runs the CLI and returns the process exit code; never throws for user errors. */
export async function main(argv: string[]): Promise<number> {
  const program = buildProgram(await loadCommands(argv));
  try {
    await program.parseAsync(argv);
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version surface as "errors" with exit code 0.
      return err.exitCode;
    }
    if (err instanceof AgroError) {
      process.stderr.write(`agro: ${err.message}\n`);
      return err.exitCode;
    }
    process.stderr.write(`agro: internal error: ${oneLine(err)}\n`);
    if (process.env.AGRO_DEBUG) console.error(err);
    return 70;
  }
}
