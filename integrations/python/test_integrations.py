"""Checks agro's Python glue against a running agro environment server, with the standard library only.

verl cannot be installed here, so its interfaces are reproduced from its source (verl/tools/base_tool.py,
verl/tools/schemas.py, verl/experimental/agent_loop/tool_agent_loop.py `_call_tool`,
verl/workers/reward_manager/naive.py and batch.py) and the glue is driven the way verl drives it.
TRL's reward-function calling convention (GRPOTrainer._calculate_rewards) is reproduced the same way;
npm run e2e:trl runs the real TRL.

Run by test/integrations/python.test.ts with AGRO_URL (server over the test fixture: db `concert`, whose
variant makes `singer_id > 1` wrong) and AGRO_TEST_ROWS (verl rows read back from an exported parquet).
"""
import asyncio
import json
import os
import re
import sys
import types
import unittest
from pathlib import Path
from uuid import uuid4

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def install_verl_interfaces() -> None:
    """verl.tools.base_tool.BaseTool and verl.tools.schemas as verl defines them (pydantic left out)."""
    verl = types.ModuleType("verl")
    tools = types.ModuleType("verl.tools")
    base_tool = types.ModuleType("verl.tools.base_tool")
    schemas = types.ModuleType("verl.tools.schemas")

    class ToolResponse:
        def __init__(self, text=None, image=None, video=None):
            if image is not None and not isinstance(image, list):
                raise ValueError("Image must be a list")
            self.text, self.image, self.video = text, image, video

    class _Fn:
        def __init__(self, d):
            self.name, self.description, self.parameters = d["name"], d.get("description", ""), d["parameters"]

    class OpenAIFunctionToolSchema:
        def __init__(self, d):
            self.type = d["type"]
            self.function = _Fn(d["function"])

    class BaseTool:
        def __init__(self, config, tool_schema):
            self.config = config
            self.name = tool_schema.function.name
            self.tool_schema = tool_schema

        def get_openai_tool_schema(self):
            return self.tool_schema

        async def create(self, instance_id=None, **kwargs):
            return (instance_id or str(uuid4())), ToolResponse()

        async def execute(self, instance_id, parameters, **kwargs):
            return ToolResponse(text="Updated the tool state."), 0.0, {}

        async def calc_reward(self, instance_id, **kwargs):
            return 0.0

        async def release(self, instance_id, **kwargs):
            pass

    schemas.ToolResponse = ToolResponse
    schemas.OpenAIFunctionToolSchema = OpenAIFunctionToolSchema
    base_tool.BaseTool = BaseTool
    for name, mod in [("verl", verl), ("verl.tools", tools), ("verl.tools.base_tool", base_tool), ("verl.tools.schemas", schemas)]:
        sys.modules[name] = mod


install_verl_interfaces()

import agro_trl  # noqa: E402
import agro_verl  # noqa: E402
import agro_verl_tool  # noqa: E402
from agro_client import AgroClient, AgroError  # noqa: E402
from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse  # noqa: E402

GOLD = "SELECT name FROM singer WHERE age > 40"
ROWS = json.loads(Path(os.environ["AGRO_TEST_ROWS"]).read_text()) if os.environ.get("AGRO_TEST_ROWS") else []


def answer(sql: str) -> str:
    return f"<think>ok</think>\n<answer>{sql}</answer>"


def tool_schema_from_yaml() -> tuple[str, dict]:
    """class_name and the function schema of agro_verl_tool_config.yaml (read with a regex: no YAML parser in the stdlib)."""
    text = (HERE / "agro_verl_tool_config.yaml").read_text()
    class_name = re.search(r'class_name:\s*"([^"]+)"', text).group(1)
    name = re.search(r'\bname:\s*"([^"]+)"', text).group(1)
    required = re.search(r"required:\s*\[([^\]]*)\]", text).group(1)
    return class_name, {"type": "function", "function": {"name": name, "description": "", "parameters": {"type": "object", "properties": {"sql": {"type": "string"}}, "required": [s.strip().strip('"') for s in required.split(",")]}}}


async def call_tool_like_verl(tool, tools_kwargs: dict, tool_name: str, arguments: str):
    """verl/experimental/agent_loop/tool_agent_loop.py ToolAgentLoop._call_tool, minus its logging."""
    instance_id = None
    try:
        tool_args = json.loads(arguments)
        kwargs = tools_kwargs.get(tool_name, {})
        instance_id, _ = await tool.create(create_kwargs=kwargs.get("create_kwargs", {}))
        response, reward, res = await tool.execute(instance_id, tool_args, agent_data=None)
    finally:
        if tool and instance_id:
            await tool.release(instance_id)
    return response, reward, res


class VerlReward(unittest.TestCase):
    def test_naive_manager_call(self):
        extra = {"db_id": "concert", "split": "train", "index": 0}
        right = agro_verl.compute_score(data_source="agro_sql", solution_str="<think>x</think><sql>SELECT 1</sql><observation>1</observation>" + answer(GOLD), ground_truth=GOLD, extra_info=extra)
        self.assertEqual(right["score"], 1.0)
        self.assertEqual(right["acc"], 1.0)
        wrong = agro_verl.compute_score(data_source="agro_sql", solution_str=answer("SELECT name FROM singer WHERE singer_id > 1"), ground_truth=GOLD, extra_info=extra)
        self.assertEqual(wrong["score"], 0.0)
        none = agro_verl.compute_score(data_source="agro_sql", solution_str="I think it is Bob.", ground_truth=GOLD, extra_info=extra)
        self.assertEqual(none["score"], 0.0)

    def test_batch_manager_call_with_reward_kwargs(self):
        extra = {"db_id": "concert"}
        out = agro_verl.compute_score_batch(
            data_sources=["agro_sql"] * 2,
            solution_strs=[answer(GOLD), answer("SELECT name FROM singer")],
            ground_truths=[GOLD, GOLD],
            extra_infos=[extra, extra],
            rewards=[{"name": "execution", "weight": 1}, {"name": "sql_overlap", "weight": 0.5}],
        )
        self.assertEqual([o["execution"] for o in out], [1.0, 0.0])
        self.assertAlmostEqual(out[0]["score"], 1.5)
        self.assertTrue(0 < out[1]["sql_overlap"] < 1)
        # verl keeps every key of every score dict: the keys must be the same for all rows.
        self.assertEqual(set(out[0]), set(out[1]))

    def test_exported_rows(self):
        self.assertTrue(ROWS, "AGRO_TEST_ROWS not given")
        for row in ROWS:
            self.assertEqual(row["data_source"], "agro_sql")
            gt = row["reward_model"]["ground_truth"]
            s = agro_verl.compute_score(row["data_source"], answer(gt), gt, row["extra_info"])
            self.assertEqual(s["score"], 1.0, row["extra_info"]["id"])


class VerlTool(unittest.TestCase):
    def test_tool_agent_loop_call(self):
        class_name, schema = tool_schema_from_yaml()
        module, cls = class_name.rsplit(".", 1)
        tool_cls = getattr(__import__(module), cls)
        tool = tool_cls(config={"type": "native", "url": os.environ["AGRO_URL"]}, tool_schema=OpenAIFunctionToolSchema(schema))
        self.assertEqual(tool.name, "run_sql")
        concert = [r for r in ROWS if r["extra_info"]["db_id"] == "concert"]
        self.assertTrue(concert, "no exported row of the concert database")
        tools_kwargs = concert[0]["extra_info"]["tools_kwargs"]
        response, reward, res = asyncio.run(call_tool_like_verl(tool, tools_kwargs, "run_sql", json.dumps({"sql": "SELECT COUNT(*) FROM singer"})))
        self.assertIsInstance(response, ToolResponse)
        self.assertEqual(response.text, "COUNT(*)\n3\n(1 rows)")
        self.assertEqual(reward, 0.0)
        self.assertTrue(res["ok"])
        self.assertEqual(tool._instances, {})
        refused, _, res2 = asyncio.run(call_tool_like_verl(tool, tools_kwargs, "run_sql", json.dumps({"sql": "DELETE FROM singer"})))
        self.assertTrue(refused.text.startswith("error (refused)"))
        self.assertFalse(res2["ok"])
        bad, _, _ = asyncio.run(call_tool_like_verl(tool, tools_kwargs, "run_sql", json.dumps({"query": "SELECT 1"})))
        self.assertIn("give the query", bad.text)


class TrlGlue(unittest.TestCase):
    def test_reward_function_like_grpo_trainer(self):
        log = Path(os.environ.get("TMPDIR", "/tmp")) / f"agro-trl-log-{os.getpid()}.jsonl"
        f = agro_trl.agro_reward_func(rewards=[{"name": "execution", "weight": 1}, {"name": "format", "weight": 0.25}], log_path=str(log))
        prompts = [[{"role": "user", "content": "q"}]] * 3
        completions = [
            [{"role": "assistant", "content": answer(GOLD)}],
            [{"role": "assistant", "content": answer("SELECT name FROM singer WHERE singer_id > 1")}],
            [{"role": "assistant", "content": "no tags"}],
        ]
        out = f(prompts=prompts, completions=completions, completion_ids=[[1, 2], [3], [4]], db_id=["concert"] * 3, gold_sql=[GOLD] * 3, trainer_state=None, log_extra=None, log_metric=None)
        self.assertEqual(out, [1.25, 0.25, 0.0])
        lines = [json.loads(x) for x in log.read_text().splitlines()]
        log.unlink()
        self.assertEqual([x["total"] for x in lines], out)
        self.assertEqual(lines[0]["pred_sql"], GOLD)
        self.assertEqual(lines[0]["completion_tokens"], 2)

    def test_environment_tool(self):
        env = agro_trl.AgroSqlEnv()
        self.assertIsNone(env.reset(db_id="club", prompt=[], gold_sql="SELECT 1"))
        self.assertEqual(env.run_sql("SELECT nickname FROM member ORDER BY member_id"), "nickname\nzed\nyan\n(2 rows)")
        self.assertEqual(env.tool_calls, 1)

    def test_client_errors(self):
        c = AgroClient()
        with self.assertRaises(AgroError) as e:
            c.sql("no_such_db", "SELECT 1")
        self.assertEqual(e.exception.status, 404)
        sid = c.open_session("concert", "Singers over 40?", gold_sql=GOLD)["session_id"]
        done = c.step(sid, answer(GOLD))
        self.assertEqual(done["reward"]["total"], 1)
        c.close_session(sid)
        c.close_session(sid)  # already gone: not an error


if __name__ == "__main__":
    unittest.main(verbosity=1)
