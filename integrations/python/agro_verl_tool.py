"""agro's sandboxed SQL as a verl tool (verl.tools.base_tool.BaseTool) for verl's multi-turn tool agent loop.

verl's ToolAgentLoop creates an instance per tool call with create(create_kwargs=extra_info.tools_kwargs
[tool name].create_kwargs), calls execute(instance_id, arguments) and release(instance_id). The rows of
`agro export --format verl` carry {"run_sql": {"create_kwargs": {"db_id": ...}}}. Config:
integrations/python/agro_verl_tool_config.yaml (server URL in `config.url`, else AGRO_URL).
"""
from __future__ import annotations

import json
from typing import Any, Optional
from uuid import uuid4

from agro_client import AgroClient

try:  # inside verl
    from verl.tools.base_tool import BaseTool
    from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse
except ImportError:  # outside verl (docs, tests): same shapes, no behaviour
    OpenAIFunctionToolSchema = Any  # type: ignore[misc,assignment]

    class BaseTool:  # type: ignore[no-redef]
        def __init__(self, config: dict, tool_schema: Any):
            self.config = config
            self.tool_schema = tool_schema
            self.name = tool_schema.function.name

    class ToolResponse:  # type: ignore[no-redef]
        def __init__(self, text: str | None = None, image: list | None = None, video: list | None = None):
            self.text, self.image, self.video = text, image, video


class AgroSqlTool(BaseTool):
    def __init__(self, config: dict, tool_schema: OpenAIFunctionToolSchema):
        super().__init__(config, tool_schema)
        self._client = AgroClient(url=config.get("url"), token=config.get("token"), timeout=float(config.get("timeout_s", 60)))
        self._instances: dict[str, dict] = {}

    def get_openai_tool_schema(self) -> OpenAIFunctionToolSchema:
        return self.tool_schema

    async def create(self, instance_id: Optional[str] = None, **kwargs) -> tuple[str, ToolResponse]:
        if instance_id is None:
            instance_id = str(uuid4())
        create_kwargs = kwargs.get("create_kwargs") or {}
        db_id = kwargs.get("db_id") or create_kwargs.get("db_id")
        self._instances[instance_id] = {"db_id": db_id, "calls": 0}
        return instance_id, ToolResponse()

    async def execute(self, instance_id: str, parameters: dict[str, Any] | str, **kwargs) -> tuple[ToolResponse, float, dict]:
        inst = self._instances.get(instance_id)
        if inst is None or not inst["db_id"]:
            return ToolResponse(text="error: no database for this tool call (tools_kwargs.run_sql.create_kwargs.db_id)"), 0.0, {}
        if isinstance(parameters, str):
            try:
                parameters = json.loads(parameters)
            except ValueError:
                parameters = {}
        sql = parameters.get("sql") if isinstance(parameters, dict) else None
        if not isinstance(sql, str) or not sql.strip():
            return ToolResponse(text="error: give the query as {\"sql\": \"SELECT ...\"}"), 0.0, {}
        inst["calls"] += 1
        r = self._client.sql(inst["db_id"], sql)
        return ToolResponse(text=r["observation"]), 0.0, {"ok": bool(r["ok"]), "elapsed_ms": float(r.get("elapsed_ms", 0.0))}

    async def calc_reward(self, instance_id: str, **kwargs) -> float:
        return 0.0

    async def release(self, instance_id: str, **kwargs) -> None:
        self._instances.pop(instance_id, None)
