"""agro_env (TRL environment_factory) against a real agro server; run by test/integrations/agro-env.test.ts.

    AGRO_URL=... AGRO_ROWS=train.jsonl AGRO_TOKENIZER=models/base/tokenizer.json AGRO_OUT=out.json python test_agro_env.py

Needs trl and transformers (the venv of npm run e2e:trl): the checks are the ones TRL 1.13's GRPOTrainer makes
of an environment and a tokenizer before it trains (trl/trainer/grpo_trainer.py, trl/chat_template_utils.py).
Writes each scored episode (turns, tool calls, reward) to AGRO_OUT for the node test to score again with agro.
"""
import inspect
import json
import os
import sys
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from agro_env import AgroEnv, agro_env_rows, episode_turns, finish_episodes, prepare_tokenizer  # noqa: E402

GOLD = "SELECT name FROM singer WHERE age > 40"
WRONG = "SELECT name FROM singer WHERE singer_id > 1"  # right on the database, wrong on its variant
REWARDS = [{"name": "execution", "weight": 1}, {"name": "format", "weight": 0.25}, {"name": "sql_overlap", "weight": 0.25}]
EPISODES: list = []


def rows() -> list[dict]:
    return [json.loads(line) for line in Path(os.environ["AGRO_ROWS"]).read_text().splitlines() if line]


def tool_call(sql: str) -> dict:
    return {"type": "function", "function": {"name": "execute_sql", "arguments": {"sql": sql}}}


class Tokenizer(unittest.TestCase):
    def setUp(self):
        from transformers import PreTrainedTokenizerFast

        self.tok = prepare_tokenizer(PreTrainedTokenizerFast(tokenizer_file=os.environ["AGRO_TOKENIZER"], bos_token="<|bos|>", eos_token="<|end|>", pad_token="<|pad|>"))

    def test_trl_accepts_it(self):
        from trl.chat_template_utils import is_chat_template_prefix_preserving, supports_tool_calling

        self.assertTrue(supports_tool_calling(self.tok))
        self.assertTrue(is_chat_template_prefix_preserving(self.tok))

    def test_agro_layout(self):
        msgs = [
            {"role": "system", "content": "S"},
            {"role": "user", "content": "Q"},
            {"role": "assistant", "content": "<think>look</think>", "tool_calls": [tool_call("SELECT 1")]},
            {"role": "tool", "name": "execute_sql", "content": "1"},
            {"role": "assistant", "content": "<think>ok</think><answer>SELECT 1</answer>"},
        ]
        text = self.tok.apply_chat_template(msgs, tokenize=False)
        self.assertEqual(text, "<|bos|><|system|>S<|end|><|user|>Q<|end|><|assistant|><think>look</think><sql>SELECT 1</sql><|end|>"
                               "<|tool|>1<|end|><|assistant|><think>ok</think><answer>SELECT 1</answer><|end|>")

    def test_parses_sql_as_the_tool_call(self):
        from trl.chat_template_utils import parse_response

        prefix = self.tok.apply_chat_template([{"role": "user", "content": "Q"}], add_generation_prompt=True, tokenize=True, return_dict=False)
        ids = self.tok("<think>a</think><sql>SELECT name FROM singer</sql><|end|>", add_special_tokens=False)["input_ids"]
        m = parse_response(self.tok, ids, prefix=prefix)
        self.assertEqual(m["tool_calls"], [tool_call("SELECT name FROM singer")])
        self.assertEqual(episode_turns([m]), (["<think>a</think><sql>SELECT name FROM singer</sql>"], 1))
        ids = self.tok("<think>a</think><answer>SELECT 1</answer><|end|>", add_special_tokens=False)["input_ids"]
        self.assertNotIn("tool_calls", parse_response(self.tok, ids, prefix=prefix))


class Environment(unittest.TestCase):
    def test_tools_as_trl_sees_them(self):
        from transformers.utils import get_json_schema

        env = AgroEnv()
        # grpo_trainer.py: public methods but reset/get_reward are the tools; get_json_schema makes their schema.
        tools = [n for n, _ in inspect.getmembers(env, predicate=inspect.ismethod) if n not in ("reset", "get_reward") and not n.startswith("_")]
        self.assertEqual(tools, ["execute_sql"])
        fn = get_json_schema(env.execute_sql)["function"]
        self.assertEqual(fn["parameters"]["required"], ["sql"])
        self.assertEqual(fn["parameters"]["properties"]["sql"]["type"], "string")

    def episode(self, row: dict, sqls: list[str], answer: str) -> AgroEnv:
        env = AgroEnv(rewards=REWARDS)
        blank = agro_env_rows([row])[0]
        opening = env.reset(**blank)
        self.assertEqual(opening, row["prompt"][-1]["content"], "reset returns the question as the export renders it")
        msgs = []
        for sql in sqls:
            obs = env.execute_sql(sql)
            msgs += [{"role": "assistant", "content": "<think>look</think>", "tool_calls": [tool_call(sql)]}, {"role": "tool", "name": "execute_sql", "content": obs}]
        msgs.append({"role": "assistant", "content": f"<think>ok</think><answer>{answer}</answer>"})
        self.assertEqual(finish_episodes([msgs], [env]), [None])
        EPISODES.append({"db_id": row["db_id"], "question": row["question"], "gold_sql": row["gold_sql"], "turns": env.turns, "tool_calls": env.tool_calls,
                         "observations": env.observations, "total": env.get_reward(), "parts": env.reward_parts})
        return env

    def test_reward_on_the_database_and_its_variant(self):
        row = next(r for r in rows() if r["gold_sql"] == GOLD)
        right = self.episode(row, ["SELECT name, age FROM singer"], GOLD)
        self.assertIn("Bob", right.observations[0])
        self.assertEqual(right.reward_parts["execution"], 1.0)
        self.assertTrue(right.correct)
        wrong = self.episode(row, [], WRONG)
        self.assertEqual(wrong.reward_parts["execution"], 0.0)  # the variant database catches it
        self.assertEqual(set(wrong.reward_parts), {"execution", "format", "sql_overlap"})
        self.assertAlmostEqual(wrong.get_reward(), 0.25 * wrong.reward_parts["format"] + 0.25 * wrong.reward_parts["sql_overlap"])

    def test_a_foreign_prompt_is_refused(self):
        row = rows()[0]
        bad = agro_env_rows([{**row, "prompt": [{"role": "system", "content": "another prompt"}, row["prompt"][-1]]}])[0]
        with self.assertRaises(ValueError):
            AgroEnv().reset(**bad)

    def test_reward_needs_the_finished_episode(self):
        env = AgroEnv()
        env.reset(**agro_env_rows([rows()[0]])[0])
        with self.assertRaises(RuntimeError):
            env.get_reward()


if __name__ == "__main__":
    prog = unittest.main(exit=False)
    Path(os.environ["AGRO_OUT"]).write_text(json.dumps(EPISODES))
    sys.exit(0 if prog.result.wasSuccessful() else 1)
