"""Procedural environments: rewards/s through /v1/rewards against the scorers called directly,
and problems/s generated.

    python -m bench.environments [--per-task 8] [--rounds 3]

Items: ``--per-task`` problems of every served reasoning-gym family (default config, seed 0),
each answered once right and once wrong (another problem's answer), in ``<answer>`` tags.

* **direct**: in this process, reasoning-gym's own ``extract_answer`` and each task's
  ``score_answer`` on the dataset objects that generated the problems (the peer: what a trainer
  wiring reasoning-gym by hand runs, with no deadline and no isolation).
* **/v1/rewards**: the same items with the ``procedural`` grader, one request per round, on a
  real uvicorn server with 1 and with 2 check workers (every item in a worker process under a
  deadline; the entry travels as JSON and the task's dataset object is rebuilt from its config
  once per worker).

* **procedural.score in-process**: referee's wrapper (extraction, guards, entry checks) with
  no pool and no HTTP, to tell the wrapper's cost from the transport's.

Generation: problems/s of ``procedural.generate`` in-process for every family, and of
``POST /v1/environments/basic_arithmetic/problems`` (1,000 problems, chunks on the pool).
Writes bench/out/environments.md.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.clients import publish
from referee.services.launcher import Server, start_referee
from referee.verifiers import procedural

ROOT = Path(__file__).resolve().parent.parent


def _start(workers: int, log: Path) -> Server:
    env = {"REFEREE_MATH_WORKERS": str(workers), "REFEREE_MAX_BATCH_ITEMS": "100000"}
    return start_referee(env, log=log, timeout_s=120)


def build_items(
    per_task: int,
) -> tuple[list[dict[str, Any]], float, int, dict[str, float]]:
    """Items (task, entry, response) for every family; generation time, problem count, and
    seconds per problem of each family."""
    items = []
    t = time.perf_counter()
    generated = 0
    per_problem: dict[str, float] = {}
    for task in procedural.family_names():
        started = time.perf_counter()
        problems = procedural.generate(task, {}, seed=0, n=per_task)
        per_problem[task] = (time.perf_counter() - started) / max(1, len(problems))
        generated += len(problems)
        for p in problems:
            others = [q["answer"] for q in problems if q["answer"] != p["answer"]]
            right = p["answer"] or "?"
            wrong = (others[0] if others else None) or "zzz"
            for response in (f"<answer>{right}</answer>", f"<answer>{wrong}</answer>"):
                items.append({"task": task, "entry": p["entry"], "response": response})
    return items, time.perf_counter() - t, generated, per_problem


def direct(items: list[dict[str, Any]], rounds: int) -> tuple[float, list[float]]:
    import reasoning_gym
    from reasoning_gym.utils import extract_answer

    datasets = {
        t: reasoning_gym.create_dataset(t, seed=0, size=1) for t in {i["task"] for i in items}
    }
    entries = [
        {"question": "", **procedural._RESTORE.get(i["task"], lambda e: e)(i["entry"])}
        for i in items
    ]
    scores: list[float] = []
    best = float("inf")
    for _ in range(rounds):
        scores = []
        t = time.perf_counter()
        for item, entry in zip(items, entries, strict=True):
            try:
                scores.append(
                    float(
                        datasets[item["task"]].score_answer(extract_answer(item["response"]), entry)
                    )
                )
            except Exception:
                scores.append(0.0)
        best = min(best, time.perf_counter() - t)
    return len(items) / best, scores


def wrapped(items: list[dict[str, Any]], rounds: int) -> float:
    """referee's procedural.score in-process: extraction, guards, the same scorers."""
    best = float("inf")
    for _ in range(rounds):
        t = time.perf_counter()
        for item in items:
            procedural.score(item["task"], item["entry"], item["response"])
        best = min(best, time.perf_counter() - t)
    return len(items) / best


def over_http(url: str, items: list[dict[str, Any]], rounds: int) -> tuple[float, list[float]]:
    body = {
        "items": [
            {
                "id": str(k),
                "response": i["response"],
                "grader": {"type": "procedural", "task": i["task"], "entry": i["entry"]},
            }
            for k, i in enumerate(items)
        ]
    }
    with httpx.Client(timeout=600) as client:
        for _ in range(3):  # warm every worker: imports, each task's dataset object
            client.post(url + "/v1/rewards", json=body).raise_for_status()
        best = float("inf")
        for _ in range(rounds):
            t = time.perf_counter()
            r = client.post(url + "/v1/rewards", json=body)
            r.raise_for_status()
            best = min(best, time.perf_counter() - t)
    return len(items) / best, [x["score"] for x in r.json()["rewards"]]


def http_generation(url: str, n: int) -> float:
    with httpx.Client(timeout=600) as client:
        client.post(url + "/v1/environments/basic_arithmetic/problems", json={"n": 64})
        t = time.perf_counter()
        r = client.post(
            url + "/v1/environments/basic_arithmetic/problems", json={"n": n, "seed": 1}
        )
        r.raise_for_status()
        return n / (time.perf_counter() - t)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m bench.environments", description=__doc__.split("\n")[0]
    )
    ap.add_argument("--per-task", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out")
    args = ap.parse_args(argv)

    procedural.families()  # import reasoning-gym before timing
    items, gen_s, generated, per_problem = build_items(args.per_task)
    t = time.perf_counter()
    procedural.generate("basic_arithmetic", {}, seed=1, n=1000)
    arith_rate = 1000 / (time.perf_counter() - t)
    direct_rate, direct_scores = direct(items, args.rounds)
    wrapped_rate = wrapped(items, args.rounds)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for workers in (1, 2):
            with _start(workers, Path(tmp) / f"server{workers}.log") as server:
                rate, scores = over_http(server.url, items, args.rounds)
                gen_http = http_generation(server.url, 1000) if workers == 2 else None
            agree = sum(1 for a, b in zip(scores, direct_scores, strict=True) if a == b) / len(
                items
            )
            rows.append((workers, rate, agree, gen_http))
    families = len(procedural.family_names())
    lines = [
        "# Procedural environments: rewards/s and problems/s",
        "",
        f"{len(items)} items: {args.per_task} problems of each of {families} reasoning-gym "
        f"families, each answered right and wrong; the fastest of {args.rounds} rounds (after 3 "
        f"warm-up rounds through HTTP), on {os.cpu_count()} CPUs: the figures move with whatever "
        "else loads the machine.",
        "",
        "| scorer | items/s | vs direct | same score as direct |",
        "|---|---:|---:|---:|",
        f"| direct: reasoning-gym's extract_answer + score_answer, in-process | {direct_rate:,.0f} "
        "| 1.00x | |",
    ]
    lines.append(
        f"| referee's `procedural.score`, in-process (no pool, no HTTP) | {wrapped_rate:,.0f} | "
        f"{wrapped_rate / direct_rate:.2f}x | |"
    )
    for workers, rate, agree, _ in rows:
        lines.append(
            f"| `/v1/rewards`, procedural grader, {workers} check worker(s) | {rate:,.0f} | "
            f"{rate / direct_rate:.2f}x | {agree:.1%} |"
        )
    gen_http = rows[-1][3] or 0.0
    lines += [
        "",
        "| generation | problems/s |",
        "|---|---:|",
        f"| every family, {args.per_task} each, in-process (default configs) | "
        f"{generated / gen_s:,.0f} |",
        f"| basic_arithmetic, 1,000, in-process | {arith_rate:,.0f} |",
        f"| basic_arithmetic, 1,000, `POST /v1/environments/basic_arithmetic/problems` "
        f"(2 workers) | {gen_http:,.0f} |",
    ]
    slowest = sorted(per_problem.items(), key=lambda kv: -kv[1])[:5]
    lines += [
        "",
        "Slowest generators (seconds per problem, default config): "
        + ", ".join(f"`{task}` {sec:.2f} s" for task, sec in slowest)
        + ".",
    ]
    text = "\n".join(lines)
    publish(args.out, "environments.md", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
