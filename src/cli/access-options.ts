/**
 * Who may call a listening server (`agro serve`, `agro dashboard`): the flags beside --host and --token (whose help
 * says what each command guards), and the access rules they make, checked before anything starts.
 */
import { randomBytes } from 'node:crypto';
import type { Command } from 'commander';
import { assertTokenForHost, type GuardOptions } from '../server/guard.ts';
import { repeatable } from './options.ts';
import { printErr } from './print.ts';

export interface AccessCliOptions {
  host: string;
  /** --token's value; false for --no-token. */
  token?: string | false;
  allowedHost: string[];
  cors: string[];
}

export function addAccessOptions(cmd: Command): Command {
  return cmd
    .option('--no-token', 'on loopback only: no token, so any local user or process may write (corrections, removals, Playground runs)')
    .option('--allowed-host <name>', 'also accept this Host (a reverse proxy\'s name, `name` or `name:port`); repeatable', repeatable, [])
    .option('--cors <origin>', 'let pages of this origin (scheme://host[:port]) call the API, with CORS preflights; repeatable', repeatable, []);
}

export type CliAccess = Pick<GuardOptions, 'listenHost' | 'allowedHosts' | 'cors' | 'token' | 'tokenScope'> & {
  /** The token was made here (none given on loopback): the start line is the only place it is ever shown. */
  minted: boolean;
};

/**
 * The access the flags give. A token given (--token, else AGRO_TOKEN) guards every route; none given on loopback,
 * one is made at random and guards the writes only (reads stay open to the machine's users, as before); --no-token
 * opts out on loopback with one warning line. Any other address needs a given token.
 */
export function accessFromCli(o: AccessCliOptions, command: string): CliAccess {
  const base = { listenHost: o.host, allowedHosts: o.allowedHost, cors: o.cors };
  if (o.token === false) {
    assertTokenForHost(o.host, undefined);
    printErr(`agro ${command}: warning: --no-token: any local user or process can store and remove corrections and start Playground runs\n`);
    return { ...base, minted: false };
  }
  const given = o.token ?? (process.env.AGRO_TOKEN || undefined);
  if (given) return { ...base, token: given, tokenScope: 'all', minted: false };
  // Off loopback a token must be given; on it, one is made: 256 random bits, handed over by the start line alone.
  assertTokenForHost(o.host, undefined);
  return { ...base, token: randomBytes(32).toString('base64url'), tokenScope: 'writes', minted: true };
}
