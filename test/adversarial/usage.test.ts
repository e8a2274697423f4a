// Issue #21, bad input: usage errors and numeric flags out of range, through the real CLI.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { agro, assertOneLine, DB_ROOT, DEV, MUSIC } from './support.ts';

const USAGE: Array<[string, string[], RegExp]> = [
  ['a missing required option', ['sql', 'SELECT 1'], /^agro: sql: required option '--db <path\|url>' not specified \(see agro sql --help\)/],
  ['a missing argument', ['sql', '--db', MUSIC], /^agro: sql: missing required argument 'sql'/],
  ['an unknown option', ['sql', '--db', MUSIC, '--bogus', 'SELECT 1'], /^agro: sql: unknown option '--bogus'/],
  ['an unknown command', ['frobnicate'], /^agro: unknown command 'frobnicate' \(see agro --help\)/],
  ['a choice not in the list', ['eval', '--data', DEV, '--gold', '--mode', 'foo'], /^agro: eval: option '--mode <mode>' argument 'foo' is invalid/],
];

for (const [what, args, message] of USAGE) {
  test(`usage error, ${what}: one agro: line, exit 2, no help dump (agro ${args[0]})`, () => {
    assertOneLine(agro(args), 2, message);
  });
}

// setTimeout turns a delay past 2^31-1 ms into 1 ms: such a timeout must be refused, not shortened.
const OVERFLOW = '99999999999';
test('--timeout past what a timer holds is a usage error: sql, eval, synth', () => {
  assertOneLine(agro(['sql', '--db', MUSIC, '--timeout', OVERFLOW, 'SELECT 1']), 2, /--timeout must be an integer from 1 to 2147453647/);
  assertOneLine(agro(['eval', '--data', DEV, '--gold', '--db-root', DB_ROOT, '--timeout', OVERFLOW]), 2, /eval: --timeout must be an integer > 0 and <= 2147453647, got "99999999999"/);
  assertOneLine(agro(['synth', '--db', MUSIC, '--out', 'runs/never-written', '--timeout', OVERFLOW]), 2, /synth: --timeout must be an integer > 0 and <= 2147453647, got "99999999999"/);
});

test('every numeric flag has a range: seeds are 32-bit, sizes are bounded', () => {
  assertOneLine(agro(['sft', '--data', DEV, '--out', 'runs/never-written', '--seed', String(2 ** 32)]), 2, /--seed must be an integer from 0 to 4294967295/);
  assertOneLine(agro(['train', '--data', DEV, '--out', 'runs/never-written', '--group-size', '1e9']), 2, /--group-size must be an integer from 1 to 4096/);
  assertOneLine(agro(['sft', '--data', DEV, '--out', 'runs/never-written', '--vocab-size', '100000000']), 2, /--vocab-size must be an integer from 300 to 262144/);
  assertOneLine(agro(['eval', '--data', DEV, '--gold', '--float-tol', '5']), 2, /--float-tol/);
  assertOneLine(agro(['schema', '--db', MUSIC, '--samples', '1000000']), 2, /--samples must be an integer from 0 to 100/);
  assertOneLine(agro(['quickstart', '--seed', '-1']), 2, /--seed must be an integer from 0 to 4294967295/);
});

test('help and version are not errors', () => {
  const h = agro(['sql', '--help']);
  assert.equal(h.status, 0);
  assert.match(h.stdout, /Usage: agro sql/);
  assert.equal(agro(['--version']).status, 0);
});
