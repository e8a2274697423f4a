/**
 * The route groups that serve one policy: the OpenAI API (a completion naming a database answered by the
 * agent) and `POST /v1/ask`, sharing one asker. `agro serve --policy` mounts them; the tests mount the same.
 */
import type { RouteGroup } from './app.ts';
import { askRoutes, createAsker, type AskerOptions } from './ask.ts';
import { openaiRoutes, type OpenAiRoutesOptions } from './openai.ts';

export function policyRouteGroups(o: { openai: Omit<OpenAiRoutesOptions, 'ask'>; ask: Omit<AskerOptions, 'policy'> }): RouteGroup[] {
  const ask = createAsker({ ...o.ask, policy: o.openai.policy });
  return [{ app: openaiRoutes({ ...o.openai, ask }) }, { app: askRoutes({ ask, concurrency: o.openai.concurrency, maxQueue: o.openai.maxQueue }) }];
}
