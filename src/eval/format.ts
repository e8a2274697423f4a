import { PRED_ERROR_KINDS, type EvalReport } from './types.ts';

function row(cells: string[], widths: number[]): string {
  return cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
}

/**
 * The human-readable summary: accuracy per difficulty and overall, then outcome counts. A difficulty without
 * questions has no row here (the JSON report keeps it, so reports line up across runs).
 */
export function formatReport(report: EvalReport): string {
  const s = report.summary;
  const header = ['', 'count', 'correct', 'EX %'];
  const body = s.byDifficulty.filter((b) => b.count > 0).map((b) => [b.bucket, String(b.count), String(b.correct), b.accuracy.toFixed(2)]);
  const total = ['total', String(s.count), String(s.correct), s.accuracy.toFixed(2)];
  const widths = header.map((h, i) => Math.max(h.length, i === 0 ? 11 : 7, ...[...body, total].map((r) => r[i].length)));
  const rule = '-'.repeat(widths.reduce((a, w) => a + w, 0) + 2 * (widths.length - 1));
  const errs = PRED_ERROR_KINDS.map((k) => `${k} ${s.predErrors[k]}`).join(', ');
  const o = s.outcomes;
  const lines = [
    `${report.data} (${report.mode} mode${report.suite ? `, test suite ${report.suite}` : ''}, timeout ${report.timeoutMs} ms)`,
    row(header, widths),
    rule,
    ...body.map((r) => row(r, widths)),
    rule,
    row(total, widths),
    '',
    `outcomes: match ${o.match}, mismatch ${o.mismatch}, pred_error ${o.pred_error} (${errs}), timeout ${o.timeout}, gold_error ${o.gold_error}`,
  ];
  return lines.join('\n') + '\n';
}
