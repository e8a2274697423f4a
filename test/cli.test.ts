import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const BIN = fileURLToPath(new URL('../bin/agro.js', import.meta.url));

function agro(...args: string[]) {
  return spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8' });
}

test('agro --help lists the program and exits 0', () => {
  const r = agro('--help');
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /Usage: agro/);
});

test('an unknown subcommand is a usage error: one agro: line, exit 2', () => {
  const r = agro('no-such-command');
  assert.equal(r.status, 2);
  assert.equal(r.stderr, "agro: unknown command 'no-such-command' (see agro --help)\n");
  const h = agro('no-such-command', '--help');
  assert.equal(h.status, 2, 'asked for its help, still unknown');
  assert.equal(h.stderr, "agro: unknown command 'no-such-command' (see agro --help)\n");
  assert.equal(h.stdout, '');
});
