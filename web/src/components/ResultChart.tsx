/**
 * A result's chart as the server drew it (src/chart/chart-svg.ts, Vega-Lite rendered to SVG in Node): shown
 * as an image, so nothing in the SVG (it carries the database's values as text) can run in the page.
 */
import type { ResultChart } from '../../../src/server/dashboard/api-types.ts';

/** `onDrawn`: called once the image is decoded and laid out (the page's timing marks end there). */
export function ResultChartView({ chart, testId, onDrawn }: { chart: ResultChart; testId?: string; onDrawn?: () => void }) {
  return (
    <figure class={`answer-chart ${chart.kind}`} data-testid={testId} data-kind={chart.kind}>
      <img src={`data:image/svg+xml;charset=utf-8,${encodeURIComponent(chart.svg)}`} alt={`${chart.kind} chart of the result`} onLoad={onDrawn} />
    </figure>
  );
}
