"""agro's rewards for verl, through agro's environment server.

verl calls a custom reward function as compute_score(data_source, solution_str, ground_truth, extra_info)
(NaiveRewardManager) or, with reward_model.reward_manager=batch, compute_score_batch(data_sources,
solution_strs, ground_truths, extra_infos) once per batch. Rows come from `agro export --format verl`:
ground_truth is the gold SQL and extra_info.db_id names the database. The answer is the last
<answer>…</answer> of the response (agro's protocol); a response without one scores as no answer.

    custom_reward_function.path=integrations/python/agro_verl.py
    custom_reward_function.name=compute_score_batch
    reward_model.reward_manager=batch
"""
from __future__ import annotations

import re
from typing import Any

from agro_client import AgroClient

_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.IGNORECASE | re.DOTALL)
_client: AgroClient | None = None


def _get_client() -> AgroClient:
    global _client
    if _client is None:
        _client = AgroClient()
    return _client


def extract_answer(solution_str: str) -> str | None:
    found = _ANSWER.findall(solution_str or "")
    if not found:
        return None
    sql = found[-1].strip()
    return sql or None


def _item(solution_str: str, ground_truth: str, extra_info: dict | None) -> dict:
    db_id = (extra_info or {}).get("db_id")
    if not db_id:
        raise ValueError("extra_info.db_id is missing: export the data with `agro export --format verl`")
    sql = extract_answer(solution_str)
    item: dict[str, Any] = {"db_id": db_id, "gold_sql": ground_truth}
    if sql is None:
        item["completion"] = solution_str or ""
    else:
        item["sql"] = sql
    return item


def _result(r: dict) -> dict:
    out = {"score": float(r["total"]), "acc": 1.0 if r["correct"] else 0.0}
    for label, part in r["parts"].items():
        out[label] = float(part["value"])
    return out


def compute_score_batch(data_sources, solution_strs, ground_truths, extra_infos, rewards: list[dict] | None = None, **kwargs) -> list[dict]:
    items = [_item(s, g, e) for s, g, e in zip(solution_strs, ground_truths, extra_infos)]
    out = _get_client().reward(items, rewards)
    return [_result(r) for r in out["results"]]


def compute_score(data_source, solution_str, ground_truth, extra_info=None, rewards: list[dict] | None = None, **kwargs) -> dict:
    return compute_score_batch([data_source], [solution_str], [ground_truth], [extra_info], rewards=rewards)[0]
