/**
 * Progress on stderr for long CLI stages, fed by the libraries' hooks (the libraries never draw): a
 * cli-progress bar on a terminal; without one (pipes, CI logs), a plain line at every tenth of the way
 * so a log still shows that a long stage is moving. Off in JSON mode.
 */
import cliProgress from 'cli-progress';
import type { ProgressSink } from '../util/progress.ts';

export interface StepBar {
  /** Position `value` of `total`, with the fields the format names ({loss}, {reward}, ...). */
  update(value: number, fields?: Record<string, string | number>): void;
  stop(): void;
}

const silentBar: StepBar = { update() {}, stop() {} };

/** A bar for `total` steps: `format` names fields in braces, e.g. 'loss {loss}'. */
export function stepBar(enabled: boolean, label: string, total: number, opts: { start?: number; format?: string; tty?: boolean } = {}): StepBar {
  if (!enabled) return silentBar;
  const fields = [...(opts.format ?? '').matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
  const initial = Object.fromEntries(fields.map((f) => [f, '-']));
  if (opts.tty ?? Boolean(process.stderr.isTTY)) {
    const bar = new cliProgress.SingleBar(
      { format: `${label} |{bar}| {value}/{total}${opts.format ? ` | ${opts.format}` : ''} | eta {eta_formatted}`, hideCursor: true, stream: process.stderr },
      cliProgress.Presets.shades_classic,
    );
    bar.start(Math.max(1, total), opts.start ?? 0, initial);
    return { update: (v, f) => bar.update(v, f), stop: () => bar.stop() };
  }
  let nextTenth = Math.floor(((opts.start ?? 0) / Math.max(1, total)) * 10) + 1;
  const t0 = performance.now();
  return {
    update(v, f = {}) {
      if (v < (nextTenth * total) / 10 && v < total) return;
      nextTenth = Math.floor((v / Math.max(1, total)) * 10) + 1;
      const text = (opts.format ?? '').replace(/\{(\w+)\}/g, (_, k: string) => String(f[k] ?? '-'));
      process.stderr.write(`${label} ${v}/${total}${text ? ` | ${text}` : ''} | ${((performance.now() - t0) / 1000).toFixed(0)}s\n`);
    },
    stop() {},
  };
}

/** The factory's stages: a bar each on a terminal; otherwise one line as each stage ends. */
export function stageBars(enabled: boolean, tty = Boolean(process.stderr.isTTY)): ProgressSink {
  let bar: StepBar = silentBar;
  let done = 0;
  let name = '';
  let t0 = 0;
  const finish = (): void => {
    bar.stop();
    bar = silentBar;
    if (enabled && !tty && name) process.stderr.write(`${name}: ${done} done (${((performance.now() - t0) / 1000).toFixed(1)}s)\n`);
    name = '';
  };
  return {
    start(stage, n) {
      finish();
      done = 0;
      name = stage;
      t0 = performance.now();
      if (enabled && tty) bar = stepBar(true, stage.padEnd(12), Math.max(n, 1), { tty });
    },
    tick(n = 1) {
      done += n;
      bar.update(done);
    },
    stop: finish,
  };
}
