import type { ExecErrorKind, Row } from './types.ts';

export interface QueryMessage {
  dbPath: string;
  sql: string;
  maxRows: number;
  maxBytes: number;
  safeIntegers: boolean;
  timeoutMs?: number;
  cpuMs?: number;
}

export type QueryReply =
  | { ok: true; columns: string[]; rows: Row[]; truncated: boolean; truncatedBy?: 'rows' | 'bytes'; bytes: number }
  | { ok: false; error: ExecErrorKind; message: string }
  | { ok: false; error: 'timeout'; limit: 'cpu' | 'wall' };

export declare function makeRunner(limitToken: string): { answer(msg: QueryMessage, t0: number): QueryReply; close(): void };
