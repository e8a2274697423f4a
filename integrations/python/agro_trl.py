"""agro's rewards (and SQL tool) for TRL's GRPOTrainer, through agro's environment server.

    from agro_trl import agro_reward_func
    trainer = GRPOTrainer(model=..., reward_funcs=[agro_reward_func()], train_dataset=load_dataset(
        "json", data_files={"train": "export/train.jsonl"})["train"], args=GRPOConfig(...))

The dataset is `agro export --format trl`: its `db_id` and `gold_sql` columns reach the reward function as
keyword arguments. Each call scores the whole batch in one POST /v1/reward (test-suite execution on the
database and its variants, any registered reward with its weight, exactly as `agro train`).

Multi-turn in agro's own protocol: `agro_rollout_func(rows)` is a `rollout_func` for TRL >= 1.x
(experimental there). It plays each prompt's episode turn by turn through the server's sessions (the
policy's <sql> runs there, its <observation> comes back into the sequence), and returns the tokens with
`env_mask` 0 on every token the environment wrote, laid out as `agro train` lays them out
(agro_rollout.py); agro_reward_func then scores the episode's turns:

    rows = load_dataset("json", data_files={"train": "export/train.jsonl"})["train"]
    trainer = GRPOTrainer(model=..., processing_class=tok, reward_funcs=[agro_reward_func()], train_dataset=rows,
                          rollout_func=agro_rollout_func(rows), args=GRPOConfig(...))

`AgroSqlEnv` is the other way, an `environment_factory` class for TRL's own tool loop: its `run_sql` method
is the tool, answered by POST /v1/sql. TRL renders tools through the model's chat template (a tool-calling
template), not agro's <sql> protocol, so agro's own checkpoints use the rollout_func.
"""
from __future__ import annotations

import json
import os
from typing import Any, Callable

from agro_client import AgroClient
from agro_rollout import AgroTokens, EpisodeOptions, EpisodeRunner


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

    def reward(prompts, completions, db_id, gold_sql, completion_ids=None, environments=None, agro_turns=None, agro_tool_calls=None, agro_policy_tokens=None, **kwargs) -> list[float]:
        items = []
        for i, (comp, db, gold) in enumerate(zip(completions, db_id, gold_sql)):
            # From agro_rollout_func: the episode's own turns (the completion's text also holds the observations).
            turns = list(agro_turns[i]) if agro_turns is not None else _turns(comp)
            item: dict[str, Any] = {"db_id": db, "gold_sql": gold}
            if len(turns) == 1:
                item["completion"] = turns[0]
            else:
                item["turns"] = turns
            if agro_policy_tokens is not None:
                item["completion_tokens"] = int(agro_policy_tokens[i])
            elif completion_ids is not None:
                item["completion_tokens"] = len(completion_ids[i])
            if agro_tool_calls is not None:
                item["tool_calls"] = int(agro_tool_calls[i])
            elif environments is not None and hasattr(environments[i], "tool_calls"):
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


def _prompt_key(prompt: Any) -> str:
    return json.dumps(prompt, sort_keys=True, ensure_ascii=False)


def torch_sampler(trainer: Any, stop_ids: list[int]) -> Callable[[list[list[int]], int], list[list[int]]]:
    """Sample one turn for a batch of contexts with the trainer's model (left-padded, as TRL's own generate)."""
    import torch
    from trl.models import unwrap_model_for_generation

    pad = trainer.processing_class.pad_token_id

    def sample(contexts: list[list[int]], max_new: int) -> list[list[int]]:
        width = max(len(c) for c in contexts)
        ids = torch.full((len(contexts), width), pad, dtype=torch.long)
        att = torch.zeros((len(contexts), width), dtype=torch.long)
        for i, c in enumerate(contexts):
            ids[i, width - len(c):] = torch.tensor(c, dtype=torch.long)
            att[i, width - len(c):] = 1
        device = trainer.accelerator.device
        with unwrap_model_for_generation(trainer.model_wrapped, trainer.accelerator) as model, torch.no_grad():
            out = model.generate(
                input_ids=ids.to(device), attention_mask=att.to(device), max_new_tokens=max_new, do_sample=True,
                temperature=trainer.temperature, top_p=trainer.top_p, top_k=trainer.top_k or 0,
                eos_token_id=stop_ids, pad_token_id=pad,
            )
        return out[:, width:].tolist()

    return sample


def agro_rollout_func(
    rows: Any,
    client: AgroClient | None = None,
    max_turn_tokens: int = 96,
    max_response_tokens: int = 384,
    stop_at_action: bool = True,
    log_path: str | None = None,
) -> Callable[[list, Any], dict]:
    """A GRPOTrainer rollout_func playing agro's multi-turn episodes; `rows` is the dataset (agro export --format trl).

    TRL passes only the prompts: each is found back in `rows` (by its messages) for its db_id, question and
    evidence. One episode per prompt (TRL repeats each prompt num_generations times). Returns prompt_ids,
    completion_ids, logprobs None (TRL computes them), env_mask, and for agro_reward_func the episode's turns,
    tool calls and policy tokens. `log_path` (or AGRO_ROLLOUT_LOG) appends one JSON line per episode.
    """
    index = {_prompt_key(r["prompt"]): {k: r[k] for k in ("db_id", "question", "evidence", "prompt") if k in r} for r in rows}
    c = client or AgroClient()
    log_path = log_path or os.environ.get("AGRO_ROLLOUT_LOG")
    state: dict[str, Any] = {}

    def rollout(prompts: list, trainer: Any) -> dict:
        if "runner" not in state:
            model = trainer.accelerator.unwrap_model(trainer.model)
            opts = EpisodeOptions(max_turn_tokens=max_turn_tokens, max_response_tokens=max_response_tokens, max_positions=int(model.config.max_position_embeddings), stop_at_action=stop_at_action)
            state["runner"] = EpisodeRunner(c, AgroTokens(trainer.processing_class), opts)
        runner: EpisodeRunner = state["runner"]
        try:
            batch = [index[_prompt_key(p)] for p in prompts]
        except KeyError:
            raise ValueError("agro_rollout_func: a prompt is not in the rows it was given (pass the training dataset)") from None
        prompt_ids = [runner.tk.render_prompt(r["prompt"]) for r in batch]
        results = runner.play(batch, torch_sampler(trainer, runner.stop_ids()), prompt_ids=prompt_ids)
        if log_path:
            step = getattr(getattr(trainer, "state", None), "global_step", None)
            with open(log_path, "a", encoding="utf-8") as f:
                for r, p, res in zip(batch, prompt_ids, results):
                    f.write(json.dumps({"step": step, "db_id": r["db_id"], "prompt_ids": p, **res}) + "\n")
        return {
            "prompt_ids": prompt_ids,
            "completion_ids": [r["completion_ids"] for r in results],
            "logprobs": None,
            "env_mask": [r["env_mask"] for r in results],
            "agro_turns": [r["turns"] for r in results],
            "agro_tool_calls": [r["tool_calls"] for r in results],
            "agro_policy_tokens": [sum(r["env_mask"]) for r in results],
            "agro_end_reason": [r["end_reason"] for r in results],
        }

    return rollout
