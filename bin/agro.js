#!/usr/bin/env node
// Runs the TypeScript sources directly through tsx, so a fresh clone needs no build step.
import { register } from 'tsx/esm/api';
// A reader that closes the pipe early (`agro sql --help | head`) has seen what it wanted: stop quietly, as cat does.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err) => {
    if (err.code === 'EPIPE') process.exit(0);
    throw err;
  });
}
register();
const { main } = await import('../src/cli/main.ts');
process.exitCode = await main(process.argv);
