/**
 * One query in one round trip, with its row cap enforced by the server: Parse, Bind, Describe,
 * Execute (at most maxRows + 1 rows), Sync, all sent at once, after the caller's prelude statements. The server stops producing rows at the
 * cap (PortalSuspended says there were more), and Sync ends the statement's implicit transaction.
 * A cursor (pg-cursor) needs a second round trip to close its portal, which made a point lookup cost
 * about 3x a direct query; this costs what a direct extended-protocol query costs.
 *
 * Cells are parsed as they arrive and kept until maxRows or maxBytes; the transfer itself is bounded
 * by the row cap (a row past the byte cap is read and dropped, never kept).
 * A `pg` Submittable (the interface pg-cursor uses): pg hands it the connection and its messages.
 */
import { EventEmitter } from 'node:events';
import type pg from 'pg';
import type { Row, SqlValue } from './types.ts';

export interface CappedResult {
  columns: string[];
  rows: Row[];
  truncated: boolean;
  /** When truncated: the cap that cut it. */
  truncatedBy?: 'rows' | 'bytes';
}

type Parser = (text: string) => SqlValue;

/** The parts of pg's Connection this query writes to. */
interface Wire {
  parse(msg: { text: string; name?: string; types?: number[] }, more?: boolean): void;
  bind(msg: { portal?: string; statement?: string; values?: unknown[] }, more?: boolean): void;
  describe(msg: { type: 'P' | 'S'; name?: string }, more?: boolean): void;
  execute(msg: { portal?: string; rows?: number }, more?: boolean): void;
  sync(): void;
}

/** Bytes of a cell, as SqlPool counts them (text as UTF-8). */
export function cellBytes(v: SqlValue): number {
  if (v === null) return 1;
  if (typeof v === 'string') return Buffer.byteLength(v, 'utf8');
  if (v instanceof Uint8Array) return v.byteLength;
  return 8;
}

export class CappedQuery extends EventEmitter implements pg.Submittable {
  readonly done: Promise<CappedResult>;
  private resolve!: (r: CappedResult) => void;
  private reject!: (e: unknown) => void;
  private columns: string[] = [];
  private parsers: Parser[] = [];
  private readonly rows: Row[] = [];
  private bytes = 0;
  private truncated = false;
  private truncatedBy: 'rows' | 'bytes' | undefined;
  private error: unknown;

  constructor(
    private readonly text: string,
    private readonly caps: { maxRows: number; maxBytes: number; parserFor: (oid: number) => Parser; prelude?: readonly string[] },
  ) {
    super();
    this.done = new Promise((res, rej) => {
      this.resolve = res;
      this.reject = rej;
    });
    this.done.catch(() => undefined); // the caller awaits it; never an unhandled rejection meanwhile
  }

  submit(connection: pg.Connection): void {
    const con = connection as unknown as Wire;
    // pg writes each message to the socket as it is made, and the socket sends at once (no Nagle): corked, the
    // five go out in one write, as pg's own extended-protocol queries do. Five writes cost more client time
    // than the rest of a point lookup (37% of direct pg's throughput before, the bench's profile).
    const stream = (connection as unknown as { stream?: { cork?: () => void; uncork?: () => void } }).stream;
    stream?.cork?.();
    try {
      // agro's own statements first (the READ ONLY transaction and its limits, postgres.ts), in the same
      // round trip: an error in any of them skips the rest up to the Sync, the query included.
      for (const text of this.caps.prelude ?? []) {
        con.parse({ text, types: [] }, true);
        con.bind({ portal: '', statement: '', values: [] }, true);
        con.execute({ portal: '', rows: 0 }, true);
      }
      con.parse({ text: this.text, types: [] }, true);
      con.bind({ portal: '', statement: '', values: [] }, true);
      con.describe({ type: 'P', name: '' }, true);
      // Execute's 0 means "all rows": the cap + 1 is at least 1, and the extra row tells a cut result.
      con.execute({ portal: '', rows: this.caps.maxRows + 1 }, true);
      con.sync();
    } finally {
      stream?.uncork?.();
    }
  }

  handleRowDescription(msg: { fields: Array<{ name: string; dataTypeID: number }> }): void {
    this.columns = msg.fields.map((f) => f.name);
    this.parsers = msg.fields.map((f) => this.caps.parserFor(f.dataTypeID));
  }

  handleDataRow(msg: { fields: Array<string | null> }): void {
    if (this.truncated || this.error) return;
    if (this.rows.length >= this.caps.maxRows) {
      this.truncated = true;
      this.truncatedBy = 'rows';
      return;
    }
    let row: Row;
    try {
      row = msg.fields.map((t, i) => (t === null ? null : this.parsers[i](t)));
    } catch (err) {
      this.error = err;
      return;
    }
    let b = 0;
    for (const v of row) b += cellBytes(v);
    if (this.bytes + b > this.caps.maxBytes) {
      this.truncated = true;
      this.truncatedBy = 'bytes';
      return;
    }
    this.bytes += b;
    this.rows.push(row);
  }

  /** More rows than the cap: the server kept the rest. */
  handlePortalSuspended(): void {
    this.truncated = true;
    this.truncatedBy ??= 'rows';
  }

  handleCommandComplete(): void {}

  handleEmptyQuery(): void {}

  /**
   * pg's client lets go of a query at its error (the ReadyForQuery that follows our Sync is its own), so
   * the query ends here; the client queues the next one until that ReadyForQuery has come.
   */
  handleError(err: unknown): void {
    this.error ??= err;
    this.reject(this.error);
    this.emit('end');
  }

  handleReadyForQuery(): void {
    if (this.error) this.reject(this.error);
    else this.resolve({ columns: this.columns, rows: this.rows, truncated: this.truncated, ...(this.truncatedBy ? { truncatedBy: this.truncatedBy } : {}) });
    this.emit('end');
  }

  handleCopyInResponse(connection: { sendCopyFail(msg: string): void }): void {
    connection.sendCopyFail('COPY is not allowed');
  }

  handleCopyData(): void {}
}
