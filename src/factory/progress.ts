/** A cli-progress bar per stage on a TTY; nothing otherwise (JSON mode, pipes, tests). */
import cliProgress from 'cli-progress';
import { silentProgress, type ProgressSink } from './types.ts';

export function stageProgress(enabled: boolean): ProgressSink {
  if (!enabled) return silentProgress;
  let bar: cliProgress.SingleBar | null = null;
  return {
    start(stage, total) {
      bar?.stop();
      bar = new cliProgress.SingleBar(
        { format: `${stage.padEnd(12)} [{bar}] {value}/{total} {eta_formatted}`, stream: process.stderr, hideCursor: true },
        cliProgress.Presets.shades_classic,
      );
      bar.start(Math.max(total, 1), 0);
    },
    tick(n = 1) {
      bar?.increment(n);
    },
    stop() {
      bar?.stop();
      bar = null;
    },
  };
}
