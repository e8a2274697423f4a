"""agro's multi-turn episode as a verl agent loop (verl.experimental.agent_loop), for agro's own protocol.

verl's ToolAgentLoop parses tool calls in the model's chat-template format (hermes...), which agro's policy does
not speak: it writes <sql>…</sql> and reads <observation>…</observation>. This loop plays agro's protocol
through the environment server's sessions instead (agro_rollout.py), one episode per dataset row, and returns
verl's AgentLoopOutput with response_mask 0 on every token the environment wrote, laid out as `agro train`
lays it out. Register it with an agent loop config and name it in the rows' agent_name:

    actor_rollout_ref.rollout.agent.agent_loop_config_path=integrations/python/agro_verl_agent_loop.yaml
    # rows of `agro export --format verl` carry agent_name "tool_agent": set it to "agro_sql_agent"

Every turn is sampled by verl's server manager (vLLM/SGLang) with agro's stop tokens added to the sampling
params (stop_token_ids: <|end|>, <|eos|>, </sql>, </answer>); turns are cut at `max_turn_tokens` tokens.
Log-probs are not returned (verl recomputes them with the actor). The reward is agro_verl.compute_score_batch
on the decoded response (its last <answer>). Server URL(s): the loop config's `url`, else AGRO_URL.
"""
from __future__ import annotations

import asyncio
from typing import Any
from uuid import uuid4

from agro_client import AgroClient
from agro_rollout import AgroTokens, EpisodeOptions, EpisodeRunner

try:  # inside verl
    from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopOutput, register
except ImportError:  # outside verl (docs, tests without it): same shapes, no behaviour
    from dataclasses import dataclass, field

    class AgentLoopBase:  # type: ignore[no-redef]
        _class_initialized = False

        def __init__(self, trainer_config: Any, server_manager: Any, tokenizer: Any, processor: Any = None, **kwargs: Any):
            self.init_class(config=trainer_config.config, tokenizer=tokenizer, processor=processor, **kwargs)
            self.config = trainer_config.config
            self.server_manager = server_manager
            self.tokenizer = tokenizer
            self.processor = processor

        @classmethod
        def init_class(cls, config: Any, tokenizer: Any, processor: Any, **kwargs: Any) -> None:
            cls._class_initialized = True

    @dataclass
    class AgentLoopOutput:  # type: ignore[no-redef]
        prompt_ids: list
        response_ids: list
        response_mask: list
        metrics: dict
        response_logprobs: list | None = None
        multi_modal_data: dict | None = None
        num_turns: int = 0
        extra_fields: dict = field(default_factory=dict)

    def register(agent_name: str):  # type: ignore[no-redef]
        return lambda cls: cls


def _cfg(config: Any, *path: str, default: Any = None) -> Any:
    node = config
    for p in path:
        node = node.get(p) if hasattr(node, "get") else getattr(node, p, None)
        if node is None:
            return default
    return node


@register("agro_sql_agent")
class AgroSqlAgentLoop(AgentLoopBase):
    @classmethod
    def init_class(cls, config: Any, tokenizer: Any, processor: Any, **kwargs: Any) -> None:
        if cls._class_initialized:
            return
        cls._class_initialized = True
        response_length = int(_cfg(config, "actor_rollout_ref", "rollout", "response_length", default=kwargs.get("max_response_tokens", 384)))
        opts = EpisodeOptions(
            max_turn_tokens=int(kwargs.get("max_turn_tokens", 96)),
            max_response_tokens=response_length,
            stop_at_action=bool(kwargs.get("stop_at_action", True)),
        )
        client = AgroClient(url=kwargs.get("url"), token=kwargs.get("token"), timeout=float(kwargs.get("timeout_s", 120)))
        cls.runner = EpisodeRunner(client, AgroTokens(tokenizer), opts)
        cls.response_length = response_length

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        extra = kwargs.get("extra_info") or {}
        messages = list(kwargs["raw_prompt"])
        row = {"db_id": extra["db_id"], "question": extra.get("question") or messages[-1]["content"], "evidence": extra.get("evidence"), "prompt": messages}
        runner: EpisodeRunner = self.runner
        request_id = uuid4().hex
        params = {**sampling_params, "stop_token_ids": runner.stop_ids()}
        ep = await asyncio.to_thread(runner.start, row)
        try:
            while not ep.done:
                out = await self.server_manager.generate(request_id=request_id, prompt_ids=ep.context(), sampling_params=params)
                toks = list(getattr(out, "token_ids", out))[: runner.opts.max_turn_tokens]
                await asyncio.to_thread(runner.feed, ep, toks)
        finally:
            await asyncio.to_thread(runner.close, ep)
        res = ep.result()
        n = self.response_length
        return AgentLoopOutput(
            prompt_ids=ep.prompt_ids,
            response_ids=res["completion_ids"][:n],
            response_mask=res["env_mask"][:n],
            response_logprobs=None,
            multi_modal_data={},
            num_turns=1 + len(res["turns"]) + res["tool_calls"],
            metrics={},
            extra_fields={"agro_turns": res["turns"], "agro_tool_calls": res["tool_calls"], "agro_end_reason": res["end_reason"]},
        )
