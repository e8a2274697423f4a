"""A standard-library client of agro's environment server (`agro serve`; src/server/env.ts).

Set AGRO_URL (default http://127.0.0.1:8377) and, when the server needs one, AGRO_TOKEN.
"""
from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from typing import Any

DEFAULT_URL = "http://127.0.0.1:8377"


class AgroError(RuntimeError):
    """The server answered with an error (status and its one-line message)."""

    def __init__(self, status: int, message: str):
        super().__init__(f"agro server {status}: {message}")
        self.status = status


class AgroClient:
    def __init__(self, url: str | None = None, token: str | None = None, timeout: float = 300.0):
        self.url = (url or os.environ.get("AGRO_URL") or DEFAULT_URL).rstrip("/")
        self.token = token if token is not None else os.environ.get("AGRO_TOKEN")
        self.timeout = timeout

    def _request(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode("utf-8")
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("content-type", "application/json")
        if self.token:
            req.add_header("authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as res:
                text = res.read().decode("utf-8")
        except urllib.error.HTTPError as e:
            text = e.read().decode("utf-8", "replace")
            try:
                message = json.loads(text).get("error", text)
            except ValueError:
                message = text
            raise AgroError(e.code, message) from None
        return json.loads(text) if text else None

    def health(self) -> dict:
        return self._request("GET", "/health")

    def schema(self, db_id: str) -> dict:
        return self._request("GET", "/v1/schema?db_id=" + urllib.request.quote(db_id))

    def sql(self, db_id: str, sql: str, max_rows: int | None = None) -> dict:
        body: dict[str, Any] = {"db_id": db_id, "sql": sql}
        if max_rows is not None:
            body["max_rows"] = max_rows
        return self._request("POST", "/v1/sql", body)

    def reward(self, items: list[dict], rewards: list[dict] | None = None) -> dict:
        """Score a whole batch in one request; see /v1/reward in src/server/env.ts for the item fields."""
        body: dict[str, Any] = {"items": items}
        if rewards:
            body["rewards"] = rewards
        return self._request("POST", "/v1/reward", body)

    def open_session(self, db_id: str, question: str, evidence: str | None = None, gold_sql: str | None = None, rewards: list[dict] | None = None) -> dict:
        body: dict[str, Any] = {"db_id": db_id, "question": question}
        if evidence:
            body["evidence"] = evidence
        if gold_sql:
            body["gold_sql"] = gold_sql
        if rewards:
            body["rewards"] = rewards
        return self._request("POST", "/v1/env/sessions", body)

    def step(self, session_id: str, text: str) -> dict:
        return self._request("POST", f"/v1/env/sessions/{session_id}/step", {"text": text})

    def close_session(self, session_id: str) -> None:
        try:
            self._request("DELETE", f"/v1/env/sessions/{session_id}")
        except AgroError as e:
            if e.status != 404:
                raise
