// The pass-rate helper's process (pass-rate-helper.ts): plain JavaScript that loads the TypeScript sources
// through tsx, as bin/agro.js does, so the helper needs no build step and no --import flag.
import { register } from 'tsx/esm/api';

register();
await import('./pass-rate-child.ts');
