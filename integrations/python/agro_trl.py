"""agro's rewards (and SQL tool) for TRL's GRPOTrainer, through agro's environment server.

    from agro_trl import agro_reward_func
    trainer = GRPOTrainer(model=..., reward_funcs=[agro_reward_func()], train_dataset=load_dataset(
        "json", data_files={"train": "export/train.jsonl"})["train"], args=GRPOConfig(...))

The dataset is `agro export --format trl`: its `db_id` and `gold_sql` columns reach the reward function as
keyword arguments. Each call scores the whole batch in one POST /v1/reward (test-suite execution on the
database and its variants, any registered reward with its weight, exactly as `agro train`).

Multi-turn: `AgroSqlEnv` is an `environment_factory` class for TRL >= 1.x (experimental there): its
`run_sql` method is the tool the policy calls, answered by POST /v1/sql as agro's environment would.
TRL renders tools through the model's chat template, so the model needs a tool-calling template.
"""
from __future__ import annotations

import json
import os
from typing import Any, Callable

from agro_client import AgroClient


def _turns(completion: Any) -> list[str]:
    """The assistant turns of one TRL completion (plain text, or conversational messages)."""
    if isinstance(completion, str):
        return [completion]
    turns = [m.get("content") or "" for m in completion if m.get("role") == "assistant"]
    return turns or [""]


def agro_reward_func(
    rewards: list[dict] | None = None,
    client: AgroClient | None = None,
    log_path: str | None = None,
    name: str = "agro",
) -> Callable[..., list[float]]:
    """A TRL reward function: the weighted sum of agro's rewards (default: execution) for each completion.

    `rewards` is agro's reward spec list ([{"name": "execution", "weight": 1}, {"name": "format", "weight": 0.2}]).
    `log_path` (or AGRO_REWARD_LOG) appends one JSON line per completion: its text, the SQL executed and each part.
    """
    c = client or AgroClient()
    log_path = log_path or os.environ.get("AGRO_REWARD_LOG")

    def reward(prompts, completions, db_id, gold_sql, completion_ids=None, environments=None, **kwargs) -> list[float]:
        items = []
        for i, (comp, db, gold) in enumerate(zip(completions, db_id, gold_sql)):
            turns = _turns(comp)
            item: dict[str, Any] = {"db_id": db, "gold_sql": gold}
            if len(turns) == 1:
                item["completion"] = turns[0]
            else:
                item["turns"] = turns
            if completion_ids is not None:
                item["completion_tokens"] = len(completion_ids[i])
            if environments is not None and hasattr(environments[i], "tool_calls"):
                item["tool_calls"] = environments[i].tool_calls
            items.append(item)
        out = c.reward(items, rewards)
        totals = [float(r["total"]) for r in out["results"]]
        if log_path:
            step = getattr(kwargs.get("trainer_state"), "global_step", None)
            with open(log_path, "a", encoding="utf-8") as f:
                for item, r in zip(items, out["results"]):
                    f.write(json.dumps({"step": step, **item, "total": r["total"], "pred_sql": r["pred_sql"], "correct": r["correct"], "parts": r["parts"]}) + "\n")
        return totals

    reward.__name__ = name
    return reward


class AgroSqlEnv:
    """One SQL environment per rollout for GRPOTrainer(environment_factory=AgroSqlEnv).

    TRL calls reset(**row) with the dataset row (db_id from `agro export --format trl`) before each rollout,
    and exposes every public method but reset as a tool.
    """

    def __init__(self, client: AgroClient | None = None):
        self._client = client or AgroClient()
        self._db_id: str | None = None
        self.tool_calls = 0

    def reset(self, db_id: str | None = None, **row: Any) -> None:
        self._db_id = db_id
        self.tool_calls = 0
        return None

    def run_sql(self, sql: str) -> str:
        """Run one read-only SQL query on the question's SQLite database.

        Args:
            sql: One SELECT (or WITH ... SELECT) statement.

        Returns:
            The first rows of the result as a small table, or the error message.
        """
        if self._db_id is None:
            return "error: no database (reset was not called with a db_id)"
        self.tool_calls += 1
        return self._client.sql(self._db_id, sql)["observation"]
