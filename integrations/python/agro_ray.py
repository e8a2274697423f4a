"""agro's data factory on a Ray cluster: `agro synth` fanned out over many databases, one Ray task per database.

    python integrations/python/agro_ray.py --db-root ../shared/data/spider-train/database --out runs/synth-ray \\
        [--first 10] [--workers 2 | --address auto] -- --n 200 --variants 3 --seed 0

Each task runs `agro synth --db <db> --out <out>/synth/<db_id> --json <synth args>` as its own process on a worker
(the worker needs node and this checkout at the same path, or AGRO_BIN naming agro's bin/agro.js there). A
database whose folder already holds its manifest.json and dataset.jsonl is not run again, so a killed fan-out
resumes where it stopped. The per-database folders are pretrain's layout (`agro pretrain --out <out>` finds them).
When every task is back, their datasets are merged in db_id order into <out>/dataset.jsonl, and <out>/manifest.json
names every database with its rows, its own manifest and its variants (and any database synth refused, with its
reason). `--workers 0` runs the same tasks one after another in this process, without Ray: the reference.

`ray` is the only package it needs beyond the standard library (pip install ray from the local index).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def agro_cmd() -> list[str]:
    return [os.environ.get("AGRO_NODE", "node"), os.environ.get("AGRO_BIN", str(ROOT / "bin" / "agro.js"))]


def databases(db_root: Path, first: int | None = None) -> list[tuple[str, Path]]:
    """<db_root>/<db_id>/<db_id>.sqlite, in db_id order; the first `first` of them."""
    if not db_root.is_dir():
        raise SystemExit(f"agro_ray: --db-root {db_root} is not a folder")
    dbs = sorted((d.name, d / f"{d.name}.sqlite") for d in db_root.iterdir() if (d / f"{d.name}.sqlite").is_file())
    return dbs[:first] if first else dbs


def count_lines(path: Path) -> int:
    with path.open("rb") as f:
        return sum(1 for line in f if line.strip())


def synth_one(db_id: str, db: str, out_dir: str, synth_args: list[str]) -> dict:
    """One database in its own `agro synth` process; a complete folder from an earlier run is kept (resume)."""
    t0 = time.perf_counter()
    out = Path(out_dir)
    if (out / "manifest.json").is_file() and (out / "dataset.jsonl").is_file():
        return {"db_id": db_id, "rows": count_lines(out / "dataset.jsonl"), "seconds": 0.0, "resumed": True}
    r = subprocess.run([*agro_cmd(), "synth", "--db", db, "--out", str(out), "--json", *synth_args], capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if r.returncode != 0:
        lines = r.stderr.strip().splitlines()
        return {"db_id": db_id, "error": lines[-1] if lines else f"exit {r.returncode}", "exit_code": r.returncode, "seconds": seconds}
    return {"db_id": db_id, "rows": json.loads(r.stdout)["rows"], "seconds": seconds, "resumed": False}


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def merge(out: Path, results: list[dict], synth_args: list[str]) -> dict:
    """One dataset.jsonl of every database's rows (db_id order) and the manifest that names each part."""
    done = sorted((r for r in results if "error" not in r), key=lambda r: r["db_id"])
    parts, lines = [], []
    for r in done:
        d = out / "synth" / r["db_id"]
        rows = [line for line in (d / "dataset.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
        lines += rows
        m = json.loads((d / "manifest.json").read_text(encoding="utf-8"))
        parts.append({"db_id": r["db_id"], "rows": len(rows), "dir": f"synth/{r['db_id']}", "manifest": f"synth/{r['db_id']}/manifest.json", "variants": len(m.get("variants", []))})
    write_atomic(out / "dataset.jsonl", "".join(line + "\n" for line in lines))
    manifest = {
        "kind": "agro-synth-fanout",
        "version": 1,
        "rows": len(lines),
        "databases": parts,
        "refused": [{"db_id": r["db_id"], "why": r["error"], "exit_code": r["exit_code"]} for r in sorted(results, key=lambda r: r["db_id"]) if "error" in r],
        "synth_args": synth_args,
    }
    write_atomic(out / "manifest.json", json.dumps(manifest, indent=2) + "\n")
    return manifest


def fan_out(db_root: Path, out: Path, synth_args: list[str], first: int | None = None, workers: int = 2, address: str | None = None) -> dict:
    """Run every database's synth (Ray tasks, or in turn with workers=0), merge, and say how long each part took."""
    dbs = databases(db_root, first)
    if not dbs:
        raise SystemExit(f"agro_ray: no <db_id>/<db_id>.sqlite under {db_root}")
    (out / "synth").mkdir(parents=True, exist_ok=True)
    jobs = [(db_id, str(path.resolve()), str(out / "synth" / db_id), synth_args) for db_id, path in dbs]
    t0 = time.perf_counter()
    timing: dict = {}
    if workers == 0 and address is None:
        results = [synth_one(*j) for j in jobs]
    else:
        import ray

        t_init = time.perf_counter()
        ray.init(address=address, include_dashboard=False, log_to_driver=False, **({} if address else {"num_cpus": workers, "object_store_memory": 256 * 1024 * 1024}))
        timing["ray_init_s"] = time.perf_counter() - t_init
        try:
            # What a task costs Ray itself, with nothing in it: the per-task overhead beside agro's own work.
            noop = ray.remote(num_cpus=1)(lambda: None)
            ray.get(noop.remote())
            t_noop = time.perf_counter()
            ray.get([noop.remote() for _ in range(20)])
            timing["noop_task_ms"] = (time.perf_counter() - t_noop) / 20 * 1000
            task = ray.remote(num_cpus=1, max_retries=2)(synth_one)
            results = ray.get([task.remote(*j) for j in jobs])
        finally:
            ray.shutdown()
    timing["tasks_s"] = time.perf_counter() - t0
    manifest = merge(out, results, synth_args)
    timing["total_s"] = time.perf_counter() - t0
    return {"databases": len(dbs), "rows": manifest["rows"], "refused": len(manifest["refused"]), "task_seconds": {r["db_id"]: round(r["seconds"], 2) for r in results}, "resumed": sum(1 for r in results if r.get("resumed")), **timing}


def main(argv: list[str]) -> None:
    own, synth_args = (argv[: argv.index("--")], argv[argv.index("--") + 1 :]) if "--" in argv else (argv, [])
    p = argparse.ArgumentParser(prog="agro_ray.py", description="agro synth over many databases as Ray tasks; arguments after -- go to agro synth")
    p.add_argument("--db-root", required=True, type=Path, help="databases as <dir>/<db_id>/<db_id>.sqlite")
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--first", type=int, default=None, help="only the first N databases (db_id order)")
    p.add_argument("--workers", type=int, default=2, help="CPUs of a local Ray cluster (0: no Ray, one after another)")
    p.add_argument("--address", default=None, help="an existing Ray cluster (auto, or ray://host:10001)")
    a = p.parse_args(own)
    print(json.dumps(fan_out(a.db_root, a.out, synth_args, a.first, a.workers, a.address)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
