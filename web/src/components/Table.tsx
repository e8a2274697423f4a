/** A plain table with CSV export; rows may be marked (differing rows) and clicked (open a detail). */
import { download } from '../api.ts';
import { toCsv } from '../csv.ts';

type CellValue = string | number | null | undefined;

export function DataTable(props: {
  columns: string[];
  rows: CellValue[][];
  csvName?: string;
  /** Only the first rows are drawn; the CSV has all of them. */
  limit?: number;
  marked?: boolean[];
  selected?: number;
  onRowClick?: (i: number) => void;
  caption?: string;
  testId?: string;
}) {
  const limit = props.limit ?? 500;
  const shown = props.rows.slice(0, limit);
  return (
    <div class="table-wrap" data-testid={props.testId}>
      <div class="table-bar">
        <span class="muted">
          {props.caption ?? ''} {props.rows.length > limit ? `(first ${limit} of ${props.rows.length} rows shown)` : ''}
        </span>
        {props.csvName ? (
          <button class="small" title="Download as CSV" onClick={() => download(props.csvName!, new Blob([toCsv(props.columns, props.rows)], { type: 'text/csv' }))}>
            CSV
          </button>
        ) : null}
      </div>
      <div class="scroll">
        <table>
          <thead>
            <tr>
              {props.columns.map((c) => (
                <th>{c}</th>
              ))}
            </tr>
          </thead>
          <tbody>
            {shown.map((r, i) => (
              <tr
                class={[props.marked?.[i] ? 'diff' : '', props.selected === i ? 'selected' : '', props.onRowClick ? 'clickable' : ''].join(' ')}
                onClick={props.onRowClick ? () => props.onRowClick!(i) : undefined}
              >
                {r.map((v) => (
                  <td class={v === null ? 'null' : typeof v === 'number' ? 'num' : ''}>{v === null ? 'NULL' : String(v ?? '')}</td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </div>
  );
}

/** A SQL result (or its error). */
export function ResultView(props: { result: import('../../../src/server/dashboard/api-types.ts').ResultTable; csvName?: string; marked?: boolean[]; testId?: string }) {
  const r = props.result;
  if (!r.ok) {
    const msg = r.message ?? '';
    return <p class="error" data-testid={props.testId}>{msg.startsWith(`${r.error}`) ? msg : `${r.error}: ${msg}`}</p>;
  }
  return (
    <DataTable
      columns={r.columns}
      rows={r.rows}
      csvName={props.csvName}
      marked={props.marked}
      testId={props.testId}
      caption={`${r.rows.length}${r.truncated ? '+' : ''} row${r.rows.length === 1 && !r.truncated ? '' : 's'}, ${r.elapsedMs} ms`}
    />
  );
}
