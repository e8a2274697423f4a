"""Several agro servers and agro's multi-turn episode from Python; run by test/integrations/scaleout.test.ts.

    AGRO_URL="http://A,http://B" AGRO_KILL_PID=<pid of B> python test_scaleout.py ClientScaleOut
    AGRO_URL=... AGRO_TOKENIZER=tokenizer.json AGRO_CASE=case.json AGRO_OUT=out.json python test_scaleout.py MultiTurn

ClientScaleOut needs the standard library only; B is killed (SIGKILL) in the middle of its tests.
MultiTurn needs `transformers` (the tokenizer TRL uses) and writes the episode's ids and mask for the
node test to compare with `agro train`'s layout of the same turns (src/rl/rollout.ts replay).
"""
import json
import os
import signal
import sys
import time
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from agro_client import AgroClient, AgroError, AgroSessionLost, _slices  # noqa: E402

GOLD = "SELECT name FROM singer WHERE age > 40"
WRONG = "SELECT name FROM singer WHERE singer_id > 1"  # right on the database, wrong on its variant


def answer(sql: str) -> str:
    return f"<think>ok</think>\n<answer>{sql}</answer>"


def urls() -> list[str]:
    return [u for u in os.environ["AGRO_URL"].split(",") if u]


def batch(n: int) -> tuple[list[dict], list[float]]:
    """n reward items in a pattern a misplaced result would break: right, wrong, no answer, right on club."""
    items, expected = [], []
    for i in range(n):
        k = i % 4
        if k == 0:
            items.append({"db_id": "concert", "gold_sql": GOLD, "completion": answer(GOLD)})
            expected.append(1.0)
        elif k == 1:
            items.append({"db_id": "concert", "gold_sql": GOLD, "completion": answer(WRONG)})
            expected.append(0.0)
        elif k == 2:
            items.append({"db_id": "concert", "gold_sql": GOLD, "completion": "no tags"})
            expected.append(0.0)
        else:
            items.append({"db_id": "club", "gold_sql": "SELECT nickname FROM member", "sql": "SELECT nickname FROM member"})
            expected.append(1.0)
    return items, expected


class ClientScaleOut(unittest.TestCase):
    """Two servers; B dies between the tests' phases (the tests run in name order)."""

    @classmethod
    def setUpClass(cls):
        cls.a, cls.b = urls()
        cls.client = AgroClient(timeout=20, down_s=60)

    def test_1_spread_and_sessions_stay_home(self):
        c = self.client
        items, expected = batch(64)
        out = c.reward(items)
        self.assertEqual([r["total"] for r in out["results"]], expected)
        self.assertEqual(out["labels"], ["execution"])
        self.assertGreater(c.answered[self.a], 0)
        self.assertGreater(c.answered[self.b], 0)
        # OTC groups are never cut across servers.
        grouped = [{**it, "group": (i * 7) % 11} for i, it in enumerate(items)]
        slices = _slices(grouped, 2)
        self.assertEqual(len(slices), 2)
        self.assertEqual(sorted(i for sl in slices for i in sl), list(range(len(items))))
        self.assertFalse({grouped[i]["group"] for i in slices[0]} & {grouped[i]["group"] for i in slices[1]})
        # Sessions alternate between the servers and every step goes to the one that opened it.
        sessions = [c.open_session("concert", "Singers over 40?") for _ in range(4)]
        self.assertEqual({s["server"] for s in sessions}, {self.a, self.b})
        before = dict(c.answered)
        for s in sessions:
            r = c.step(s["session_id"], "<think>count</think><sql>SELECT COUNT(*) FROM singer</sql>")
            self.assertEqual(r["observation"], "<observation>COUNT(*)\n3\n(1 rows)</observation>")
        on_a = sum(1 for s in sessions if s["server"] == self.a)
        self.assertEqual(c.answered[self.a] - before[self.a], on_a)
        self.assertEqual(c.answered[self.b] - before[self.b], len(sessions) - on_a)
        type(self).open_sessions = sessions

    def test_2_server_lost(self):
        c = self.client
        os.kill(int(os.environ["AGRO_KILL_PID"]), signal.SIGKILL)
        time.sleep(0.3)
        # Its sessions fail cleanly: AgroSessionLost, at once, and the step is sent nowhere else.
        for s in self.open_sessions:
            if s["server"] != self.b:
                continue
            a_before = c.answered[self.a]
            t0 = time.monotonic()
            with self.assertRaises(AgroSessionLost):
                c.step(s["session_id"], answer(GOLD))
            self.assertLess(time.monotonic() - t0, 5)
            self.assertEqual(c.answered[self.a], a_before)
        # The sessions on A go on.
        for s in self.open_sessions:
            if s["server"] == self.a:
                r = c.step(s["session_id"], answer(GOLD))
                self.assertTrue(r["done"])
                self.assertEqual(r["answer"], GOLD)
                c.close_session(s["session_id"])
        # Rewards: every batch scored once, in order, on what is left.
        a_before = c.answered[self.a]
        for n in (64, 7, 33):
            items, expected = batch(n)
            out = c.reward(items)
            self.assertEqual(len(out["results"]), n)
            self.assertEqual([r["total"] for r in out["results"]], expected)
        self.assertEqual(c.answered[self.a] - a_before, 3)  # one request per batch: B is marked down
        # New sessions open on A only.
        s = c.open_session("club", "Nicknames?")
        self.assertEqual(s["server"], self.a)
        c.close_session(s["session_id"])

    def test_3_lost_server_found_again_after_down_s(self):
        # A fresh client does not know B is gone: its first reward slice for B fails over to A, counted once.
        c = AgroClient(timeout=20, down_s=60)
        items, expected = batch(40)
        out = c.reward(items)
        self.assertEqual([r["total"] for r in out["results"]], expected)
        self.assertGreaterEqual(c.failovers, 1)
        self.assertEqual(c.answered.get(self.b, 0), 0)
        # Nothing answers at all: one clean error, not a hang.
        dead = AgroClient(url=self.b, timeout=5)
        with self.assertRaises(AgroError) as e:
            dead.reward(items[:2])
        self.assertEqual(e.exception.status, 0)


class MultiTurn(unittest.TestCase):
    """One scripted episode through EpisodeRunner; ids and mask written for the node test."""

    def test_episode_layout(self):
        from transformers import PreTrainedTokenizerFast

        from agro_rollout import AgroTokens, EpisodeOptions, EpisodeRunner
        import agro_trl

        case = json.loads(Path(os.environ["AGRO_CASE"]).read_text())
        tk = PreTrainedTokenizerFast(tokenizer_file=os.environ["AGRO_TOKENIZER"])
        tokens = AgroTokens(tk)
        turns = case["turns"]
        out = {}
        for stop_at_action in (False, True):
            runner = EpisodeRunner(AgroClient(), tokens, EpisodeOptions(max_turn_tokens=64, max_response_tokens=1000, stop_at_action=stop_at_action))
            calls = []

            def sample(contexts, max_new):
                # A scripted policy: turn k of every episode. With stop_at_action the policy rambles on after its
                # action; the turn must be cut at </sql> / </answer> and closed with <|end|>.
                k = len(calls)
                calls.append(len(contexts))
                tail = tokens.encode(" then more text") if stop_at_action else []
                return [tokens.encode(turns[k]) + tail + [tokens.id["end"]] for _ in contexts]

            rows = [{"db_id": case["db_id"], "question": case["question"], "evidence": case.get("evidence"), "prompt": case["prompt"]}] * 2
            results = runner.play(rows, sample)
            self.assertEqual(calls, [2] * len(turns))
            self.assertEqual(results[0], results[1])
            r = results[0]
            self.assertEqual(r["turns"], turns)
            self.assertEqual(r["end_reason"], "answer")
            self.assertEqual(r["tool_calls"], len(turns) - 1)
            out["stop_at_action" if stop_at_action else "plain"] = {"prompt_ids": tokens.render_prompt(case["prompt"]), **r}
        out["verl"] = self.verl_episode(case, tokens)
        if os.environ.get("AGRO_URL_PAIR"):
            out["replayed"] = self.replay_on_lost_server(case, tokens, out["plain"])
        # The reward of the episode's turns, as agro_reward_func gets them from the rollout_func.
        f = agro_trl.agro_reward_func()
        r = out["plain"]
        totals = f(prompts=[case["prompt"]], completions=["ignored: the turns are used"], db_id=[case["db_id"]], gold_sql=[case["gold_sql"]],
                   agro_turns=[r["turns"]], agro_tool_calls=[r["tool_calls"]], agro_policy_tokens=[sum(r["env_mask"])])
        out["reward"] = totals[0]
        Path(os.environ["AGRO_OUT"]).write_text(json.dumps(out))

    def replay_on_lost_server(self, case: dict, tokens, single: dict) -> dict:
        """Episodes over two servers; one is killed after the first turn: its episodes go on elsewhere, unchanged."""
        from agro_rollout import EpisodeOptions, EpisodeRunner

        a, b = os.environ["AGRO_URL_PAIR"].split(",")
        runner = EpisodeRunner(AgroClient(url=f"{a},{b}", timeout=20, down_s=60), tokens, EpisodeOptions(max_turn_tokens=64, max_response_tokens=1000, stop_at_action=False))
        turns = case["turns"]
        calls = []

        def sample(contexts, max_new):
            calls.append(len(contexts))
            if len(calls) == 2:  # every episode has played its first turn on the server that opened it
                os.kill(int(os.environ["AGRO_KILL_PID_PAIR"]), signal.SIGKILL)
                time.sleep(0.3)
            return [tokens.encode(turns[len(calls) - 1]) + [tokens.id["end"]] for _ in contexts]

        row = {"db_id": case["db_id"], "question": case["question"], "evidence": case.get("evidence"), "prompt": case["prompt"]}
        results = runner.play([row] * 4, sample)
        moved = [r for r in results if r["servers"][0] == b]
        self.assertTrue(moved, "no episode was opened on the server that was killed")
        for r in moved:
            self.assertEqual(r["replays"], 1)
            self.assertEqual(r["servers"], [b, a])
        for r in results:
            for k in ("completion_ids", "env_mask", "turns", "observations", "tool_calls", "end_reason"):
                self.assertEqual(r[k], single[k], k)
        return {"episodes": len(results), "moved": len(moved)}

    def verl_episode(self, case: dict, tokens) -> dict:
        """AgroSqlAgentLoop driven as verl's AgentLoopWorker drives an agent loop (verl/experimental/agent_loop/agent_loop.py)."""
        import asyncio
        import types

        # verl's interfaces, reproduced from its source (verl is not installable here): AgentLoopBase.__init__ calls
        # init_class(config=..., tokenizer=..., processor=..., **yaml kwargs); server_manager.generate returns TokenOutput.
        mod = types.ModuleType("verl.experimental.agent_loop.agent_loop")

        class AgentLoopBase:
            _class_initialized = False

            def __init__(self, trainer_config, server_manager, tokenizer, processor, **kwargs):
                self.init_class(config=trainer_config.config, tokenizer=tokenizer, processor=processor, **kwargs)
                self.config = trainer_config.config
                self.server_manager = server_manager
                self.tokenizer = tokenizer
                self.processor = processor
                self.loop = asyncio.get_running_loop()

        class AgentLoopOutput:
            def __init__(self, prompt_ids, response_ids, response_mask, metrics, response_logprobs=None, multi_modal_data=None, reward_score=None, num_turns=0, extra_fields=None):
                self.prompt_ids, self.response_ids, self.response_mask = prompt_ids, response_ids, response_mask
                self.num_turns, self.extra_fields, self.response_logprobs = num_turns, extra_fields or {}, response_logprobs

        registry = {}

        def register(name):
            def deco(cls):
                registry[name] = {"_target_": f"{cls.__module__}.{cls.__qualname__}"}
                return cls
            return deco

        mod.AgentLoopBase, mod.AgentLoopOutput, mod.register = AgentLoopBase, AgentLoopOutput, register
        for name in ("verl", "verl.experimental", "verl.experimental.agent_loop"):
            sys.modules.setdefault(name, types.ModuleType(name))
        sys.modules["verl.experimental.agent_loop.agent_loop"] = mod
        sys.modules.pop("agro_verl_agent", None)
        import agro_verl_agent

        self.assertEqual(registry["agro_sql_agent"]["_target_"], "agro_verl_agent.AgroSqlAgentLoop")
        turns = case["turns"]
        seen = []

        class TokenOutput:
            def __init__(self, token_ids):
                self.token_ids, self.log_probs = token_ids, None

        class ServerManager:
            async def generate(self, request_id, *, prompt_ids, sampling_params, image_data=None):
                seen.append((request_id, list(prompt_ids), dict(sampling_params)))
                k = len(seen) - 1
                return TokenOutput(tokens.encode(turns[k]) + tokens.encode(" and on") + [tokens.id["end"]])

        class Cfg:
            config = {"actor_rollout_ref": {"rollout": {"response_length": 1000}}}

        async def go():
            loop = agro_verl_agent.AgroSqlAgentLoop(Cfg(), ServerManager(), tokens.tk, None, url=os.environ["AGRO_URL"], max_turn_tokens=64)
            return await loop.run({"temperature": 1.0, "top_p": 1.0}, raw_prompt=case["prompt"], extra_info={"db_id": case["db_id"], "question": case["question"], "evidence": case.get("evidence")}, agent_name="agro_sql_agent")

        out = asyncio.run(go())
        self.assertEqual(len({r for r, _, _ in seen}), 1)  # one request id: the episode stays on one rollout server
        self.assertEqual(set(seen[0][2]["stop_token_ids"]), {tokens.id["end"], tokens.id["eos"], *tokens.action_close})
        self.assertEqual(out.extra_fields["agro_turns"], turns)
        return {"prompt_ids": out.prompt_ids, "completion_ids": out.response_ids, "env_mask": out.response_mask, "tool_calls": out.extra_fields["agro_tool_calls"]}


if __name__ == "__main__":
    unittest.main(verbosity=1)
