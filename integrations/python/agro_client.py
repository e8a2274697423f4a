"""A standard-library client of agro's environment server (`agro serve`; src/server/env.ts), for one server or several.

Set AGRO_URL (default http://127.0.0.1:8377) and, when the servers need one, AGRO_TOKEN. AGRO_URL may name
several servers, comma-separated (`http://127.0.0.1:8377,http://127.0.0.1:8378`): then

- a reward batch is cut into one slice per live server (items of the same `group` stay together, so OTC's
  group minimum is computed where the whole group is) and the slices are scored at once, in parallel;
- a request that cannot reach its server (connection refused or reset, no answer within the timeout) or that
  the server turns away as busy (503) is sent to the next live server; the unreachable one is left out for
  `down_s` seconds, then tried again. Rewards are pure functions of their items, so a slice scored again
  elsewhere gives the same numbers, and each item's result is taken once: nothing is counted twice;
- an environment session stays on the server that opened it (its id is remembered here); when that server
  is lost, the session's requests raise AgroSessionLost and nothing is sent anywhere else — the caller
  decides (agro_rollout.py replays the episode's turns on another server).
"""
from __future__ import annotations

import http.client
import itertools
import json
import os
import socket
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any

DEFAULT_URL = "http://127.0.0.1:8377"


class AgroError(RuntimeError):
    """The server answered with an error (status and its one-line message); status 0: no server answered."""

    def __init__(self, status: int, message: str):
        super().__init__(f"agro server {status}: {message}" if status else f"agro: {message}")
        self.status = status


class AgroUnavailable(AgroError):
    """No server could be reached (every one refused, reset or timed out), or the one a session lives on."""

    def __init__(self, message: str):
        super().__init__(0, message)


class AgroSessionLost(AgroUnavailable):
    """The server that holds this session is gone: the session's state is gone with it."""


def parse_urls(url: str | None) -> list[str]:
    raw = url if url is not None else (os.environ.get("AGRO_URL") or DEFAULT_URL)
    urls = [u.strip().rstrip("/") for u in raw.split(",") if u.strip()]
    if not urls:
        raise ValueError("AGRO_URL names no server")
    return urls


# What a lost server looks like from here: refused, reset, closed mid-answer, or silent past the timeout.
_TRANSPORT_ERRORS = (urllib.error.URLError, ConnectionError, socket.timeout, TimeoutError, http.client.HTTPException, OSError)


class AgroClient:
    def __init__(self, url: str | None = None, token: str | None = None, timeout: float = 300.0, down_s: float = 5.0):
        self.urls = parse_urls(url)
        self.token = token if token is not None else os.environ.get("AGRO_TOKEN")
        self.timeout = timeout
        self.down_s = down_s
        self._down_until: dict[str, float] = {}
        self._sessions: dict[str, str] = {}
        self._next = itertools.count()
        self._lock = threading.Lock()
        # Per server: requests answered, and requests that failed over to another one (bench, tests).
        self.answered: dict[str, int] = {u: 0 for u in self.urls}
        self.failovers = 0

    @property
    def url(self) -> str:
        """The first server (single-server callers and messages)."""
        return self.urls[0]

    # ---- transport -------------------------------------------------------------------------------------
    def _send(self, base: str, method: str, path: str, body: Any) -> Any:
        data = None if body is None else json.dumps(body).encode("utf-8")
        req = urllib.request.Request(base + path, data=data, method=method)
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
        with self._lock:
            self.answered[base] = self.answered.get(base, 0) + 1
        return json.loads(text) if text else None

    def _mark_down(self, base: str) -> None:
        with self._lock:
            self._down_until[base] = time.monotonic() + self.down_s

    def live(self) -> list[str]:
        """The servers not marked down, in order; all of them when every one is marked down (try again)."""
        now = time.monotonic()
        with self._lock:
            up = [u for u in self.urls if self._down_until.get(u, 0.0) <= now]
        return up or list(self.urls)

    def _order(self, first: str | None = None) -> list[str]:
        """Live servers to try, rotating the start so that unpinned requests spread over them."""
        up = self.live()
        if first in up:
            k = up.index(first)
        else:
            k = next(self._next) % len(up)
        return up[k:] + up[:k]

    def _request(self, method: str, path: str, body: Any = None, first: str | None = None) -> tuple[Any, str]:
        """An unpinned request: the next live server, failing over on transport errors and 503. Returns (answer, server)."""
        last: Exception | None = None
        for i, base in enumerate(self._order(first)):
            if i > 0:
                with self._lock:
                    self.failovers += 1
            try:
                return self._send(base, method, path, body), base
            except AgroError as e:
                if e.status != 503:
                    raise
                last = e
            except _TRANSPORT_ERRORS as e:
                self._mark_down(base)
                last = e
        raise AgroUnavailable(f"no agro server answered {method} {path} ({', '.join(self.urls)}): {last}")

    def _pinned(self, session_id: str, method: str, path: str, body: Any = None) -> Any:
        base = self._sessions.get(session_id)
        if base is None:
            raise AgroError(404, f"session {session_id} was not opened by this client")
        try:
            return self._send(base, method, path, body)
        except _TRANSPORT_ERRORS as e:
            self._mark_down(base)
            with self._lock:
                self._sessions.pop(session_id, None)
            raise AgroSessionLost(f"session {session_id}: its server {base} is gone ({e})") from None

    # ---- API -------------------------------------------------------------------------------------------
    def health(self) -> dict:
        return self._request("GET", "/health")[0]

    def schema(self, db_id: str) -> dict:
        return self._request("GET", "/v1/schema?db_id=" + urllib.request.quote(db_id))[0]

    def sql(self, db_id: str, sql: str, max_rows: int | None = None) -> dict:
        body: dict[str, Any] = {"db_id": db_id, "sql": sql}
        if max_rows is not None:
            body["max_rows"] = max_rows
        return self._request("POST", "/v1/sql", body)[0]

    def reward(self, items: list[dict], rewards: list[dict] | None = None, min_slice: int = 8) -> dict:
        """Score a whole batch; see /v1/reward in src/server/env.ts for the item fields.

        With several live servers the batch is cut into slices of at least `min_slice` items (one per server),
        scored in parallel, each slice failing over on its own; the answer is one batch answer, in item order.
        """
        body_extra: dict[str, Any] = {"rewards": rewards} if rewards else {}
        up = self.live()
        slices = _slices(items, min(len(up), max(1, len(items) // max(1, min_slice))))
        if len(slices) == 1:
            return self._request("POST", "/v1/reward", {"items": items, **body_extra})[0]
        with ThreadPoolExecutor(max_workers=len(slices)) as pool:
            parts = list(pool.map(lambda k: self._request("POST", "/v1/reward", {"items": [items[i] for i in slices[k]], **body_extra}, first=up[k % len(up)])[0], range(len(slices))))
        results: list[Any] = [None] * len(items)
        for idx, part in zip(slices, parts):
            for i, r in zip(idx, part["results"]):
                results[i] = r
        return {**{k: v for k, v in parts[0].items() if k != "results"}, "results": results}

    def open_session(self, db_id: str, question: str, evidence: str | None = None, gold_sql: str | None = None, rewards: list[dict] | None = None, server: str | None = None) -> dict:
        """Open an episode on the next live server (or on `server` first); the answer carries `server`."""
        body: dict[str, Any] = {"db_id": db_id, "question": question}
        if evidence:
            body["evidence"] = evidence
        if gold_sql:
            body["gold_sql"] = gold_sql
        if rewards:
            body["rewards"] = rewards
        out, base = self._request("POST", "/v1/env/sessions", body, first=server)
        with self._lock:
            self._sessions[out["session_id"]] = base
        return {**out, "server": base}

    def server_of(self, session_id: str) -> str | None:
        return self._sessions.get(session_id)

    def step(self, session_id: str, text: str) -> dict:
        return self._pinned(session_id, "POST", f"/v1/env/sessions/{session_id}/step", {"text": text})

    def close_session(self, session_id: str) -> None:
        try:
            self._pinned(session_id, "DELETE", f"/v1/env/sessions/{session_id}")
        except AgroSessionLost:
            return  # gone with its server
        except AgroError as e:
            if e.status != 404:
                raise
        with self._lock:
            self._sessions.pop(session_id, None)


def _slices(items: list[dict], n: int) -> list[list[int]]:
    """Item indices cut into at most n slices of near-equal size, in order; the items of a `group` stay in one slice."""
    units: list[list[int]] = []
    by_group: dict[Any, list[int]] = {}
    for i, it in enumerate(items):
        g = it.get("group")
        if g is None:
            units.append([i])
        elif g in by_group:
            by_group[g].append(i)
        else:
            by_group[g] = [i]
            units.append(by_group[g])
    n = max(1, min(n, len(units)))
    target = len(items) / n
    out: list[list[int]] = [[]]
    for u in units:
        if out[-1] and len(out) < n and len(out[-1]) + len(u) / 2 > target:
            out.append([])
        out[-1].extend(u)
    return out
