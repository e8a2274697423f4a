/**
 * Input checks shared by the reward, advantage and loss functions: one clear AgroError('invalid_input')
 * instead of a NaN that silently poisons a training step.
 */
import { AgroError } from '../errors.ts';

export function invalid(message: string): AgroError {
  return new AgroError('invalid_input', message);
}

export function assertFiniteArray(name: string, xs: readonly number[]): void {
  for (let i = 0; i < xs.length; i++) {
    const x = xs[i];
    if (typeof x !== 'number' || !Number.isFinite(x)) throw invalid(`${name}[${i}] is ${String(x)}: expected a finite number`);
  }
}

export function assertFiniteMatrix(name: string, rows: readonly (readonly number[])[]): void {
  rows.forEach((row, i) => assertFiniteArray(`${name}[${i}]`, row));
}

export function assertSameLength(a: string, n: number, b: string, m: number): void {
  if (n !== m) throw invalid(`${a} has ${n} entries but ${b} has ${m}`);
}

export function assertNonEmpty(name: string, n: number): void {
  if (n === 0) throw invalid(`${name} is empty`);
}

/** Throws when any value of a typed array (a tensor's data) is NaN or ±Inf. */
export function assertFiniteData(name: string, data: ArrayLike<number>): void {
  for (let i = 0; i < data.length; i++) {
    if (!Number.isFinite(data[i])) throw invalid(`${name} contains ${String(data[i])} at flat index ${i}: expected finite values`);
  }
}
