/**
 * `--chart FILE.svg` of `agro ask` (and any command that ends with a result): the flag, checked when it is
 * parsed, and the file written (atomically) from the final result when a chart says more than a table.
 * SVG only: Vega renders SVG headless; a PNG would need a rasterizer (@resvg/resvg-js or node-canvas),
 * which agro does not carry (docs/dashboard.md#answers-as-charts).
 */
import { extname } from 'node:path';
import { Option, type Command } from 'commander';
import { AgroError } from '../errors.ts';
import type { ExecResult } from '../sql/types.ts';
import { writeFileAtomic } from '../util/fs.ts';
import { prepareOutFile } from './out-path.ts';
import { printErr } from './print.ts';

/** A chart's file, checked before anything runs: SVG only, in a folder that can take it. */
export function checkChartPath(v: string, flag = '--chart'): string {
  if (extname(v).toLowerCase() !== '.svg') throw new AgroError('usage', `${flag} ${v}: only .svg is written (a PNG needs a rasterizer agro does not carry)`);
  prepareOutFile({ flag, path: v });
  return v;
}

export function addChartOption(cmd: Command): Command {
  return cmd.addOption(new Option('--chart <file.svg>', 'draw the result as a chart (bars, a line, points or the value) into this SVG file, when a chart says more than a table').argParser((v: string) => checkChartPath(v)));
}

/**
 * Writes the chart of the answer when `--chart` was given; says on one line when the result is a table.
 * The answer runs again for the chart with the sandbox's own bounds on a result (rows and bytes), not the
 * few rows the terminal shows. `label` is what asked, as the person typed it (`agro chat`'s `:chart`), and
 * starts the lines.
 */
export async function writeChartIfAsked(o: { chart?: string }, run: (() => Promise<ExecResult>) | undefined, label = '--chart'): Promise<void> {
  if (!o.chart) return;
  const result = run ? await run() : undefined;
  // Vega loads only when a chart is asked for (half a second of every `agro ask` otherwise).
  const chart = result?.ok ? await (await import('../chart/chart-svg.ts')).renderChart(result) : null;
  if (!chart) {
    printErr(`${label}: no chart for this ${result?.ok ? 'result (a table says it better)' : 'answer (no result)'}; nothing written\n`);
    return;
  }
  writeFileAtomic(o.chart, chart.svg);
  printErr(`${label}: ${chart.kind} chart written to ${o.chart}\n`);
}
