import type { Command } from 'commander';
import { register as registerEval } from './eval.ts';
import { register as registerSql } from './sql.ts';
import { register as registerSchema } from './schema.ts';
import { register as registerSynthSearch } from './synth-search.ts';
import { register as registerSynth } from './synth.ts';

/** Each subcommand lives in its own file and registers itself on the program. */
export type RegisterCommand = (program: Command) => void;

export const COMMANDS: RegisterCommand[] = [registerEval, registerSql, registerSchema, registerSynthSearch, registerSynth];
