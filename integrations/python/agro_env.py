"""agro's SQL environment as a TRL `environment_factory` class, over agro's environment API (`agro serve`).

    from functools import partial
    from agro_env import AgroEnv, agro_env_rows, finish_episodes, prepare_tokenizer
    tok = prepare_tokenizer(tok)                       # an agro checkpoint's tokenizer: tool calls in agro's protocol
    rows = agro_env_rows(load_dataset("json", data_files={"train": "export/train.jsonl"})["train"])
    trainer = GRPOTrainer(model=model, processing_class=tok, train_dataset=rows,
                          environment_factory=partial(AgroEnv, rewards=[{"name": "execution", "weight": 1}]),
                          reward_funcs=[finish_episodes], args=GRPOConfig(...))

How TRL 1.13 drives it (trl/trainer/grpo_trainer.py): every public method of the instance but `reset` and
`get_reward` is a tool (lines 655-671, 2391-2397), its name, type hints and Google-style docstring making the
tool's schema; before each rollout `reset(**row)` is called with the dataset row and a string it returns is
appended to the row's last user message (2407-2419); `get_reward()` (no argument) is an extra reward source with
weight 1, logged under the class name (673-697), called after the `reward_funcs` given (it is appended to them,
and sync reward functions run in list order, 1659-1694).

- `reset(**row)` opens one episode in the server's sessions (POST /v1/env/sessions) and returns its opening user
  message: the question and evidence as agro's prompt contract lays them out (the server's environment is
  built from the checkpoint's contract). The row's prompt must hold the same system prompt (schema included)
  and an empty user message: `agro_env_rows` makes those rows from `agro export --format trl --prompt-from CK`.
- `execute_sql(sql)` is the tool: one policy turn `<sql>…</sql>` in that session, answered with the
  observation agro's own episode gives (read-only connection, agro's time and row limits, agro's turn limit).
- The final answer is the policy's last message (`<answer>SQL</answer>`, agro's protocol), which TRL does not
  hand to the environment: `finish_episodes`, a reward function that returns None (no column of its own), gives
  each environment its episode's assistant turns and scores the whole batch in one POST /v1/reward. Then
  `get_reward()` returns the weighted total; `reward_parts` holds each reward's value by name (execution on the
  database and its variants, format, sql_overlap, ...), `correct` and `pred_sql` beside it.

An agro checkpoint's chat template renders only role/content. `prepare_tokenizer` gives the tokenizer one that
also renders tool calls (agro's `<sql>…</sql>` for execute_sql; any other tool as JSON, so that TRL's
`supports_tool_calling` probe sees every part) and a `response_template` that parses `<sql>…</sql>` back into
an execute_sql call (transformers >= 5.13's response parser), so TRL's tool loop plays agro's protocol exactly:
the observation is `<|tool|>…<|end|><|assistant|>`, as agro train lays it out.

Standard library only (agro_client); TRL, transformers and torch are the caller's.
"""
from __future__ import annotations

import json
import os
from typing import Any, Callable

from agro_client import AgroClient

# src/model/chat.ts's template (<|bos|>, then <|role|>content<|end|> per message, <|assistant|> to generate),
# with an assistant message's tool calls written after its content, before <|end|>.
TOOL_CHAT_TEMPLATE = (
    "{{ '<|bos|>' }}{% for m in messages %}{{ '<|' + m['role'] + '|>' + (m['content'] or '') }}"
    "{% for tc in (m['tool_calls'] or []) %}{% set f = tc['function'] if tc['function'] is defined else tc %}"
    "{% if f['name'] == 'execute_sql' and f['arguments'] is mapping %}{{ '<sql>' + (f['arguments']['sql'] if 'sql' in f['arguments'] else '') + '</sql>' }}"
    "{% else %}{{ '<tool_call>' + (f | tojson) + '</tool_call>' }}{% endif %}{% endfor %}"
    "{{ '<|end|>' }}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>' }}{% endif %}"
)

# transformers' response_template (utils/chat_parsing): after the last <|assistant|>, a <sql>…</sql> is an
# execute_sql call, the rest is the message's content, up to <|end|>.
RESPONSE_TEMPLATE = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|assistant|>",
    "fields": {
        "tool_calls": {
            "open": "<sql>",
            "close": "</sql>",
            "repeats": True,
            "content": "text",
            "transform": {"type": "function", "function": {"name": "execute_sql", "arguments": {"sql": "{content}"}}},
        },
        "content": {"close": "<|end|>", "content": "text"},
    },
}


def prepare_tokenizer(tok: Any) -> Any:
    """An agro checkpoint's tokenizer made ready for TRL's tool loop (left padding, tool-call template, parser)."""
    tok.chat_template = TOOL_CHAT_TEMPLATE
    tok.response_template = RESPONSE_TEMPLATE
    tok.padding_side = "left"
    return tok


def agro_env_rows(rows: Any) -> Any:
    """Rows of `agro export --format trl` with the question left to `reset`: the last user message emptied."""

    def blank(r: dict) -> dict:
        return {"prompt": [*r["prompt"][:-1], {**r["prompt"][-1], "content": ""}]}

    return rows.map(blank) if hasattr(rows, "map") and not isinstance(rows, list) else [{**r, **blank(r)} for r in rows]


def episode_turns(messages: list[dict]) -> tuple[list[str], int]:
    """The assistant turns of one TRL completion (its parsed messages) as agro's protocol text, and its SQL calls."""
    turns: list[str] = []
    calls = 0
    for m in messages:
        if m.get("role") != "assistant":
            continue
        text = m.get("content") or ""
        for tc in m.get("tool_calls") or []:
            f = tc.get("function", tc)
            if f.get("name") == "execute_sql":
                text += "<sql>" + str((f.get("arguments") or {}).get("sql", "")) + "</sql>"
                calls += 1
        turns.append(text)
    return turns or [""], calls


class AgroEnv:
    """One agro SQL episode per rollout: GRPOTrainer(environment_factory=partial(AgroEnv, rewards=[...]))."""

    def __init__(self, client: AgroClient | None = None, rewards: list[dict] | None = None):
        self._client = client or AgroClient()
        self._rewards = rewards
        self._session: str | None = None
        self._row: dict = {}
        self.question, self.evidence = "", ""
        self._done = False
        self._reward: float | None = None
        self.reward_parts: dict[str, float] = {}
        self.correct: bool | None = None
        self.pred_sql: str | None = None
        self.turns: list[str] = []
        self.observations: list[str] = []
        self.tool_calls = 0

    def _close(self) -> None:
        if self._session is not None:
            self._client.close_session(self._session)
            self._session = None

    def reset(self, db_id: str, question: str, gold_sql: str, evidence: str = "", prompt: list | None = None, **row: Any) -> str:
        self._close()
        self._row = {"db_id": db_id, "gold_sql": gold_sql}
        self.question, self.evidence = question, evidence or ""
        self._done = False
        self._reward = None
        self.reward_parts, self.correct, self.pred_sql = {}, None, None
        self.turns, self.observations, self.tool_calls = [], [], 0
        out = self._client.open_session(db_id, question, evidence or None, gold_sql, self._rewards)
        self._session = out["session_id"]
        opening = out["messages"]
        # The dataset's system prompt and the server's must be one: else the policy reads a prompt it was not trained on.
        if prompt is not None and [m["content"] for m in prompt[:-1]] != [m["content"] for m in opening[:-1]]:
            self._close()
            raise ValueError("AgroEnv.reset: the row's system prompt differs from the server's opening; export with "
                             "--prompt-from the checkpoint and start agro serve with its prompt contract")
        return opening[-1]["content"]

    def execute_sql(self, sql: str) -> str:
        """Run one read-only SQL query on the question's database and see the first rows of its result.

        Args:
            sql: One SELECT (or WITH ... SELECT) statement.

        Returns:
            The first rows of the result as a small table, or the error message.
        """
        if self._session is None:
            return "error: no episode (reset was not called)"
        if self._done:
            return "error: the episode is over"
        # The policy's turn as agro's protocol writes it (src/agent/protocol.ts formatAction): TRL hands the tool
        # only its arguments, and the observation depends on nothing else.
        r = self._client.step(self._session, f"<think></think>\n<sql>{sql}</sql>")
        self.tool_calls += 1
        obs = r.get("observation") or ""
        self.observations.append(obs)
        if r.get("done"):
            # agro's turn limit (or an unparsable query): the episode ends here, as in agro's own loop.
            self._done = True
            return obs or f"the episode is over ({r.get('reason')})"
        return obs

    def _finish(self, turns: list[str], tool_calls: int) -> dict:
        self._close()
        self.turns = turns
        item: dict[str, Any] = {**self._row, "tool_calls": tool_calls}
        if len(turns) == 1:
            item["completion"] = turns[0]
        else:
            item["turns"] = turns
        return item

    def _scored(self, result: dict) -> None:
        self._reward = float(result["total"])
        self.reward_parts = {k: float(v["value"]) for k, v in result["parts"].items()}
        self.correct = bool(result["correct"])
        self.pred_sql = result["pred_sql"]

    def get_reward(self) -> float:
        if self._reward is None:
            raise RuntimeError("AgroEnv.get_reward: the episode was not finished; put agro_env.finish_episodes in reward_funcs")
        return self._reward


def episode_finisher(log_path: str | None = None) -> Callable[..., list[None]]:
    """The reward function that finishes AgroEnv episodes (see `finish_episodes`); `log_path` (or AGRO_EPISODE_LOG)
    appends one JSON line per episode: its turns, tool calls, observations, and agro's total and parts."""
    log_path = log_path or os.environ.get("AGRO_EPISODE_LOG")

    def finish_episodes(completions: list, environments: list | None = None, **kwargs: Any) -> list[None]:
        """Scores nothing itself (None: no column of its own): hands every AgroEnv its episode's assistant turns and
        scores the batch in one POST /v1/reward, so that each environment's get_reward() returns its total. Logs
        each part's mean (`agro/<name>`) through TRL's log_metric."""
        owners, items = [], []
        for comp, env in zip(completions, environments or []):
            if isinstance(env, AgroEnv):
                turns, calls = episode_turns(comp if isinstance(comp, list) else [{"role": "assistant", "content": comp}])
                items.append(env._finish(turns, calls))
                owners.append(env)
        if not owners:
            return [None] * len(completions)
        out = owners[0]._client.reward(items, owners[0]._rewards)
        for env, r in zip(owners, out["results"]):
            env._scored(r)
        log_metric = kwargs.get("log_metric")
        if log_metric is not None:
            for name in owners[0].reward_parts:
                log_metric(f"agro/{name}", sum(e.reward_parts[name] for e in owners) / len(owners))
        if log_path:
            step = getattr(kwargs.get("trainer_state"), "global_step", None)
            with open(log_path, "a", encoding="utf-8") as f:
                for item, env, r in zip(items, owners, out["results"]):
                    f.write(json.dumps({"step": step, **item, "question": env.question, "evidence": env.evidence, "observations": env.observations, "total": r["total"], "pred_sql": r["pred_sql"], "correct": r["correct"], "parts": r["parts"]}) + "\n")
        return [None] * len(completions)

    return finish_episodes


finish_episodes = episode_finisher()
