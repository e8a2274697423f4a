/**
 * `agro export --format verl` against the names verl reads, field by field. verl cannot be installed here, so
 * each name below was read in verl's source at commit b178a3cd56f58b2d502255daba591e92833930a7 (file:line in
 * docs/scaling-out.md#verl): the parquet columns RLHFDataset, the agent loop and the reward managers take, and
 * the tool config keys of tool_registry.initialize_tools_from_config with schemas.OpenAIFunctionToolSchema.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readParquet } from '../../src/data/parquet.ts';
import { makeEnvFixture } from '../support/env-server.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const fx = makeEnvFixture();
after(() => rmSync(fx.dir, { recursive: true, force: true }));

/** The YAML the export wrote, read as verl's OmegaConf.load would: here its JSON body (YAML 1.2 ⊃ JSON) under comments. */
function readToolConfig(path: string): Record<string, unknown> {
  const text = readFileSync(path, 'utf8');
  const body = text.split('\n').filter((l) => !l.startsWith('#')).join('\n');
  return JSON.parse(body) as Record<string, unknown>;
}

const keys = (o: unknown): string[] => Object.keys(o as object).sort();

test('agro export --format verl: the parquet columns and the tool config are the names verl reads', async () => {
  const data = join(fx.dir, 'q.json');
  writeFileSync(data, JSON.stringify([
    { db_id: 'concert', question: 'How many singers?', SQL: 'SELECT COUNT(*) FROM singer' },
    { db_id: 'club', question: 'How many members?', SQL: 'SELECT COUNT(*) FROM member' },
  ]));
  const out = join(fx.dir, 'verl');
  const r = spawnSync(process.execPath, [join(ROOT, 'bin/agro.js'), 'export', '--format', 'verl', '--data', data, '--db-root', fx.dbRoot, '--out', out, '--val', '0', '--json'], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.ok((JSON.parse(r.stdout) as { files: string[] }).files.includes(join(out, 'tool_config.yaml')), r.stdout);

  const rows = await readParquet(join(out, 'train.parquet'));
  assert.equal(rows.length, 2);
  for (const row of rows) {
    // agent_loop.py: non_tensor_batch["agent_name"] picks the registered loop; tool_agent_loop.py registers "tool_agent".
    assert.equal(row.agent_name, 'tool_agent');
    // rl_dataset.py: prompt_key defaults to "prompt", a list of chat messages handed on as raw_prompt (return_raw_chat).
    const prompt = row.prompt as { role: string; content: string }[];
    assert.deepEqual(prompt.map((m) => keys(m)), prompt.map(() => ['content', 'role']));
    assert.deepEqual(prompt.map((m) => m.role), ['system', 'user']);
    // reward managers: non_tensor_batch["data_source"] and ["reward_model"]["ground_truth"].
    assert.equal(typeof row.data_source, 'string');
    assert.equal(typeof (row.reward_model as { ground_truth: unknown }).ground_truth, 'string');
    // rl_dataset.py: extra_info.index, .tools_kwargs, .need_tools_kwargs; tool_agent_loop._call_tool:
    // tools_kwargs[<tool name>]["create_kwargs"] goes to tool.create().
    const x = row.extra_info as Record<string, unknown>;
    assert.equal(typeof x.index, 'bigint');
    assert.equal(x.need_tools_kwargs, true);
    assert.deepEqual(x.tools_kwargs, { run_sql: { create_kwargs: { db_id: x.db_id } } });
  }

  const cfg = readToolConfig(join(out, 'tool_config.yaml'));
  assert.deepEqual(keys(cfg), ['tools']);
  const tools = cfg.tools as { class_name: string; config: Record<string, unknown>; tool_schema: Record<string, unknown> }[];
  assert.equal(tools.length, 1);
  const [tool] = tools;
  // tool_registry.py: tool_config.class_name, ToolType(tool_config.config.type) in {native, mcp}, tool_config.tool_schema.
  assert.deepEqual(keys(tool), ['class_name', 'config', 'tool_schema']);
  assert.ok(['native', 'mcp'].includes(tool.config.type as string));
  // schemas.py: OpenAIFunctionToolSchema {type, function: {name, description, parameters: {type, properties, required}, strict}}.
  assert.deepEqual(keys(tool.tool_schema), ['function', 'type']);
  assert.equal(tool.tool_schema.type, 'function');
  const fn = tool.tool_schema.function as { name: string; description: string; parameters: { type: string; properties: Record<string, Record<string, unknown>>; required: string[] } };
  assert.deepEqual(keys(fn), ['description', 'name', 'parameters']);
  assert.deepEqual(keys(fn.parameters), ['properties', 'required', 'type']);
  assert.equal(fn.parameters.type, 'object');
  for (const p of Object.values(fn.parameters.properties)) for (const k of Object.keys(p)) assert.ok(['type', 'description', 'enum'].includes(k), k);
  assert.ok(fn.parameters.required.every((k) => k in fn.parameters.properties));
  // The rows' tools_kwargs key is the function's name; the class is the one integrations/python defines.
  assert.equal(fn.name, 'run_sql');
  const [mod, cls] = tool.class_name.split('.');
  assert.match(readFileSync(join(ROOT, 'integrations/python', `${mod}.py`), 'utf8'), new RegExp(`^class ${cls}\\(BaseTool\\)`, 'm'));
  // The hand-written config in integrations/python names the same class and function.
  const handWritten = readFileSync(join(ROOT, 'integrations/python/agro_verl_tool_config.yaml'), 'utf8');
  assert.ok(handWritten.includes(`class_name: "${tool.class_name}"`) && handWritten.includes(`name: "${fn.name}"`));
});
