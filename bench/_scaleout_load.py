"""Reward load through agro's Python client over the servers in AGRO_URL, for bench/serve.ts --scale-out.

    python bench/_scaleout_load.py '{"seconds": 5, "threads": 8, "batch": 64, "kill_pid": 0, "kill_at": 0}'

Each thread scores batches of `batch` completions of data/dev.json questions (right, wrong, malformed), with
known totals, for `seconds`; with kill_pid the process is killed (SIGKILL) kill_at seconds in. Prints one JSON
line: completions scored per second (before and after the kill), results that differ from the expected
totals (a misplaced or double-counted result would; SQL that ran out of time under load is counted apart), batches that failed, the client's failovers and the
requests each server answered.
"""
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "integrations" / "python"))
from agro_client import AgroClient  # noqa: E402

cfg = json.loads(sys.argv[1])
rows = json.loads((ROOT / "data" / "dev.json").read_text())
items, expected = [], []
for i in range(int(cfg["batch"])):
    r = rows[i % len(rows)]
    k = i % 4
    if k < 2:
        items.append({"db_id": r["db_id"], "gold_sql": r["SQL"], "completion": f"<think>plan</think><answer>{r['SQL']}</answer>"})
        expected.append(1.2)
    elif k == 2:
        items.append({"db_id": r["db_id"], "gold_sql": r["SQL"], "completion": f"<think>plan</think><answer>SELECT 1 + {i}</answer>"})
        expected.append(0.2)
    else:
        items.append({"db_id": r["db_id"], "gold_sql": r["SQL"], "completion": "SELECT 1"})
        expected.append(0.0)
REWARDS = [{"name": "execution", "weight": 1}, {"name": "format", "weight": 0.2}]

client = AgroClient(timeout=30, down_s=30)
stop = time.monotonic() + float(cfg["seconds"])
kill_at = float(cfg.get("kill_at") or 0)
t0 = time.monotonic()
lock = threading.Lock()
stats = {"before": 0, "after": 0, "wrong": 0, "timeouts": 0, "failed": 0}
killed_at = None


def worker():
    while time.monotonic() < stop:
        try:
            out = client.reward(items, REWARDS)
        except Exception:  # noqa: BLE001 -- counted: a batch that got no answer at all
            with lock:
                stats["failed"] += 1
            continue
        res = out["results"]
        # A query that ran out of time under load scores 0 (the server says why): counted apart from a result
        # that is simply not the expected one (misplaced, double-counted, or from another item).
        off = [r for r, e in zip(res, expected) if abs(r["total"] - e) > 1e-9]
        timeouts = sum(1 for r in off if "timeout" in r["parts"]["execution"]["reason"] or "gold query failed" in r["parts"]["execution"]["reason"])
        with lock:
            stats["timeouts"] += timeouts
            stats["wrong"] += len(off) - timeouts + abs(len(res) - len(expected))
            stats["after" if killed_at is not None else "before"] += len(res)


threads = [threading.Thread(target=worker) for _ in range(int(cfg["threads"]))]
for t in threads:
    t.start()
if cfg.get("kill_pid"):
    time.sleep(kill_at)
    os.kill(int(cfg["kill_pid"]), signal.SIGKILL)
    killed_at = time.monotonic() - t0
for t in threads:
    t.join()
total_s = time.monotonic() - t0
before_s = killed_at if killed_at is not None else total_s
after_s = total_s - before_s
print(json.dumps({
    "servers": len(client.urls),
    "completions_per_s": round((stats["before"] + stats["after"]) / total_s, 1),
    "before_kill_per_s": round(stats["before"] / max(before_s, 1e-9), 1),
    "after_kill_per_s": round(stats["after"] / after_s, 1) if after_s > 0 and killed_at is not None else None,
    "wrong": stats["wrong"],
    "sql_timeouts": stats["timeouts"],
    "failed_batches": stats["failed"],
    "failovers": client.failovers,
    "answered": client.answered,
}))
