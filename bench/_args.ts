// Flag parsing shared by the benchmarks (`npm run bench -- NAME --flag value`).

/** The value after `name`, or `dflt`. */
export function flag(args: string[], name: string, dflt: string): string {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : dflt;
}

/** A numeric flag; a value that is not a number stops the benchmark with its name. */
export function num(args: string[], name: string, dflt: number): number {
  const v = Number(flag(args, name, String(dflt)));
  if (!Number.isFinite(v)) throw new Error(`bench: ${name} must be a number`);
  return v;
}
