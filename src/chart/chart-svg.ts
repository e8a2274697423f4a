/**
 * A chart of a query result as a Vega-Lite spec and as SVG, rendered by Vega's headless view in Node (no
 * browser, no DOM, no canvas): the terminal's `agro ask --chart`, the Playground and `POST /v1/ask` all draw
 * with this one function, so a chart looks the same everywhere. The choice of chart is chart.ts's.
 * Why Vega-Lite: docs/dashboard.md#answers-as-charts.
 */
import type { TopLevelSpec } from 'vega-lite';
import { chartFor, type ChartCell, type ChartChoice, type ChartInput } from './chart.ts';

export interface RenderedChart {
  kind: ChartChoice['kind'];
  /** The Vega-Lite spec, data inline: a client may draw it itself. */
  spec: TopLevelSpec;
  svg: string;
}

const WIDTH = 560;
const HEIGHT = 280;

function jsonValue(v: ChartCell): string | number | null {
  if (typeof v === 'bigint') return Number(v);
  if (v instanceof Uint8Array) return null;
  return v;
}

/** The Vega-Lite spec of a chosen chart over the result's rows (field names are the column positions). */
export function chartSpec(choice: ChartChoice, result: ChartInput): TopLevelSpec {
  const xName = result.columns[choice.x] || 'x';
  const yName = result.columns[choice.y] || 'y';
  // Fields by position: SQL column names may repeat or hold dots and brackets, which Vega reads as paths.
  const values = result.rows.map((r) => ({ x: jsonValue(r[choice.x]), y: jsonValue(r[choice.y]) }));
  const base = { $schema: 'https://vega.github.io/schema/vega-lite/v6.json', background: 'white', config: { font: 'system-ui, sans-serif', view: { stroke: null } } } as const;
  if (choice.kind === 'value') {
    return { ...base, width: WIDTH, height: 90, data: { values }, mark: { type: 'text', fontSize: 56, fontWeight: 'bold', align: 'center', baseline: 'middle' }, encoding: { text: { field: 'x', type: typeof values[0].x === 'number' ? 'quantitative' : 'nominal', title: xName, ...(typeof values[0].x === 'number' ? { format: ',' } : {}) } } } as TopLevelSpec;
  }
  const x =
    choice.kind === 'bar'
      ? { field: 'x', type: 'nominal', title: xName, sort: '-y', axis: { labelLimit: 160, labelAngle: -40 } }
      : choice.xRole === 'date'
        ? { field: 'x', type: 'temporal', title: xName, scale: { type: 'utc' } }
        : choice.xRole === 'year'
          ? { field: 'x', type: 'quantitative', title: xName, scale: { zero: false }, axis: { format: 'd' } }
          : { field: 'x', type: 'quantitative', title: xName, scale: { zero: false } };
  const y = { field: 'y', type: 'quantitative', title: yName };
  const mark = choice.kind === 'bar' ? { type: 'bar', tooltip: true } : choice.kind === 'line' ? { type: 'line', point: result.rows.length <= 60, tooltip: true } : { type: 'point', filled: true, opacity: 0.7, tooltip: true };
  const data = { values: choice.kind === 'line' ? values.filter((v) => v.x !== null && v.y !== null) : values };
  return { ...base, width: WIDTH, height: HEIGHT, data, mark, encoding: { x, y } } as TopLevelSpec;
}

/**
 * SVG of a Vega-Lite spec (Vega's renderer 'none': the scenegraph is built without a DOM, then serialized).
 * Vega and Vega-Lite are imported on the first chart drawn: together they take a second or more to load, which
 * every `agro ask`, `serve` and `dashboard` start would pay for otherwise.
 */
export async function specToSvg(spec: TopLevelSpec): Promise<string> {
  const [{ parse, View }, { compile }] = await Promise.all([import('vega'), import('vega-lite')]);
  const view = new View(parse(compile(spec).spec), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

/** The chart of a result (its kind, spec and SVG), or null when the result is a table. */
export async function renderChart(result: ChartInput): Promise<RenderedChart | null> {
  const choice = chartFor(result);
  if (!choice) return null;
  const spec = chartSpec(choice, result);
  return { kind: choice.kind, spec, svg: await specToSvg(spec) };
}
