import type { Command } from 'commander';

/** Each subcommand lives in its own file and registers itself on the program. */
export type RegisterCommand = (program: Command) => void;

type Loader = () => Promise<{ register: RegisterCommand }>;

/**
 * Command name → its module, loaded on demand: `agro sql` should not pay for loading TensorFlow.js.
 * Order is the order of `agro --help`.
 */
export const COMMAND_LOADERS: Record<string, Loader> = {
  quickstart: () => import('./quickstart.ts'),
  synth: () => import('./synth.ts'),
  sft: () => import('./sft.ts'),
  pretrain: () => import('./pretrain.ts'),
  train: () => import('./train.ts'),
  eval: () => import('./eval.ts'),
  predict: () => import('./predict.ts'),
  ask: () => import('./ask.ts'),
  memory: () => import('./memory.ts'),
  judge: () => import('./judge.ts'),
  chat: () => import('./chat.ts'),
  serve: () => import('./serve.ts'),
  export: () => import('./export.ts'),
  sql: () => import('./sql.ts'),
  schema: () => import('./schema.ts'),
  db: () => import('./db.ts'),
  'synth-search': () => import('./synth-search.ts'),
  dashboard: () => import('./dashboard.ts'),
};

/** The first word of argv that is not a flag: the subcommand named, known or not. */
export function commandWord(argv: readonly string[]): string | undefined {
  return argv.slice(2).find((a) => !a.startsWith('-'));
}

/** The registrations needed for argv: just the named subcommand when there is one, else all (for help). */
export async function loadCommands(argv: readonly string[]): Promise<RegisterCommand[]> {
  const first = commandWord(argv);
  const names = first !== undefined && first in COMMAND_LOADERS ? [first] : Object.keys(COMMAND_LOADERS);
  const mods = await Promise.all(names.map((n) => COMMAND_LOADERS[n]()));
  return mods.map((m) => m.register);
}
