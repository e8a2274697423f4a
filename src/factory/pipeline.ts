/**
 * Stage 7: the factory pipeline. Runs the stages in order, counts what each kept and rejected
 * (by reason), checkpoints every stage's output to <out>/.work/<stage>.jsonl (atomically), and on
 * a rerun with the same arguments continues after the last finished stage. Final outputs are
 * written atomically: dataset.jsonl, manifest.json, variants/<db_id>/variant-N.sqlite (variant-N.pg on a server: its schema).
 *
 * The database is a SQLite file or a postgres:// URL: the stages print their SQL in its engine's dialect
 * (StageContext.dialect) and run it there. On a server the variant databases are schemas of its database
 * (augment.ts buildServerVariants), made when the URL's role may create them (else the run says so in one
 * line and goes on without them), and a URL's password is never written.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { AgroError, parseWith } from '../errors.ts';
import { introspectDatabase } from '../sql/executor.ts';
import { dialectOf } from '../sql/dialect.ts';
import { redactUrl } from '../sql/postgres.ts';
import { dbDocsSchema } from '../prompt/docs-types.ts';
import { withValueParts } from './language/value-parts.ts';
import { createExecutor } from '../sql/executor.ts';
import type { DbSchema, SqlExecutor } from '../sql/types.ts';
import { readJsonl, writeFileAtomic, writeJsonAtomic, ensureDir } from '../util/fs.ts';
import { Rng } from '../util/rng.ts';
import { alignStage } from './align.ts';
import { makeParseEnv } from './language/general-parse.ts';
import { ambiguityStage, buildServerVariants, buildVariants, dropServerVariants, variantTag } from './augment.ts';
import { canCreateSchemas } from '../sql/pg-variants.ts';
import { buildLexicon, colKey, withData, type Lexicon } from './language/names.ts';
import { llmQuestionsStage, type LlmStageStats } from './llm-questions.ts';
import { llmAuditStage } from './llm-audit.ts';
import { refineStage, type CycleLog } from './refine.ts';
import { diversityStage, selfCoverage, type Coverage } from './diversity/index.ts';
import { sqlFeaturesShared, sqlSkeleton, structureKey } from '../sql/features.ts';
import { categoryValues, longTextColumns, profileSchema, type Skipped } from './profile.ts';
import { HUMAN_SHAPES } from './shapes.ts';
import { realizeStage } from './language/realize.ts';
import { noiseStage } from './language/noise.ts';
import { buildSchemaGraph, inferForeignKeys, type SchemaGraph } from './schema-graph.ts';
import { astShape, synthesize } from './synthesize.ts';
import { silentProgress, type ProgressSink } from '../util/progress.ts';
import { toDatasetRow, type Stage, type StageContext, type SynthPair } from './types.ts';
import type { DatasetRow } from '../data/dataset-row.ts';
import { verifyStage } from './verify.ts';
import { CachingExecutor } from './exec-cache.ts';
import { LocalSqlite } from '../sql/local.ts';
import { costGate, MAX_ROWS_READ } from './cost.ts';
import { FOLLOW_UP_SHARE, followUpStage } from './follow-up.ts';
import { databaseId } from '../sql/db-id.ts';

export const factoryConfigSchema = z.object({
  db: z.string().min(1),
  out: z.string().min(1),
  /** Pairs wanted in the dataset. */
  n: z.number().int().positive().default(200),
  seed: z.number().int().nonnegative().default(0),
  variants: z.number().int().nonnegative().max(20).default(3),
  cycles: z.number().int().nonnegative().default(0),
  llmUrl: z.string().optional(),
  llmModel: z.string().optional(),
  /** Candidates synthesized per wanted pair (verification and alignment drop some). */
  oversample: z.number().positive().default(2.5),
  timeoutMs: z.number().int().positive().default(5000),
  /**
   * Rows a candidate query may read on a database with a table over 20,000 rows (cost.ts): estimated from
   * SQLite's plan, or PostgreSQL's planner cost at 0.04 per row. A query over it is dropped as too_costly.
   */
  maxRowsRead: z.number().int().positive().default(MAX_ROWS_READ),
  /** Rows per table in a variant database. */
  variantRows: z.number().int().positive().default(2000),
  /** Relative weight of each synthesis template (see TEMPLATE_NAMES); unnamed ones keep their default. */
  templateWeights: z.record(z.string(), z.number().nonnegative()).optional(),
  /** Difficulty mix for the diversity selection; when set it replaces the shape mix for the pairs beyond the cover. */
  mix: z.object({ simple: z.number(), moderate: z.number(), challenging: z.number() }).partial().optional(),
  /** Wanted share of each query shape (realism.ts queryShape keys, e.g. 'join+group+top+agg'); default: what people ask (shapes.ts). */
  shapes: z.record(z.string(), z.number().nonnegative()).optional(),
  /** Share of intent questions asked in people's variety: other frames, adjectives, values as typed, synonyms (language/). */
  people: z.number().min(0).max(1).default(0.5),
  /** Questions per query: the question and up to phrasings-1 paraphrases, each parsed back to the query. */
  phrasings: z.number().int().min(1).max(8).default(1),
  /** Share of questions given train-time noise after their round trip (case, punctuation, a typo; language/noise.ts). */
  noise: z.number().min(0).max(1).default(0),
  /** The database's documentation (src/prompt/docs.ts reads it): columns worded by their documented names, coded values by their meaning. */
  docs: dbDocsSchema.optional(),
  /**
   * Follow-up pairs, as a share of the n pairs (they take the place of as many first questions): one edit of a kept
   * query asked as the next turn of a conversation (follow-up.ts).
   */
  followUps: z.number().min(0).max(1).default(FOLLOW_UP_SHARE),
});
export type FactoryConfigInput = z.input<typeof factoryConfigSchema>;
export type FactoryConfig = z.output<typeof factoryConfigSchema>;

export interface StageReport {
  stage: string;
  in: number;
  out: number;
  rejected: Record<string, number>;
  resumed: boolean;
  seconds: number;
}

export interface Manifest {
  dbId: string;
  db: string;
  seed: number;
  args: FactoryConfig;
  stages: StageReport[];
  rejections: Record<string, Record<string, number>>;
  rows: number;
  difficulty: Record<string, number>;
  templates: Record<string, number>;
  styles: Record<string, number>;
  /** Questions by how they were worded (provenance.grammar): 'intent' as people ask, 'general' template sentences, 'llm'. Follow-ups apart. */
  grammar: Record<string, number>;
  /** Follow-up pairs by the edit they make (provenance.followUp). */
  followUps: Record<string, number>;
  coverage: Coverage;
  /** Calls and fallbacks of the LLM stages, when an endpoint was configured. */
  llm: Record<string, LlmStageStats>;
  /** Per-cycle counts of the generate-then-check refinement (stage 8). */
  refine: CycleLog[];
  variants: string[];
  schema: { tables: number; foreignKeys: number; inferredForeignKeys: number };
  skipped: Skipped[];
  /** Tables and columns no kept pair uses, each with the reason. */
  unused: Skipped[];
  /** One line saying why fewer than --n pairs were written and which stage starved; absent when --n was met. */
  shortfall?: string;
  /** Pairs the variant databases rejected that the original database alone would have accepted. */
  caughtByVariants: number;
}

export interface FactoryResult {
  manifest: Manifest;
  /** The schema's lexicon with its data (values, dates): what the questions were written and parsed with. */
  lex: Lexicon;
  rows: DatasetRow[];
  pairs: SynthPair[];
  datasetPath: string;
  manifestPath: string;
}

export interface FactoryRunOptions {
  /** Runs the queries on a server, and on SQLite files where this process cannot stop a query past its limit (sql/local.ts). */
  executor?: SqlExecutor;
  progress?: ProgressSink;
  /** Stop (as if interrupted) after this stage has been checkpointed: for tests of resume. */
  stopAfter?: string;
  /** One-line notes on what the run does differently (no variant databases on a server whose role may not create them). */
  log?: (line: string) => void;
}

function stageSeed(seed: number, name: string): number {
  return createHash('sha256').update(`${seed}:${name}`).digest().readUInt32LE(0);
}

const toJsonl = (items: unknown[]) => items.map((x) => JSON.stringify(x)).join('\n') + (items.length ? '\n' : '');

function histogram(values: string[]): Record<string, number> {
  const h: Record<string, number> = {};
  for (const v of values) h[v] = (h[v] ?? 0) + 1;
  return h;
}

export class FactoryStopped extends Error {}

/** Table and column names a query uses (FROM, JOIN and every column reference, subqueries included). */
function usedNames(node: unknown, out: Set<string>): void {
  if (Array.isArray(node)) node.forEach((n) => usedNames(n, out));
  else if (node && typeof node === 'object') {
    const o = node as Record<string, unknown>;
    if (o.kind === 'col') out.add(colKey(o.table as string, o.column as string));
    if (o.kind === 'select') out.add((o.from as { table: string }).table);
    if (typeof o.table === 'string' && typeof o.alias === 'string' && !('kind' in o)) out.add(o.table);
    for (const v of Object.values(o)) usedNames(v, out);
  }
}

/** The tables and columns (colKey) a pair's query uses. */
export function schemaUse(p: SynthPair): string[] {
  const used = new Set<string>();
  usedNames(p.ast, used);
  return [...used];
}

export function unusedSchema(schema: DbSchema, items: SynthPair[], skipped: Skipped[]): Skipped[] {
  const used = new Set<string>();
  for (const p of items) usedNames(p.ast, used);
  const why = new Map(skipped.map((s) => [s.what, s.why]));
  const out: Skipped[] = [];
  for (const t of schema.tables) {
    const tw = `${t.kind === 'view' ? 'view' : 'table'} ${t.name}`;
    if (!used.has(t.name)) {
      out.push({ what: tw, why: why.get(tw) ?? 'usable, but no kept pair drew it (a larger --n reaches more of the schema)' });
      continue;
    }
    for (const c of t.columns) {
      if (used.has(colKey(t.name, c.name))) continue;
      const cw = `column ${t.name}.${c.name}`;
      out.push({ what: cw, why: why.get(cw) ?? (c.pk > 0 && t.primaryKey.length === 1 ? 'a surrogate key: joins and tie-breaks only' : 'usable, but no kept pair drew it') });
    }
  }
  return out;
}

/** Why fewer than `want` pairs came out: the stage that lost the most, with its main reasons. */
export function shortfallLine(want: number, got: number, stages: StageReport[], skipped: Skipped[]): string | undefined {
  if (got >= want) return undefined;
  const db = skipped.find((s) => s.what === 'database');
  if (db) return `wrote ${got} of ${want} pairs: ${db.why}`;
  const worst = [...stages].filter((s) => s.in > 0).sort((a, b) => b.in - b.out - (a.in - a.out))[0];
  if (!worst) return `wrote ${got} of ${want} pairs: no table could be synthesized from (see skipped)`;
  const reasons = Object.entries(worst.rejected)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 3)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  return `wrote ${got} of ${want} pairs: ${worst.stage} starved it, keeping ${worst.out} of ${worst.in}${reasons ? ` (${reasons})` : ''}`;
}

/** Rows per table the factory profiles columns on (roles, distinct counts): a sample, so a million-row table is not scanned once per column. */
export const PROFILE_ROWS = 20_000;

/** The schema and profile of a SQLite file or a PostgreSQL database (read over the network for a URL). */
export async function loadSchema(db: string): Promise<DbSchema> {
  const sqlite = dialectOf(db) === 'sqlite';
  if (sqlite && !existsSync(db)) throw new AgroError('not_found', `database not found: ${db}`);
  try {
    return await introspectDatabase(db, { statsRowLimit: PROFILE_ROWS });
  } catch (e) {
    if (e instanceof AgroError) throw e;
    throw new AgroError('invalid_input', `cannot read ${sqlite ? db : redactUrl(db)} as a ${sqlite ? 'SQLite' : 'PostgreSQL'} database: ${(e as Error).message}`);
  }
}

/** A finished stage's checkpoint, or null when it is missing, unreadable or holds fewer items than its report says. */
function readCheckpoint(file: string, meta: string): { report: StageReport; items: SynthPair[] } | null {
  if (!existsSync(file) || !existsSync(meta)) return null;
  try {
    const report = JSON.parse(readFileSync(meta, 'utf8')) as StageReport;
    const items = readJsonl<SynthPair>(file);
    return items.length === report.out ? { report, items } : null;
  } catch {
    return null;
  }
}

/**
 * What the factory knows of a database before it writes anything: the schema graph (declared keys, or
 * inferred ones when none are declared), the column profiles, and the lexicon with its category values and
 * dates. Shared with the human gold SQL's realization (gold.ts), so both speak the same words.
 */
export async function databaseLanguage(
  schema: DbSchema,
  executor: SqlExecutor,
  timeoutMs: number,
  docs?: FactoryConfig['docs'],
): Promise<{ graph: SchemaGraph; inferred: number; profiles: ReturnType<typeof profileSchema>['profiles']; skipped: Skipped[]; lex: Lexicon; values: Map<string, string[]> }> {
  let graph: SchemaGraph = buildSchemaGraph(schema);
  let inferred = 0;
  if (graph.edges.length === 0) {
    const fks = await inferForeignKeys(schema, executor, timeoutMs);
    inferred = fks.length;
    graph = buildSchemaGraph(schema, fks);
  }
  const names = buildLexicon(schema, docs);
  const { profiles, skipped } = profileSchema(schema, graph, names, await longTextColumns(schema, executor, timeoutMs));
  // Questions may name a category by its value ("Operational plants in France"): the lexicon learns the values.
  const dates = [...profiles.values()].flatMap((p) => p.columns.filter((c) => c.role === 'date').map((c) => colKey(c.table, c.column)));
  const values = await categoryValues(schema, profiles, executor, timeoutMs, PROFILE_ROWS);
  // A long value named by a few of its words (language/value-parts.ts), where a LIKE on them finds it alone.
  const lex = await withValueParts(withData(names, values, dates, docs), values, schema.path, executor, timeoutMs);
  return { graph, inferred, profiles, skipped, lex, values };
}

export async function runFactory(input: FactoryConfigInput, opts: FactoryRunOptions = {}): Promise<FactoryResult> {
  const cfg = parseWith(factoryConfigSchema, input, 'factory config', 'usage');
  const dialect = dialectOf(cfg.db);
  const dbPath = dialect === 'postgres' ? cfg.db : resolve(cfg.db);
  // What is written (args.json, manifest.json) names a server without its password.
  const dbShown = dialect === 'postgres' ? redactUrl(dbPath) : dbPath;
  const schema = await loadSchema(dbPath);
  const tables = schema.tables.filter((t) => t.kind === 'table');
  if (!tables.some((t) => t.rowCount > 0)) {
    const why = tables.length === 0 ? 'has no tables' : `has ${tables.length} table${tables.length === 1 ? '' : 's'} but no rows`;
    throw new AgroError('invalid_input', `${dbShown} ${why}: nothing to synthesize from`);
  }
  const dbId = schema.dbId || databaseId(dbPath);
  const out = resolve(cfg.out);
  const work = join(out, '.work');
  const argsKey = JSON.stringify({ ...cfg, db: dbShown, out });
  const argsPath = join(work, 'args.json');
  const variantDir = join(out, 'variants', dbId);
  if (existsSync(argsPath) && readFileSync(argsPath, 'utf8').trim() !== argsKey) {
    rmSync(work, { recursive: true, force: true });
    // A server's variants are schemas: the ones this folder names go with it.
    if (dialect === 'postgres') await dropServerVariants(dbPath, variantDir, opts.log);
    rmSync(variantDir, { recursive: true, force: true });
  }
  ensureDir(work);
  if (!existsSync(argsPath)) writeFileAtomic(argsPath, argsKey + '\n');

  const ownExecutor = !opts.executor;
  // The factory's queries are its own (verified templates): they may run as the owner (it makes variant schemas).
  const pool = opts.executor ?? createExecutor({ size: 2, allowPrivilegedRole: true });
  // A SQLite file's queries run in this process where a query past its limit can be stopped here
  // (sql/local.ts): the factory's own SQL, tens of thousands of small queries, without a message round trip each.
  const local = dialect === 'sqlite' ? LocalSqlite.create(pool) : null;
  // The databases do not change during a run: a query asked again is answered from memory.
  const executor = new CachingExecutor(local ?? pool);
  const progress = opts.progress ?? silentProgress;
  const rejections: Record<string, Record<string, number>> = {};
  const reports: StageReport[] = [];
  const cost = costGate(dbPath, schema, cfg.maxRowsRead);
  try {
    // Stage 1: the schema graph, the column profiles and the lexicon.
    const { graph, inferred, profiles, skipped, lex, values } = await databaseLanguage(schema, executor, cfg.timeoutMs, cfg.docs);

    const ctxFor = (name: string, variants: string[]): StageContext => {
      const counts = (rejections[name] ??= {});
      return {
        dbId,
        dbPath,
        dialect,
        schema,
        executor,
        rng: new Rng(stageSeed(cfg.seed, name)),
        progress,
        variants,
        timeoutMs: cfg.timeoutMs,
        ...(cost.tooCostly ? { tooCostly: cost.tooCostly } : {}),
        reject: (_item, reason) => {
          counts[reason] = (counts[reason] ?? 0) + 1;
        },
      };
    };
    const checkpoint = async (name: string, inputCount: number, variants: string[], run: (ctx: StageContext) => Promise<SynthPair[]>): Promise<SynthPair[]> => {
      const file = join(work, `${name}.jsonl`);
      const meta = join(work, `${name}.json`);
      const saved = readCheckpoint(file, meta);
      if (saved) {
        rejections[name] = saved.report.rejected;
        reports.push({ ...saved.report, resumed: true });
        return saved.items;
      }
      const t0 = performance.now();
      const ctx = ctxFor(name, variants);
      const items = await run(ctx);
      const report: StageReport = { stage: name, in: inputCount, out: items.length, rejected: rejections[name] ?? {}, resumed: false, seconds: (performance.now() - t0) / 1000 };
      // No fsync per checkpoint (it cost more than some stages): readCheckpoint redoes a stage whose files a power loss cut short.
      writeFileAtomic(file, toJsonl(items), { durable: false });
      writeFileAtomic(meta, JSON.stringify(report, null, 2) + '\n', { durable: false });
      reports.push(report);
      if (opts.stopAfter === name) throw new FactoryStopped(`stopped after ${name}`);
      return items;
    };
    const asStage = (s: Stage<SynthPair, SynthPair>, items: SynthPair[], variants: string[]) => checkpoint(s.name, items.length, variants, (ctx) => s.run(items, ctx));

    // The variants come first: synthesis probes them too, so a ranked query has no tie at its cut on any database.
    progress.start('variants', cfg.variants);
    // Variants are SQLite files made from the database's rows, or on a server schemas of its database (augment.ts).
    const variantOpts = { count: cfg.variants, seed: cfg.seed, dir: variantDir, maxRowsPerTable: cfg.variantRows };
    let variants: string[] = [];
    if (cfg.variants > 0 && profiles.size && dialect === 'sqlite') variants = await buildVariants(dbPath, schema, graph, variantOpts);
    else if (cfg.variants > 0 && profiles.size) {
      const may = await canCreateSchemas(dbPath);
      if (may.ok) variants = await buildServerVariants(dbPath, schema, graph, { ...variantOpts, tag: variantTag(out, dbId), ...(opts.log ? { log: opts.log } : {}) });
      else opts.log?.(`no variant databases on PostgreSQL (${cfg.variants} asked; ${may.why}): pairs are checked on ${dbShown} alone`);
    }
    progress.tick(variants.length);
    progress.stop();
    const want = Math.ceil(cfg.n * cfg.oversample);
    let items = profiles.size ? await checkpoint('synthesize', want, variants, (ctx) => synthesize(ctx, { graph, profiles }, want, cfg.templateWeights, cfg.shapes ?? HUMAN_SHAPES)) : [];
    items = await asStage(verifyStage, items, []);
    items = await asStage(ambiguityStage(), items, variants);
    items = await asStage(realizeStage(lex, { people: cfg.people, phrasings: cfg.phrasings }), items, variants);
    items = await asStage(alignStage(makeParseEnv(schema, graph, lex)), items, variants);
    const llm: Record<string, LlmStageStats> = {};
    if (cfg.llmUrl && cfg.llmModel) {
      // The round trip has checked the built-in question; the LLM rewrites it, and the LLM judge audits the rewrite.
      const rewrite = llmQuestionsStage({ llm: { baseUrl: cfg.llmUrl, model: cfg.llmModel } });
      items = await asStage(rewrite, items, variants);
      llm.questions = rewrite.stats;
      const audit = llmAuditStage({ url: cfg.llmUrl, model: cfg.llmModel, seed: cfg.seed });
      items = await asStage(audit, items, variants);
      llm.audit = audit.stats;
    }
    items = await asStage(diversityStage({ size: cfg.n, mix: cfg.mix, cover: (p) => astShape(p.ast), coverMix: cfg.shapes ?? HUMAN_SHAPES, coverItems: schemaUse }), items, variants);
    let refineLog: CycleLog[] = [];
    if (cfg.cycles > 0) {
      const refine = refineStage({ cycles: cfg.cycles, llmUrl: cfg.llmUrl, llmModel: cfg.llmModel, schema, graph });
      items = await asStage(refine, items, variants);
      refineLog = refine.log;
    }
    // Follow-ups of the chosen pairs, each checked as they were; their first turns are kept.
    if (cfg.followUps > 0) items = await asStage(followUpStage({ lex, profiles, values }, cfg.followUps), items, variants);
    // Noise last: every check above read the clean question.
    if (cfg.noise > 0) items = await asStage(noiseStage(cfg.noise), items, variants);

    const rows = items.map((p, i) => toDatasetRow(p, i));
    const datasetPath = join(out, 'dataset.jsonl');
    const manifestPath = join(out, 'manifest.json');
    // Coverage of the final set: distinct SQL skeletons (literals masked) and structure-feature combinations.
    const cov = selfCoverage(items.length, {
      skeletons: items.map((p) => sqlSkeleton(p.sql)),
      structures: items.map((p) => structureKey(sqlFeaturesShared(p.sql))),
    });
    const caught = Object.entries(rejections.augment ?? {})
      .filter(([r]) => r.endsWith('_on_variant') || r.startsWith('variant_'))
      .reduce((a, [, n]) => a + n, 0);
    const manifest: Manifest = {
      dbId,
      db: dbShown,
      seed: cfg.seed,
      args: { ...cfg, db: dialect === 'postgres' ? dbShown : cfg.db },
      stages: reports,
      rejections,
      rows: rows.length,
      difficulty: histogram(items.map((p) => p.difficulty)),
      templates: histogram(items.map((p) => p.provenance.template ?? 'unknown')),
      styles: histogram(items.map((p) => p.style)),
      grammar: histogram(items.filter((p) => !p.provenance.followUp).map((p) => p.provenance.grammar ?? 'general')),
      followUps: histogram(items.flatMap((p) => (p.provenance.followUp ? [p.provenance.followUp] : []))),
      coverage: cov,
      llm,
      refine: refineLog,
      variants: variants.map(redactUrl),
      schema: { tables: schema.tables.length, foreignKeys: graph.edges.length, inferredForeignKeys: inferred },
      skipped,
      unused: unusedSchema(schema, items, skipped),
      shortfall: shortfallLine(cfg.n, rows.length, reports, skipped),
      caughtByVariants: caught,
    };
    writeFileAtomic(datasetPath, toJsonl(rows));
    writeJsonAtomic(manifestPath, manifest);
    return { manifest, lex, rows, pairs: items, datasetPath, manifestPath };
  } finally {
    await cost.close();
    await executor.close();
    await local?.close();
    if (ownExecutor) await pool.close();
  }
}
