#!/usr/bin/env node
// Runs the TypeScript sources directly through tsx, so a fresh clone needs no build step.
import { register } from 'tsx/esm/api';
register();
const { main } = await import('../src/cli/main.ts');
process.exitCode = await main(process.argv);
