import type { PlaygroundEvent } from '../../src/server/dashboard/api-types.ts';

/** The events of a server-sent-event body (the Playground's stream). */
export function sseEvents(body: string): PlaygroundEvent[] {
  return body
    .split('\n\n')
    .map((block) => /^data: (.*)$/m.exec(block)?.[1])
    .filter((d): d is string => d !== undefined)
    .map((d) => JSON.parse(d) as PlaygroundEvent);
}
