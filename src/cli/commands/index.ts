import type { Command } from 'commander';

/** Each subcommand lives in its own file and registers itself on the program. */
export type RegisterCommand = (program: Command) => void;

export const COMMANDS: RegisterCommand[] = [];
