/**
 * Line charts (uPlot: canvas, made for long series) of one or more (x, y) series that need not share x
 * values: runs of different lengths are aligned with uPlot.join. Exports the canvas as PNG.
 */
import { useEffect, useMemo, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { download } from '../api.ts';
import { toCsv } from '../csv.ts';
import { decimateRows, pickRows, type Columns } from '../decimate.ts';

export interface Series {
  label: string;
  x: number[];
  y: (number | null)[];
}

const PALETTE = ['#2563eb', '#dc2626', '#16a34a', '#d97706', '#7c3aed', '#0891b2', '#db2777', '#65a30d', '#475569', '#ea580c'];
export const color = (i: number): string => PALETTE[i % PALETTE.length];

/** The canvas with a white background and the title, as a PNG data URL. */
export function chartPng(u: uPlot, title: string): string {
  const src = u.ctx.canvas;
  const pad = 28 * devicePixelRatio;
  const out = document.createElement('canvas');
  out.width = src.width;
  out.height = src.height + pad;
  const ctx = out.getContext('2d')!;
  ctx.fillStyle = '#fff';
  ctx.fillRect(0, 0, out.width, out.height);
  ctx.fillStyle = '#111';
  ctx.font = `${14 * devicePixelRatio}px system-ui, sans-serif`;
  ctx.fillText(title, 8 * devicePixelRatio, 19 * devicePixelRatio);
  ctx.drawImage(src, 0, pad);
  return out.toDataURL('image/png');
}

/**
 * The y axis as wide as its longest tick label (a fixed width clipped "0.000125" and "1,234,567"): about 7 px
 * per character of the 11 px axis font, plus the tick and gap.
 */
function axisWidth(_u: uPlot, values: string[] | null): number {
  const longest = Math.max(0, ...(values ?? []).map((v) => String(v ?? '').length));
  return Math.max(40, Math.ceil(longest * 7 + 22));
}

function fileName(title: string): string {
  return `${title.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '') || 'chart'}.png`;
}

interface UplotHost extends HTMLDivElement {
  /** The live chart, read by the browser tests. */
  _uplot?: uPlot;
  /** Every row of its series (the chart may draw fewer, see decimate.ts). */
  _full?: uPlot.AlignedData;
}

export function ChartFrame(props: { title: string; getPng: () => string | null; getCsv?: () => string | null; children: preact.ComponentChildren; testId?: string }) {
  return (
    <figure class="chart" data-title={props.title}>
      <figcaption>
        <span>{props.title}</span>
        <span class="actions">
          <button
            class="small"
            title="Download as PNG"
            onClick={() => {
              const png = props.getPng();
              if (png) download(fileName(props.title), png);
            }}
          >
            PNG
          </button>
          {props.getCsv ? (
            <button
              class="small"
              title="Download every point as CSV"
              onClick={() => {
                const csv = props.getCsv!();
                if (csv) download(fileName(props.title).replace(/\.png$/, '.csv'), new Blob([csv], { type: 'text/csv' }));
              }}
            >
              CSV
            </button>
          ) : null}
        </span>
      </figcaption>
      {props.children}
    </figure>
  );
}

/**
 * Keeps a uPlot sized to its container; `shown` picks what to draw of the data at that width. The chart is
 * made when the first size arrives (a ResizeObserver call, after layout): a page of charts is laid out
 * once, instead of once per chart reading its width.
 */
function useUplot(build: (width: number) => uPlot.Options | null, data: uPlot.AlignedData | null, deps: unknown[], shown?: (data: uPlot.AlignedData, width: number) => uPlot.AlignedData) {
  const host = useRef<UplotHost>(null);
  const plot = useRef<uPlot | null>(null);
  useEffect(() => {
    const el = host.current;
    if (!el || !data) return;
    let u: uPlot | null = null;
    const ro = new ResizeObserver((entries) => {
      const w = Math.max(200, Math.floor(entries[entries.length - 1].contentRect.width));
      if (u) {
        if (Math.abs(w - u.width) > 2) u.setSize({ width: w, height: u.height });
        return;
      }
      const opts = build(w);
      if (!opts) return;
      u = new uPlot(opts, shown ? shown(data, w) : data, el);
      plot.current = u;
      el._uplot = u;
      el._full = data;
    });
    ro.observe(el);
    return () => {
      ro.disconnect();
      u?.destroy();
      plot.current = null;
      el._uplot = undefined;
      el._full = undefined;
    };
  }, deps);
  return { host, plot };
}

function sameX(a: number[], b: number[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** One x array for all series: as is when they share it (one run), else uPlot.join (runs of different lengths). */
export function alignSeries(series: Series[]): uPlot.AlignedData | null {
  if (!series.length) return null;
  if (series.every((s) => sameX(s.x, series[0].x))) return [series[0].x, ...series.map((s) => s.y)] as uPlot.AlignedData;
  return uPlot.join(series.map((s) => [s.x, s.y] as uPlot.AlignedData)) as uPlot.AlignedData;
}

export function LineChart(props: { title: string; series: Series[]; height?: number; xLabel?: string }) {
  const { series } = props;
  const sig = JSON.stringify(series.map((s) => [s.label, s.x.length, s.x[s.x.length - 1], s.y[s.y.length - 1]]));
  const data = useMemo(() => alignSeries(series), [sig]);
  const points = series.reduce((a, s) => a + s.y.length, 0);
  // A long run is drawn decimated to the chart's width (one bucket per pixel column), and again for the
  // range zoomed into: zoomed far enough, every row is drawn.
  const buckets = (width: number) => Math.max(100, Math.round(width));
  const shown = (d: uPlot.AlignedData, width: number, min?: number, max?: number): uPlot.AlignedData => {
    const full = d as unknown as Columns;
    if (full[0].length <= 2 * buckets(width)) return d;
    return pickRows(full, decimateRows(full, buckets(width), min, max)) as unknown as uPlot.AlignedData;
  };
  // The x range last drawn: uPlot sets the scale once as it starts, which needs no second pass.
  let drawnRange: [number, number] | null = data ? [data[0][0], data[0][data[0].length - 1]] : null;
  // Sparse series (held-out EX every N steps) are drawn as connected points.
  const { host, plot } = useUplot(
    (width) => ({
      width,
      height: props.height ?? 200,
      legend: { show: true },
      cursor: { drag: { x: true, y: false } },
      hooks: {
        setScale: [
          (u, key) => {
            const { min, max } = u.scales.x;
            if (key !== 'x' || !data || min === undefined || max === undefined || data[0].length <= 2 * buckets(u.width)) return;
            if (drawnRange && drawnRange[0] === min && drawnRange[1] === max) return;
            drawnRange = [min, max];
            u.setData(shown(data, u.width, min, max), false);
          },
        ],
      },
      // A flat series gets a band around its value, not uPlot's default 0..100.
      scales: { x: { time: false }, y: { range: (_u, min, max) => (min === max ? [min - Math.max(1, Math.abs(min) * 0.1), max + Math.max(1, Math.abs(max) * 0.1)] : uPlot.rangeNum(min, max, 0.1, true)) } },
      axes: [{ label: props.xLabel ?? 'step', size: 36, labelSize: 18 }, { size: axisWidth }],
      series: [
        { label: props.xLabel ?? 'step' },
        ...series.map((s, i) => {
          const n = s.y.filter((v) => v !== null).length;
          const sparse = n < s.y.length / 2 || n < 30;
          return { label: s.label, stroke: color(i), width: 1.5, spanGaps: true, points: { show: sparse, size: 4 } };
        }),
      ],
    }),
    data,
    [sig, props.height],
    shown,
  );
  const csv = () => (data ? toCsv([props.xLabel ?? 'step', ...series.map((s) => s.label)], (data[0] as number[]).map((_, i) => data.map((col) => col[i]))) : null);
  return (
    <ChartFrame title={props.title} getPng={() => (plot.current ? chartPng(plot.current, props.title) : null)} getCsv={csv}>
      <div class="plot" ref={host} data-points={points} />
    </ChartFrame>
  );
}

const short = (s: string): string => (s.length > 18 ? `${s.slice(0, 17)}…` : s);

/** Bars over categories (several series side by side). */
export function BarChart(props: { title: string; labels: string[]; series: { label: string; values: number[] }[]; height?: number; rotate?: boolean }) {
  const { labels, series } = props;
  const n = labels.length;
  const data: uPlot.AlignedData | null = n ? [labels.map((_, i) => i), ...series.map((s) => s.values)] : null;
  const k = series.length;
  const { host, plot } = useUplot(
    (width) => ({
      width,
      height: props.height ?? 220,
      legend: { show: k > 1 },
      cursor: { points: { show: false } },
      // Rotated labels run down and to the right of their bar: room for the last ones.
      ...(props.rotate ? { padding: [12, 48, 0, 0] as uPlot.Padding } : {}),
      scales: { x: { time: false, range: [-0.5, n - 0.5] }, y: { range: (_u, _min, max) => [0, Math.max(1, max * 1.08)] } },
      axes: [
        {
          splits: () => labels.map((_, i) => i),
          // Long category names (stage: reason) are cut on the axis; the legend shows them whole on hover.
          values: (_u, splits) => splits.map((i) => short(labels[i] ?? '')),
          // Many categories leave each label a narrow slot: steeper labels keep their lines apart (at -35° the
          // twenty reasons of a factory's rejections overlapped each other).
          rotate: props.rotate ? (n > 12 ? -65 : -35) : 0,
          size: props.rotate ? (n > 12 ? 115 : 90) : 36,
          gap: 4,
          grid: { show: false },
        },
        { size: axisWidth },
      ],
      series: [
        { label: 'category', value: (_u, i) => (i === null ? '' : (labels[i] ?? '')) },
        ...series.map((s, j) => ({
          label: s.label,
          stroke: color(j),
          fill: `${color(j)}cc`,
          width: 0,
          points: { show: false },
          // Left edges in category units: series j takes the j-th slice of the 0.8-wide slot around each category.
          paths: uPlot.paths.bars!({
            disp: {
              x0: { unit: 1, values: () => labels.map((_, i) => i - 0.4 + (0.8 / k) * j) },
              size: { unit: 1, values: () => labels.map(() => 0.8 / k) },
            },
          }),
        })),
      ],
    }),
    data,
    [JSON.stringify([labels, series])],
  );
  return (
    <ChartFrame title={props.title} getPng={() => (plot.current ? chartPng(plot.current, props.title) : null)}>
      {n ? <div class="plot" ref={host} data-points={n * k} /> : <p class="muted">nothing to show</p>}
    </ChartFrame>
  );
}
