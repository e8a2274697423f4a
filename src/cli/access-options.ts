/**
 * Who may call a listening server (`agro serve`, `agro dashboard`): the flags beside --host and --token (whose help
 * says what each command guards), and the access rules they make, checked before anything starts.
 */
import type { Command } from 'commander';
import { assertTokenForHost, type GuardOptions } from '../server/guard.ts';
import { repeatable } from './options.ts';

export interface AccessCliOptions {
  host: string;
  token?: string;
  allowedHost: string[];
  cors: string[];
}

export function addAccessOptions(cmd: Command): Command {
  return cmd
    .option('--allowed-host <name>', 'also accept this Host (a reverse proxy\'s name, `name` or `name:port`); repeatable', repeatable, [])
    .option('--cors <origin>', 'let pages of this origin (scheme://host[:port]) call the API, with CORS preflights; repeatable', repeatable, []);
}

/** The access the flags give (the token: --token, else AGRO_TOKEN); any address but loopback needs a token. */
export function accessFromCli(o: AccessCliOptions): Pick<GuardOptions, 'listenHost' | 'allowedHosts' | 'cors' | 'token'> {
  const token = o.token ?? process.env.AGRO_TOKEN;
  assertTokenForHost(o.host, token);
  return { listenHost: o.host, allowedHosts: o.allowedHost, cors: o.cors, ...(token ? { token } : {}) };
}
