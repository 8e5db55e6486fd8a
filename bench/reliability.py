"""Reliability figures, from real parts on this machine's loopback only.

    .venv/bin/python -m bench.reliability            # every section (about 10 minutes)
    .venv/bin/python -m bench.reliability --quick    # small (a few minutes)
    .venv/bin/python -m bench.reliability --only upload,readyz

Sections (each starts its own uvicorn server on a free port; ``kills`` also a redis-server of
its own and ``referee worker`` processes):

* ``schemathesis``: schemathesis (the pinned dev dependency) over every operation of the OpenAPI
  document, more examples than the test suite's run, a random seed. Figures: server errors
  (ST101) and answers that disagree with the document (every other failure code), with the
  checks the test suite leaves out for the reasons given in
  tests/integration/api/test_openapi_schemathesis.py. Target: 0 and 0.
* ``upload``: an unauthenticated chunked upload of 600 MB to a server with API keys. Figure:
  the uvicorn process's peak RSS during the upload minus its RSS before. Target: < 50 MB.
* ``readyz``: four concurrent 10,000-item /v1/rewards batches; /readyz polled throughout.
  Figures: its latency (median, max) while checks were pending. Target: well under a second.
* ``kills``: jobs on two workers; a worker is killed (SIGKILL) every few seconds at whatever
  point its job is (taking a message, leased, running) and a new one started. Figure: jobs not
  finished one lease time after the work left would need (target: 0), and how long after the
  last kill every job had finished.

The one-item-behind-a-hostile-batch figure is ``python -m bench.math_fairness``.
Writes OUT/reliability.json and OUT/reliability.md (OUT defaults to bench/out/).
"""

from __future__ import annotations

import argparse
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx

from bench.clients import load_proc_tree, publish_with_figures
from referee.services.launcher import TINY_MODELS_ENV, Server, start_redis, start_referee

ROOT = Path(__file__).resolve().parent.parent
MIB = 1024 * 1024
EXCLUDED = "positive_data_acceptance,negative_data_rejection,use_after_free,"
EXCLUDED += "ensure_resource_availability,ignored_auth"
PeakRss = load_proc_tree().PeakRss


def start_server(env: dict[str, str], log: Path) -> Server:
    return start_referee(env, log=log, cwd=ROOT, timeout_s=120)


# -- sections ---------------------------------------------------------------------------------
def bench_schemathesis(tmp: Path, examples: int) -> dict[str, Any]:
    env = {**TINY_MODELS_ENV, "REFEREE_MAX_BATCH_ITEMS": "64"}
    server = start_server(env, tmp / "schemathesis-server.log")
    try:
        httpx.post(server.url + "/v1/curriculum/problems", json={"n": 1}, timeout=300)
        cmd = [sys.executable, "-m", "schemathesis.cli", "run", f"{server.url}/openapi.json"]
        cmd += ["--max-examples", str(examples), "--workers", "1", "--request-timeout", "120"]
        cmd += ["--exclude-checks", EXCLUDED, "--no-color"]
        run = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp)
        out = run.stdout + run.stderr
    finally:
        server.stop(timeout_s=30)
    (tmp / "schemathesis.txt").write_text(out)
    failures = {code: int(n) for code, n in re.findall(r"(ST\d+) [^:\n]+: (\d+)", out)}
    generated = re.search(r"(\d+) generated", out)
    tested = re.search(r"Tested: (\d+)", out)
    return {
        "operations": int(tested.group(1)) if tested else None,
        "test_cases": int(generated.group(1)) if generated else None,
        "server_errors": failures.get("ST101", 0),
        "mismatches": sum(n for code, n in failures.items() if code != "ST101"),
        "failure_codes": failures,
        "exit_code": run.returncode,
    }


def _chunks(total: int) -> Iterator[bytes]:
    block = b"x" * MIB
    for _ in range(total // MIB):
        yield block


def bench_upload(tmp: Path, megabytes: int) -> dict[str, Any]:
    server = start_server(
        {"REFEREE_API_KEYS": "k1", "REFEREE_MATH_WORKERS": "1"}, tmp / "upload.log"
    )
    try:
        with PeakRss(server.process.pid, every_s=0.005) as rss:
            start = time.perf_counter()
            try:
                r = httpx.post(
                    server.url + "/v1/rewards",
                    content=_chunks(megabytes * MIB),
                    headers={"content-type": "application/json"},
                    timeout=600,
                )
                status: int | str = r.status_code
            except httpx.HTTPError as exc:
                status = f"{type(exc).__name__}"
        return {
            "upload_mb": megabytes,
            "status": status,
            "rss_before_mb": round(rss.before, 1),
            "rss_peak_mb": round(rss.peak, 1),
            "rss_growth_mb": round(rss.peak - rss.before, 1),
            "answered_after_s": round(time.perf_counter() - start, 3),
        }
    finally:
        server.stop(timeout_s=30)


def bench_readyz(tmp: Path, batches: int, items: int) -> dict[str, Any]:
    server = start_server({"REFEREE_MATH_WORKERS": "2"}, tmp / "readyz.log")
    body = {
        "items": [
            {
                "id": str(i),
                "response": f"\\boxed{{{i % 50}}}",
                "grader": {"type": "math", "reference": "7"},
            }
            for i in range(items)
        ]
    }
    try:

        def batch() -> None:
            httpx.post(server.url + "/v1/rewards", json=body, timeout=1800)

        threads = [threading.Thread(target=batch) for _ in range(batches)]
        for t in threads:
            t.start()
        latencies, statuses = [], []
        with httpx.Client(base_url=server.url, timeout=60) as client:
            while any(t.is_alive() for t in threads):
                start = time.perf_counter()
                r = client.get("/readyz")
                took = (time.perf_counter() - start) * 1000
                if r.json().get("pending_checks", 0) > 0:
                    latencies.append(took)
                    statuses.append(r.status_code)
                time.sleep(0.1)
        for t in threads:
            t.join()
        return {
            "batches": batches,
            "items_each": items,
            "samples": len(latencies),
            "median_ms": round(statistics.median(latencies), 1) if latencies else None,
            "max_ms": round(max(latencies), 1) if latencies else None,
            "not_ready_answers": sum(1 for s in statuses if s != 200),
        }
    finally:
        server.stop(timeout_s=30)


def bench_kills(tmp: Path, jobs: int, kills: int, lease_s: float) -> dict[str, Any]:
    redis = start_redis(tmp)
    env = {
        "REFEREE_BROKER_URL": redis.url,
        "REFEREE_JOB_LEASE_S": str(lease_s),
        "REFEREE_MATH_WORKERS": "1",
        "REFEREE_SANDBOX_SLOTS": "1",
    }
    api = start_server(env, tmp / "kills-api.log")
    workers: list[subprocess.Popen[bytes]] = []

    def start_worker() -> None:
        cmd = [sys.executable, "-m", "referee.services.cli.main", "worker", "--concurrency", "1"]
        cmd += ["--loglevel", "warning", "--hostname", f"w{len(workers)}@%h"]
        log = open(tmp / f"kills-worker-{len(workers)}.log", "wb")
        workers.append(
            subprocess.Popen(
                cmd,
                env={**os.environ, **env},
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )

    try:
        for _ in range(2):
            start_worker()
        items = [
            {
                "id": str(i),
                "response": f"\\boxed{{{i}}}",
                "grader": {"type": "math", "reference": "3"},
            }
            for i in range(200)
        ]
        with httpx.Client(base_url=api.url, timeout=60) as client:
            ids = [
                client.post("/v1/jobs", json={"items": items, "chunk_size": 10}).json()["id"]
                for _ in range(jobs)
            ]
            rng = random.Random(0)
            for _ in range(kills):
                time.sleep(rng.uniform(0.5, 4.0))
                live = [w for w in workers if w.poll() is None]
                victim = rng.choice(live)
                os.killpg(victim.pid, signal.SIGKILL)
                victim.wait()
                start_worker()
            last_kill = time.monotonic()
            deadline = last_kill + lease_s + 600
            states: dict[str, str] = {}
            while time.monotonic() < deadline:
                states = {j: client.get(f"/v1/jobs/{j}").json()["state"] for j in ids}
                if all(s in ("succeeded", "failed", "cancelled") for s in states.values()):
                    break
                time.sleep(0.5)
            finished_after = time.monotonic() - last_kill
            ok = sum(1 for s in states.values() if s == "succeeded")
        return {
            "jobs": jobs,
            "kills": kills,
            "lease_s": lease_s,
            "succeeded": ok,
            "unfinished": sum(1 for s in states.values() if s in ("queued", "running")),
            "failed": sum(1 for s in states.values() if s == "failed"),
            "all_finished_after_last_kill_s": round(finished_after, 1),
        }
    finally:
        for w in workers:
            if w.poll() is None:
                os.killpg(w.pid, signal.SIGKILL)
                w.wait()
        api.stop(timeout_s=30)
        redis.stop(timeout_s=30)


# Each section's row of the report: its figures (the section's result) in a template.
ROWS = {
    "schemathesis": "| schemathesis, {operations} operations, {test_cases} cases: server errors"
    " / mismatches | {server_errors} / {mismatches} |",
    "upload": "| unauthenticated {upload_mb} MB chunked upload: answer, server RSS growth"
    " | {status}, +{rss_growth_mb} MB |",
    "readyz": "| /readyz under {batches} x {items_each}-item batches ({samples} polls):"
    " median / max | {median_ms} ms / {max_ms} ms |",
    "kills": "| {kills} worker kills over {jobs} jobs (lease {lease_s:g} s): unfinished, all"
    " done after the last kill | {unfinished}, {all_finished_after_last_kill_s} s |",
}


def markdown(res: dict[str, Any]) -> str:
    lines = [
        "Reliability figures (loopback, this machine).",
        "",
        "| figure | value |",
        "| --- | --- |",
    ]
    lines += [row.format(**res[section]) for section, row in ROWS.items() if section in res]
    return "\n".join([*lines, ""])


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.reliability", description=__doc__)
    ap.add_argument("--quick", action="store_true", help="small sizes (a few minutes)")
    ap.add_argument("--only", default="schemathesis,upload,readyz,kills", help="sections")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out", help="output folder")
    args = ap.parse_args(argv)
    sections = {s.strip() for s in args.only.split(",") if s.strip()}
    res: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="referee-reliability-") as tmp_name:
        tmp = Path(tmp_name)
        if "upload" in sections:
            res["upload"] = bench_upload(tmp, 100 if args.quick else 600)
        if "readyz" in sections:
            res["readyz"] = bench_readyz(tmp, 4, 1000 if args.quick else 10_000)
        if "kills" in sections:
            res["kills"] = bench_kills(tmp, 4 if args.quick else 20, 3 if args.quick else 12, 5.0)
        if "schemathesis" in sections:
            res["schemathesis"] = bench_schemathesis(tmp, 5 if args.quick else 30)
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / "schemathesis.txt").write_text((tmp / "schemathesis.txt").read_text())
    publish_with_figures(args.out, "reliability", res, markdown(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
