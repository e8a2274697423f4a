/**
 * Entity-centric multi-hop questions from a SQLite database, for training a search agent.
 *
 * Every row is an entity document (entities.ts). A question starts at an anchor entity named in the
 * question, follows foreign keys (each FK step is an entity reachable by searching for the title
 * written in the previous document), and asks either for an attribute of the last entity or for the
 * last entity itself. `hops` = documents the agent must read = FK steps (+1 when the answer is an
 * attribute, since the last entity's page must be opened too). So, with maxHops 3:
 *   1 hop:  "What is the country of the artist "Nadia Okafor"?"           (read 1 page)
 *           "What is the genre of the track "Burning Signals"?"           (read the track page)
 *   2 hops: "What is the country of the customer of Invoice 42?"          (invoice → customer)
 *   3 hops: "What is the country of the support rep of the customer of Invoice 42?"
 * A chain is skipped (and counted by reason) when the question as worded would not have one answer:
 * the anchor's or a hop's title is shared by two entities of its table, a key is null or dangles, the
 * chain revisits an entity, the answer is written in the question, or the question duplicates an
 * earlier one.
 */
import { AgroError } from '../errors.ts';
import { Rng } from '../util/rng.ts';
import { answerAliases, entityAliases } from './aliases.ts';
import type { SearchDoc } from './corpus.ts';
import {
  attributeColumns,
  entityDocument,
  follow,
  humanize,
  loadEntityGraph,
  renderCell,
  type EntityGraph,
  type EntityRow,
  type FkEdge,
} from './entities.ts';
import { normalizeAnswer } from './match.ts';
import type { Entity } from '../agent/types.ts';
import { databaseId } from '../sql/db-id.ts';

export interface SearchQuestion {
  id: string;
  dbId: string;
  question: string;
  answer: string;
  /** Other accepted forms of the answer (the answer itself is not repeated here). */
  aliases: string[];
  /** 'attribute': a column of the last entity; 'entity': the last entity's title. */
  kind: 'attribute' | 'entity';
  /** Titles from the anchor to the last entity reached, in order. */
  chain: string[];
  /** The documents of `chain`, in the same order. */
  chainDocIds: string[];
  /** Ground-truth entities for E-GRPO's match rate: every chain entity after the anchor (the anchor is in the question). */
  entities: Entity[];
  /** Documents the agent must read (= difficulty). */
  hops: number;
  split: 'train' | 'heldout';
}

export type SkipReason =
  | 'ambiguous_anchor'
  | 'ambiguous_hop'
  | 'null_or_dangling_key'
  | 'dead_end'
  | 'cycle'
  | 'no_attribute'
  | 'answer_in_question'
  | 'duplicate';

export interface SynthOptions {
  n: number;
  seed: number;
  maxHops: number;
  /** Fraction of questions marked held-out (by a hash of the question, so it is stable under n). */
  heldoutFraction: number;
  /** Sampling attempts per requested question before giving up. */
  attemptsPerQuestion: number;
  maxRowsPerTable?: number;
}

export const SYNTH_DEFAULTS: SynthOptions = { n: 500, seed: 1, maxHops: 3, heldoutFraction: 0.1, attemptsPerQuestion: 40 };

export interface SynthResult {
  dbId: string;
  docs: SearchDoc[];
  questions: SearchQuestion[];
  skipped: Partial<Record<SkipReason, number>>;
  attempts: number;
}

/** 32-bit FNV-1a: a stable hash for ids and the train/held-out split. */
export function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

/** Longest FK path (capped) that can start at each table, to know which tables can anchor k steps. */
function reachDepth(graph: EntityGraph, cap: number): Map<string, number> {
  const memo = new Map<string, number>();
  const depth = (table: string, left: number): number => {
    if (left === 0) return 0;
    const key = `${table}:${left}`;
    const hit = memo.get(key);
    if (hit !== undefined) return hit;
    let best = 0;
    for (const fk of graph.tables.get(table)!.foreignKeys) best = Math.max(best, 1 + depth(fk.toTable, left - 1));
    memo.set(key, best);
    return best;
  };
  return new Map([...graph.tables.keys()].map((t) => [t, depth(t, cap)]));
}

function isUnique(graph: EntityGraph, e: EntityRow): boolean {
  return (graph.titleCounts.get(e.table)?.get(e.title) ?? 0) === 1;
}

function anchorPhrase(graph: EntityGraph, e: EntityRow): string {
  const t = graph.tables.get(e.table)!;
  // Key-titled entities ("Invoice 42") already say what they are.
  return t.titleColumns.length === 0 ? e.title : `the ${t.noun} "${e.title}"`;
}

type Attempt = { ok: true; q: Omit<SearchQuestion, 'id' | 'split'> } | { ok: false; reason: SkipReason };

function attempt(graph: EntityGraph, rng: Rng, hops: number, depths: Map<string, number>): Attempt {
  // Choose the answer kind first: an entity answer needs `hops` FK steps, an attribute answer hops − 1.
  const canEntity = [...depths.values()].some((d) => d >= hops);
  const canAttr = hops === 1 || [...depths.values()].some((d) => d >= hops - 1);
  const kind: SearchQuestion['kind'] = canEntity && (!canAttr || rng.next() < 0.35) ? 'entity' : 'attribute';
  const steps = kind === 'entity' ? hops : hops - 1;
  const starts = [...graph.tables.keys()].filter((t) => (depths.get(t) ?? 0) >= steps && (graph.byTable.get(t)?.length ?? 0) > 0);
  if (starts.length === 0) return { ok: false, reason: 'dead_end' };
  const anchor = rng.pick(graph.byTable.get(rng.pick(starts))!);
  if (!isUnique(graph, anchor)) return { ok: false, reason: 'ambiguous_anchor' };

  const path: EntityRow[] = [anchor];
  const edges: FkEdge[] = [];
  for (let s = 0; s < steps; s++) {
    const cur = path[path.length - 1];
    const fks = graph.tables.get(cur.table)!.foreignKeys.filter((fk) => (depths.get(fk.toTable) ?? 0) >= steps - s - 1);
    if (fks.length === 0) return { ok: false, reason: 'dead_end' };
    const fk = rng.pick(fks);
    const next = follow(graph, cur, fk);
    if (!next) return { ok: false, reason: 'null_or_dangling_key' };
    if (path.some((p) => p.docId === next.docId)) return { ok: false, reason: 'cycle' };
    path.push(next);
    edges.push(fk);
  }
  // Every entity whose page must be found by its title needs a unique title; an entity answer's own
  // page is never needed (its title is read off the previous page), so it may share its title.
  const mustFind = kind === 'entity' ? path.slice(1, -1) : path.slice(1);
  if (mustFind.some((e) => !isUnique(graph, e))) return { ok: false, reason: 'ambiguous_hop' };

  let of = anchorPhrase(graph, anchor);
  const chainEdges = kind === 'entity' ? edges.slice(0, -1) : edges;
  for (const fk of chainEdges) of = `the ${fk.label} of ${of}`;
  const last = path[path.length - 1];
  let question: string;
  let answer: string;
  if (kind === 'entity') {
    const lastFk = edges[edges.length - 1];
    const who = graph.tables.get(last.table)!.person ? 'Who' : 'What';
    question = `${who} is the ${lastFk.label} of ${of}?`;
    answer = last.title;
  } else {
    const cols = attributeColumns(graph.tables.get(last.table)!).filter((c) => renderCell(last.values[c]) !== undefined);
    if (cols.length === 0) return { ok: false, reason: 'no_attribute' };
    const col = rng.pick(cols);
    question = `What is the ${humanize(col)} of ${of}?`;
    answer = renderCell(last.values[col])!;
  }
  // "What is the course id of Section CS101 / 2024-SP?" gives itself away.
  if (` ${normalizeAnswer(question)} `.includes(` ${normalizeAnswer(answer)} `)) return { ok: false, reason: 'answer_in_question' };
  const ansAliases =
    kind === 'entity' ? entityAliases(answer, graph.tables.get(last.table)!.person) : answerAliases(answer).slice(1);
  return {
    ok: true,
    q: {
      dbId: graph.dbId,
      question,
      answer,
      aliases: ansAliases,
      kind,
      chain: path.map((e) => e.title),
      chainDocIds: path.map((e) => e.docId),
      entities: path.slice(1).map((e) => {
        const aliases = entityAliases(e.title, graph.tables.get(e.table)!.person);
        return aliases.length > 0 ? { name: e.title, aliases } : { name: e.title };
      }),
      hops,
    },
  };
}

/** Entity documents and multi-hop questions for a loaded graph; deterministic for a seed. */
export function synthesizeFromGraph(graph: EntityGraph, options: Partial<SynthOptions> = {}): SynthResult {
  const opts = { ...SYNTH_DEFAULTS, ...options };
  const docs = [...graph.entities.values()].map((e) => entityDocument(graph, e));
  const rng = new Rng(opts.seed);
  const depths = reachDepth(graph, opts.maxHops);
  const questions: SearchQuestion[] = [];
  const seen = new Set<string>();
  const skipped: Partial<Record<SkipReason, number>> = {};
  const maxAttempts = opts.n * opts.attemptsPerQuestion;
  let attempts = 0;
  // Round-robin over hop counts so every difficulty is represented; a level that keeps failing is
  // dropped from the rotation after its share of attempts.
  const failures = new Map<number, number>();
  let level = 0;
  while (questions.length < opts.n && attempts < maxAttempts) {
    const live = Array.from({ length: opts.maxHops }, (_, i) => i + 1).filter(
      (h) => (failures.get(h) ?? 0) < (maxAttempts / opts.maxHops) * 0.9,
    );
    if (live.length === 0) break;
    const hops = live[level++ % live.length];
    attempts++;
    const r = attempt(graph, rng, hops, depths);
    if (!r.ok) {
      skipped[r.reason] = (skipped[r.reason] ?? 0) + 1;
      failures.set(hops, (failures.get(hops) ?? 0) + 1);
      continue;
    }
    if (seen.has(r.q.question)) {
      skipped.duplicate = (skipped.duplicate ?? 0) + 1;
      failures.set(hops, (failures.get(hops) ?? 0) + 1);
      continue;
    }
    seen.add(r.q.question);
    const h = fnv1a(`${graph.dbId}\u0000${r.q.question}`);
    questions.push({
      id: `${graph.dbId}-${h.toString(16).padStart(8, '0')}`,
      ...r.q,
      split: (fnv1a(`split:${r.q.question}`) % 10000) / 10000 < opts.heldoutFraction ? 'heldout' : 'train',
    });
  }
  return { dbId: graph.dbId, docs, questions, skipped, attempts };
}

/** Reads a database (read-only) and synthesizes its corpus and questions. */
export function synthesize(dbPath: string, options: Partial<SynthOptions> = {}): SynthResult {
  const dbId = databaseId(dbPath);
  const graph = loadEntityGraph(dbPath, dbId, { maxRowsPerTable: options.maxRowsPerTable });
  if (graph.entities.size === 0) throw new AgroError('invalid_input', `${dbPath} has no table with rows: nothing to build documents and questions from`);
  return synthesizeFromGraph(graph, options);
}
