"""Fairness of the check pool over HTTP: how long a one-item request waits behind a hostile batch.

    .venv/bin/python -m bench.math_fairness            # 16 hostile items, probes for their life
    .venv/bin/python -m bench.math_fairness --quick    # 4 hostile items, a deadline of 2 s

A real uvicorn server is started here with the defaults an operator gets (2 check workers, a
5 s deadline per check). One client sends a hostile batch: ``--hostile`` items (16 by default,
a few KB of JSON) each of which holds a worker for seconds: the determinant of a 5x5 matrix of
symbols against a scalar reference (about 2.6 s of a worker each, the largest the math guards
let through: a 6x6's, which held a worker to the deadline, and the issue's
``\\boxed{(x+y+z+w)^{40}}`` are refused at once now).
While the batch is scored, a second client sends one-item requests one after the other (a
simple correct answer) and records each one's wait. Then the same is done with a hostile client
that hangs up after a second: how long until the pool is free again (its queued checks dropped,
its running one stopped).

Figures (printed, and written to OUT/math_fairness.json and OUT/math_fairness.md; OUT defaults
to bench/out/):

* ``idle_ms``: a one-item request on an idle server (median of 5);
* ``behind_hostile_ms``: median and max wait of the one-item requests sent while the batch ran
  (target: max within 1 s; before lanes: 34.8 s);
* ``hostile_batch_s``: how long the hostile batch itself took, and how many of its items timed
  out (to show its items were slow: with ``--quick``'s 2 s deadline all of them do);
* ``freed_after_hangup_s``: after the hostile client hung up, until no check was running.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from bench.clients import publish_with_figures
from referee.services.launcher import Server, start_referee

ROOT = Path(__file__).resolve().parent.parent


def _determinant(n: int, name: str) -> str:
    """The determinant of an n x n matrix of distinct symbols: the LaTeX parser expands it while
    it reads the answer (2.6 s for n = 5; from n = 6 on the math guards refuse it unread)."""
    rows = ("&".join(f"{name}_{{{i}{j}}}" for j in range(n)) for i in range(n))
    return "\\det\\begin{pmatrix}" + "\\\\".join(rows) + "\\end{pmatrix}"


HOSTILE = [_determinant(5, "x"), _determinant(5, "a"), _determinant(5, "b"), _determinant(5, "c")]
REFERENCES = ["x", "1", "0", "y"]  # not equal: deciding it needs the determinant
PROBE = {"id": "p", "response": "\\boxed{4}", "grader": {"type": "math", "reference": "4"}}


def hostile_items(n: int) -> list[dict[str, Any]]:
    return [
        {
            "id": f"h{i}",
            "response": f"\\boxed{{{HOSTILE[i % len(HOSTILE)]}}}",
            "grader": {"type": "math", "reference": REFERENCES[(i // len(HOSTILE)) % 4]},
        }
        for i in range(n)
    ]


def start_server(workers: int, timeout_s: float) -> Server:
    env = {"REFEREE_MATH_WORKERS": str(workers), "REFEREE_MATH_TIMEOUT_S": str(timeout_s)}
    return start_referee(env, cwd=ROOT, timeout_s=90)


def probe_ms(client: httpx.Client) -> float:
    start = time.perf_counter()
    r = client.post("/v1/rewards", json={"items": [PROBE]})
    r.raise_for_status()
    assert r.json()["rewards"][0]["score"] == 1.0, r.text
    return (time.perf_counter() - start) * 1000


def behind_hostile(base: str, n: int) -> dict[str, Any]:
    """Probe one item at a time while a hostile batch of ``n`` items is scored."""
    result: dict[str, Any] = {}

    def hostile() -> None:
        start = time.perf_counter()
        with httpx.Client(base_url=base, timeout=900) as client:
            r = client.post("/v1/rewards", json={"items": hostile_items(n)})
        rewards = r.json()["rewards"]
        result["hostile_batch_s"] = time.perf_counter() - start
        result["hostile_timeouts"] = sum(1 for x in rewards if x["details"]["outcome"] == "timeout")
        result["hostile_outcomes"] = sorted({x["details"]["outcome"] for x in rewards})

    body = json.dumps({"items": hostile_items(n)}).encode()
    result["hostile_body_bytes"] = len(body)
    thread = threading.Thread(target=hostile)
    thread.start()
    waits = []
    with httpx.Client(base_url=base, timeout=900) as client:
        time.sleep(0.5)  # the batch holds every worker by now
        while thread.is_alive():
            waits.append(probe_ms(client))
            time.sleep(0.25)
    thread.join()
    result["behind_hostile_ms"] = {
        "n": len(waits),
        "median": statistics.median(waits) if waits else None,
        "max": max(waits) if waits else None,
    }
    return result


def freed_after_hangup(base: str, n: int) -> float:
    """A hostile client sends ``n`` items and hangs up after a second: seconds from the hang-up
    until the server runs no check."""
    body = json.dumps({"items": hostile_items(n)}).encode()
    sock = socket.create_connection(("127.0.0.1", int(base.rsplit(":", 1)[1])))
    head = (
        f"POST /v1/rewards HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    sock.sendall(head + body)
    time.sleep(1.0)
    sock.close()
    gone = time.perf_counter()
    with httpx.Client(base_url=base, timeout=30) as client:
        while time.perf_counter() - gone < 120:
            ready = client.get("/readyz").json()
            if ready["running_checks"] == 0 and ready["pending_checks"] == 0:
                return time.perf_counter() - gone
            time.sleep(0.05)
    return float("inf")


def run(hostile: int, workers: int, timeout_s: float) -> dict[str, Any]:
    server = start_server(workers, timeout_s)
    base = server.url
    try:
        with httpx.Client(base_url=base, timeout=60) as client:
            for _ in range(3):
                probe_ms(client)
            idle = statistics.median(probe_ms(client) for _ in range(5))
        out: dict[str, Any] = {
            "workers": workers,
            "deadline_s": timeout_s,
            "hostile_items": hostile,
            "idle_ms": idle,
        }
        out.update(behind_hostile(base, hostile))
        out["freed_after_hangup_s"] = freed_after_hangup(base, hostile)
        return out
    finally:
        server.stop(timeout_s=30)


def markdown(res: dict[str, Any]) -> str:
    behind = {
        k: (v if v is not None else float("nan")) for k, v in res["behind_hostile_ms"].items()
    }
    return "\n".join(
        [
            f"Check pool fairness over HTTP ({res['workers']} check workers, "
            f"{res['deadline_s']:g} s deadline per check).",
            "",
            "| figure | value |",
            "| --- | --- |",
            f"| one-item request, idle server (median) | {res['idle_ms']:.1f} ms |",
            f"| one-item request behind {res['hostile_items']} hostile items "
            f"({res['hostile_body_bytes']} B), median of {behind['n']} "
            f"| {behind['median']:.1f} ms |",
            f"| the same, worst | {behind['max']:.1f} ms |",
            f"| the hostile batch itself | {res['hostile_batch_s']:.1f} s, "
            f"{res['hostile_timeouts']} of {res['hostile_items']} items timed out |",
            f"| hostile client hung up after 1 s: pool free again after "
            f"| {res['freed_after_hangup_s']:.2f} s |",
            "",
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.math_fairness", description=__doc__)
    ap.add_argument("--quick", action="store_true", help="4 hostile items, 2 s deadline")
    ap.add_argument("--hostile", type=int, default=16, help="items in the hostile batch")
    ap.add_argument("--workers", type=int, default=2, help="the server's check workers")
    ap.add_argument("--deadline", type=float, default=5.0, help="seconds per check")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out", help="output folder")
    args = ap.parse_args(argv)
    hostile, deadline = (4, 2.0) if args.quick else (args.hostile, args.deadline)
    res = run(hostile, args.workers, deadline)
    if not res["behind_hostile_ms"]["n"]:
        print("the hostile batch was over before a probe could be sent: its items are not slow")
    publish_with_figures(args.out, "math_fairness", res, markdown(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
