/** Progress of a long job by stage (start/tick/stop): the factory reports through it, the CLI draws it. */
export interface ProgressSink {
  start(stage: string, total: number): void;
  tick(n?: number): void;
  stop(): void;
}

export const silentProgress: ProgressSink = { start() {}, tick() {}, stop() {} };
