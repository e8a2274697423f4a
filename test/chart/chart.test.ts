// The chart a result gets, by its shape (a table of shapes), and the SVG Vega draws for it in Node.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chartFor, MAX_BARS, type ChartInput } from '../../src/chart/chart.ts';
import { renderChart } from '../../src/chart/chart-svg.ts';

const r = (columns: string[], rows: unknown[][]): ChartInput => ({ columns, rows: rows as ChartInput['rows'] });

const SHAPES: [string, ChartInput, { kind: string; x: number; y: number } | null][] = [
  ['one value (a count)', r(['count(*)'], [[347]]), { kind: 'value', x: 0, y: 0 }],
  ['one value (a name)', r(['name'], [['Ada']]), { kind: 'value', x: 0, y: 0 }],
  ['one value as a bigint', r(['n'], [[12n]]), { kind: 'value', x: 0, y: 0 }],
  ['one column, many rows', r(['name'], [['a'], ['b']]), null],
  ['one null value', r(['max(x)'], [[null]]), null],
  ['no rows', r(['genre', 'n'], []), null],
  ['category and number', r(['genre', 'n'], [['Rock', 12], ['Jazz', 5]]), { kind: 'bar', x: 0, y: 1 }],
  ['number and category (reversed)', r(['n', 'genre'], [[12, 'Rock'], [5, 'Jazz']]), { kind: 'bar', x: 1, y: 0 }],
  ['category with a null number', r(['genre', 'n'], [['Rock', null], ['Jazz', 5]]), { kind: 'bar', x: 0, y: 1 }],
  ['too many categories', r(['id', 'n'], Array.from({ length: MAX_BARS + 1 }, (_, i) => [`c${i}`, i])), null],
  ['year (number, named) and number', r(['year', 'sales'], [[2007, 3], [2008, 5]]), { kind: 'line', x: 0, y: 1 }],
  ['release_year and number', r(['release_year', 'n'], [[1999, 3], [2001, 5]]), { kind: 'line', x: 0, y: 1 }],
  ['year as text and number', r(['y', 'n'], [['2007', 3], ['2008', 5]]), { kind: 'line', x: 0, y: 1 }],
  ['ISO date and number', r(['day', 'n'], [['2024-01-01', 3], ['2024-01-02', 5]]), { kind: 'line', x: 0, y: 1 }],
  ['ISO date-time and number', r(['at', 'n'], [['2024-01-01 10:00:00', 3], ['2024-01-01T11:30', 5]]), { kind: 'line', x: 0, y: 1 }],
  ['year-month and number', r(['month', 'n'], [['2024-01', 3], ['2024-02', 5]]), { kind: 'line', x: 0, y: 1 }],
  ['number and date (reversed)', r(['n', 'day'], [[3, '2024-01-01'], [5, '2024-01-02']]), { kind: 'line', x: 1, y: 0 }],
  ['a number in the year range not named year', r(['price', 'qty'], [[1999, 3], [2001, 5]]), { kind: 'point', x: 0, y: 1 }],
  ['two numbers', r(['price', 'qty'], [[1.5, 3], [2.25, 5]]), { kind: 'point', x: 0, y: 1 }],
  ['two categories', r(['a', 'b'], [['x', 'y']]), null],
  ['mixed text and dates', r(['d', 'n'], [['2024-01-01', 3], ['soon', 5]]), { kind: 'bar', x: 0, y: 1 }],
  ['three columns', r(['a', 'b', 'c'], [['x', 1, 2]]), null],
  ['a blob column', r(['img', 'n'], [[new Uint8Array([1]), 2]]), null],
];

for (const [name, input, want] of SHAPES) {
  test(`chartFor: ${name} → ${want?.kind ?? 'table'}`, () => {
    const got = chartFor(input);
    assert.deepEqual(got && { kind: got.kind, x: got.x, y: got.y }, want);
  });
}

test('renderChart draws SVG in Node: bars carry the categories, the value its number, a table none', async () => {
  const bars = await renderChart(r(['genre', 'tracks'], [['Rock', 12], ['Jazz', 5], ['Blues', 9]]));
  assert.equal(bars?.kind, 'bar');
  assert.match(bars!.svg, /^<svg[^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/);
  for (const label of ['Rock', 'Jazz', 'Blues', 'genre', 'tracks']) assert.ok(bars!.svg.includes(`>${label}<`), `the SVG shows ${label}`);
  // One rect per bar, in the order of the values (largest first).
  assert.equal((bars!.svg.match(/aria-roledescription="bar"/g) ?? []).length, 3);
  const value = await renderChart(r(['count(*)'], [[1234567]]));
  assert.equal(value?.kind, 'value');
  assert.ok(value!.svg.includes('>1,234,567<'), 'the value in large type');
  assert.equal(await renderChart(r(['a', 'b', 'c'], [['x', 1, 2]])), null);
});

test('renderChart: 1,000 points of a line chart in well under 300 ms once warm', async () => {
  const rows = Array.from({ length: 1000 }, (_, i) => [`2020-01-01T00:${String(Math.floor(i / 60) % 60).padStart(2, '0')}:${String(i % 60).padStart(2, '0')}`, (i * 37) % 101]);
  await renderChart(r(['at', 'n'], rows.slice(0, 10)));
  const t = performance.now();
  const c = await renderChart(r(['at', 'n'], rows));
  const ms = performance.now() - t;
  assert.equal(c?.kind, 'line');
  assert.ok(ms < 1000, `rendered in ${ms.toFixed(0)} ms (the budget of a page is 300 ms; this bound leaves room for a loaded machine)`);
});
