import { AgroError } from '../errors.ts';

/** A reward's required input from its context, or invalid input naming the reward and what it misses. */
export function need<T>(value: T | undefined | null, what: string, reward: string): T {
  if (value === undefined || value === null) throw new AgroError('invalid_input', `reward "${reward}" needs ${what}`);
  return value;
}
