/**
 * Row layouts for training engines outside agro, built from rows whose prompt agro already rendered.
 *
 * TRL (GRPOTrainer): a `datasets`-loadable JSONL; `prompt` is the chat (system prompt with the schema,
 * the question and evidence) and every other column reaches TRL reward functions as a keyword argument
 * (db_id, gold_sql...), which is how integrations/python/agro_trl.py scores them through `agro serve`.
 *
 * verl: parquet with verl's RL dataset columns (data_source, prompt, ability, reward_model
 * {style, ground_truth}, extra_info) as in verl's examples/data_preprocess/gsm8k_multiturn_w_tool.py;
 * extra_info.tools_kwargs gives the SQL tool (integrations/python/agro_verl_tool.py) its db_id at
 * create(), and `agent_name` selects verl's tool agent loop; `tool_config.yaml` beside the parquet is the
 * tool config verl's tool agent loads (actor_rollout_ref.rollout.multi_turn.tool_config_path). Every name is
 * verl's, checked against its source at a pinned commit: docs/scaling-out.md#verl cites file and line.
 */
import { join } from 'node:path';
import { writeFileAtomic, writeJsonAtomic } from '../util/fs.ts';
import { writeParquet, type PqSchema } from './parquet.ts';

export interface ExportMessage {
  role: string;
  content: string;
}

/** One task with its prompt rendered exactly as agro's environment opens the episode. */
export interface ExportRow {
  id: string;
  dbId: string;
  question: string;
  evidence: string;
  difficulty: string;
  goldSql: string;
  /** Paths as resolved on the exporting machine; `agro serve` resolves databases by db_id itself. */
  dbPath: string;
  variantPaths: string[];
  prompt: ExportMessage[];
}

export const EXPORT_FORMATS = ['trl', 'verl'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** verl's data_source (the key its default reward dispatches on) and ability for agro rows. */
export const VERL_DATA_SOURCE = 'agro_sql';
export const VERL_ABILITY = 'sql';
/** The tool's function name, shared with integrations/python/agro_verl_tool_config.yaml. */
export const VERL_TOOL_NAME = 'run_sql';
/** verl's agent loop for multi-turn tool calls (verl/experimental/agent_loop/tool_agent_loop.py). */
export const VERL_AGENT_NAME = 'tool_agent';

/** The tool config verl's tool agent reads (verl/tools/utils/tool_registry.py initialize_tools_from_config). */
export const VERL_TOOL_CONFIG_FILE = 'tool_config.yaml';

/**
 * `tools: [{class_name, config: {type: native}, tool_schema: OpenAI function schema}]`. No server URL in it:
 * agro_verl_tool.AgroSqlTool takes `config.url` when given, else AGRO_URL on the worker, so one file serves
 * any cluster.
 */
export function verlToolConfig(): { tools: Record<string, unknown>[] } {
  return {
    tools: [
      {
        class_name: 'agro_verl_tool.AgroSqlTool',
        config: { type: 'native', timeout_s: 60 },
        tool_schema: {
          type: 'function',
          function: {
            name: VERL_TOOL_NAME,
            description: "Run one read-only SQL query on the question's SQLite database and see the first rows of the result (or the error).",
            parameters: {
              type: 'object',
              properties: { sql: { type: 'string', description: 'One SELECT (or WITH ... SELECT) statement' } },
              required: ['sql'],
            },
          },
        },
      },
    ],
  };
}

/** YAML 1.2 is a superset of JSON: the config as JSON under a comment, read by OmegaConf.load (PyYAML) as YAML. */
export function verlToolConfigYaml(): string {
  return (
    '# verl tool config (actor_rollout_ref.rollout.multi_turn.tool_config_path), written by agro export --format verl.\n' +
    '# Put integrations/python on every worker\'s PYTHONPATH and set AGRO_URL (or add "url" under config).\n' +
    JSON.stringify(verlToolConfig(), null, 2) +
    '\n'
  );
}

export function trlRecord(r: ExportRow): Record<string, unknown> {
  return {
    prompt: r.prompt,
    id: r.id,
    db_id: r.dbId,
    question: r.question,
    evidence: r.evidence,
    difficulty: r.difficulty,
    gold_sql: r.goldSql,
    db_path: r.dbPath,
    variant_paths: r.variantPaths,
  };
}

const MESSAGES: PqSchema[string] = { list: { struct: { role: 'string', content: 'string' } } };

export const VERL_SCHEMA: PqSchema = {
  data_source: 'string',
  agent_name: 'string',
  prompt: MESSAGES,
  ability: 'string',
  reward_model: { struct: { style: 'string', ground_truth: 'string' } },
  extra_info: {
    struct: {
      split: 'string',
      index: 'int64',
      id: 'string',
      db_id: 'string',
      question: 'string',
      evidence: 'string',
      difficulty: 'string',
      db_path: 'string',
      variant_paths: { list: 'string' },
      need_tools_kwargs: 'bool',
      tools_kwargs: { struct: { [VERL_TOOL_NAME]: { struct: { create_kwargs: { struct: { db_id: 'string' } } } } } },
    },
  },
};

export function verlRecord(r: ExportRow, split: string, index: number): Record<string, unknown> {
  return {
    data_source: VERL_DATA_SOURCE,
    agent_name: VERL_AGENT_NAME,
    prompt: r.prompt,
    ability: VERL_ABILITY,
    reward_model: { style: 'rule', ground_truth: r.goldSql },
    extra_info: {
      split,
      index,
      id: r.id,
      db_id: r.dbId,
      question: r.question,
      evidence: r.evidence,
      difficulty: r.difficulty,
      db_path: r.dbPath,
      variant_paths: r.variantPaths,
      need_tools_kwargs: true,
      tools_kwargs: { [VERL_TOOL_NAME]: { create_kwargs: { db_id: r.dbId } } },
    },
  };
}

export interface ExportSplits {
  train: ExportRow[];
  val: ExportRow[];
}

export interface ExportResult {
  format: ExportFormat;
  files: string[];
  train: number;
  val: number;
}

/** Writes train (and val when non-empty) files of one format into `out`, plus export.json describing them. */
export function writeExport(format: ExportFormat, out: string, splits: ExportSplits, meta: Record<string, unknown>): ExportResult {
  const files: string[] = [];
  for (const split of ['train', 'val'] as const) {
    const rows = splits[split];
    if (rows.length === 0) continue;
    if (format === 'trl') {
      const path = join(out, `${split}.jsonl`);
      writeFileAtomic(path, rows.map((r) => JSON.stringify(trlRecord(r))).join('\n') + '\n');
      files.push(path);
    } else {
      const path = join(out, `${split}.parquet`);
      writeParquet(path, VERL_SCHEMA, rows.map((r, i) => verlRecord(r, split, i)));
      files.push(path);
    }
  }
  if (format === 'verl') {
    const path = join(out, VERL_TOOL_CONFIG_FILE);
    writeFileAtomic(path, verlToolConfigYaml());
    files.push(path);
  }
  const result: ExportResult = { format, files, train: splits.train.length, val: splits.val.length };
  writeJsonAtomic(join(out, 'export.json'), { ...meta, ...result });
  return result;
}
