/**
 * The dashboard's JSON contract, shared by the server (src/server/dashboard*) and the browser app (web/):
 * type-only, so the bundle imports nothing from the server.
 */

/** A SQL cell as JSON: bigints as strings, blobs as a short description. */
export type Cell = string | number | null;

export interface ResultTable {
  ok: boolean;
  columns: string[];
  rows: Cell[][];
  truncated: boolean;
  /** The executor's error kind and message when ok is false. */
  error?: string;
  message?: string;
  elapsedMs: number;
  /** The result drawn (server-side, src/chart/chart-svg.ts) when a chart says more than the table; absent for a table. */
  chart?: ResultChart;
}

/** A chart of a result: which one (src/chart/chart.ts's rule) and its SVG. */
export interface ResultChart {
  kind: 'bar' | 'line' | 'point' | 'value';
  svg: string;
}

export interface RunInfo {
  /** Path relative to the dashboard folder, '/'-separated ('.' for the folder itself). */
  id: string;
  kind: 'sft' | 'grpo' | 'run';
  /** The algorithm of a GRPO-family run. */
  algo?: string;
  steps: number;
  modifiedMs: number;
  /** Held-out evaluation written at the end of the run (eval.json). */
  hasEval: boolean;
}

/** metrics.jsonl as columns: nested objects flattened to 'rewards.execution'; missing values null. */
export interface MetricColumns {
  keys: string[];
  columns: Record<string, (number | null)[]>;
}

export interface RunDetail {
  run: RunInfo;
  metrics: MetricColumns;
  /** Bytes of metrics.jsonl read so far: where the live stream continues. */
  offset: number;
  config: unknown;
  eval: unknown;
  /** A quickstart's report.json when the run sits in one. */
  quickstart?: unknown;
}

/** Server-sent event on the run stream: rows appended to a run's metrics, or the whole file again after a rewrite (resume). */
export interface MetricsEvent {
  run: string;
  reset: boolean;
  metrics: MetricColumns;
  offset: number;
}

export interface DatasetInfo {
  id: string;
  dbId: string;
  rows: number;
}

export interface PairRow {
  question_id: number | string;
  db_id: string;
  question: string;
  evidence: string;
  SQL: string;
  difficulty: string;
  style: string;
  /** The template that built the SQL (provenance.template). */
  shape: string;
  tables: string[];
  provenance: unknown;
}

export interface ColumnCoverage {
  table: string;
  /** Pairs that read the table. */
  pairs: number;
  columns: { name: string; pairs: number }[];
}

export interface DatasetDetail {
  info: DatasetInfo;
  manifest: unknown;
  /** Whether the database the data came from is there to run queries on. */
  dbAvailable: boolean;
  /** Its id for api/sql (an absolute path, or a server's URL without its password), when available. */
  db: string | null;
  coverage: ColumnCoverage[];
  pairs: PairRow[];
}

export interface EvalInfo {
  id: string;
  /** report: an `agro eval --out` file; predictions: a quickstart predictions.json scored on demand. */
  source: 'report' | 'predictions';
  label: string;
}

export interface EvalQuestion {
  index: number;
  questionId?: number | string;
  dbId: string;
  bucket: string;
  outcome: string;
  errorKind?: string;
  message?: string;
  question?: string;
  pred: string;
  gold: string;
  /** The test-suite variant database the question failed on when it was right on the original (a server's without its password). */
  failedVariant?: string;
  /** The agent's turns when the report carries them. */
  trajectory?: { role: string; content: string }[];
}

export interface EvalDetail {
  info: EvalInfo;
  summary: {
    count: number;
    correct: number;
    accuracy: number;
    byDifficulty: { bucket: string; count: number; correct: number; accuracy: number }[];
    outcomes: Record<string, number>;
  };
  mode: string;
  questions: EvalQuestion[];
}

/** An evaluation report beside others on the same question file (the Evaluations page compares them). */
export interface EvalPeer {
  id: string;
  label: string;
  /** The policy it evaluates (a predict run's policy, else its predictions file). */
  policy: string;
  summary: EvalDetail['summary'];
}

/** Predicted and gold results of one question, rows marked where they differ (multiset difference). */
export interface CompareResult {
  pred: ResultTable;
  gold: ResultTable;
  /** Set when the rows are a variant database's (the one the question failed on; a server's without its password), not the original's. */
  variant?: string;
  /** Per row of pred: true when gold has no matching row left. */
  predExtra: boolean[];
  /** Per row of gold: true when pred has no matching row left. */
  goldMissing: boolean[];
}

export interface PolicyInfo {
  id: string;
  label: string;
  /** checkpoint, gguf or endpoint (src/agent/policies/types.ts POLICY_KINDS). */
  kind: string;
  /** A checkpoint's time (its config.json's mtime): the Playground starts with the newest. */
  modifiedMs?: number;
  /** Named on the command line (--policy, --llm-url, the served policy): the Playground starts with it. */
  given?: boolean;
}

export interface DatabaseInfo {
  id: string;
  label: string;
  /** The person's own (a --db, or a factory output's database) rather than a bundled one. */
  own?: boolean;
}

/** One step of a playground episode, streamed as it happens. */
export type PlaygroundEvent =
  | { type: 'start'; policy: string; db: string; messages: { role: string; content: string }[] }
  /** Text of the turn being written, as the policy produces it (token by token on llama.cpp). */
  | { type: 'text'; turn: number; delta: string }
  | { type: 'assistant'; turn: number; text: string; think?: string; action?: { kind: string; content: string } }
  | { type: 'observation'; turn: number; text: string; table?: ResultTable }
  /** The policy's own episode is over; its samples, the memory and question-time synthesis are being checked. */
  | { type: 'checking'; samples: number }
  | { type: 'end'; reason: string; ms?: number; answer?: string; result?: ResultTable; checked?: CheckedAnswer }
  | { type: 'error'; message: string };

/** What the answer path says of the answer it chose (absent when it is off). */
export interface CheckedAnswer {
  /** The factory's wording of the chosen SQL ("I read this as: ..."); null when it cannot read it. */
  reading: string | null;
  /** In [0, 1] (src/answer/rank.ts confidenceOf). */
  confidence: number;
  /** Below the answer path's low mark (the judge's when it gives the confidence): marked as a guess. */
  low: boolean;
  /** Where the chosen SQL came from (greedy, sample, memory, person, edit, synth). */
  sources: string[];
  /** The policy's own answer when another candidate was chosen. */
  policyAnswer?: string;
  /** Other questions the database's memory holds about the same tables (src/answer/suggest.ts). */
  suggestions: string[];
}

/** A person's correction in a database's memory, as the Playground lists it (GET api/playground/corrections). */
export interface PersonCorrection {
  id: number;
  questions: string[];
  sql: string;
  at: string | null;
  rows: number | null;
}

/** A person's answer stored in the database's memory (POST api/playground/correct). */
export interface StoredCorrection {
  /** The memory file it went into (relative to the dashboard folder when inside it). */
  memory: string;
  /** Its result on the database. */
  result: ResultTable;
}
