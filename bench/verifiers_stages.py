"""Where a /v1/rewards batch of cheap text_similarity items spends its time, stage by stage.

    python -m bench.verifiers_stages [--metric fuzzy_match gleu rouge_1] [--items 2000]

Each stage of the server's path is timed on its own, in this process, on the same seeded items
(best of 3 rounds, microseconds per item): the metric's library called directly (the peer of
``bench.verifiers``), the request's JSON parsed into ``RewardsRequest``, the graders dumped to
dicts, ``score_item`` called in this process, the results built (``to_result``), the response
serialised, and the batch on a real one-worker check pool (``on_pool``: ``score_item`` in the
worker plus the pool's per-item IPC, futures and deadline bookkeeping). What is not here is
uvicorn's and the HTTP client's share, which ``bench.verifiers`` measures with the rest. The
machine is shared: the figures are noisy, the proportions are what to read.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import time
from collections.abc import Callable
from typing import Any

WORDS = (
    "the river runs slow and deep under an old stone bridge while children watch boats drift "
    "past the market where traders sell bread fish and bright cloth"
).split()


def _best_us(fn: Callable[[], Any], n: int, rounds: int = 3) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(rounds):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best * 1e6 / n, out


def stages(metric: str, n: int) -> list[tuple[str, float]]:
    from referee.client.models import RewardsRequest, RewardsResponse
    from referee.services.scoring.batch import on_pool, to_result
    from referee.verifiers import CheckPool
    from referee.verifiers.registry import score_item
    from referee.verifiers.text_similarity import metric_score

    rng = random.Random(0)
    pairs = [
        (" ".join(rng.choices(WORDS, k=12)), " ".join(rng.choices(WORDS, k=12))) for _ in range(n)
    ]
    items = [
        {
            "id": str(i),
            "response": r,
            "grader": {"type": "text_similarity", "reference": ref, "evaluation_metric": metric},
        }
        for i, (r, ref) in enumerate(pairs)
    ]
    body = json.dumps({"items": items}).encode()
    rows: list[tuple[str, float]] = []
    us, _ = _best_us(lambda: [metric_score(r, ref, metric) for r, ref in pairs], n)
    rows.append(("peer: the library in-process", us))
    us, req = _best_us(lambda: RewardsRequest.model_validate_json(body), n)
    rows.append(("request JSON -> RewardsRequest", us))
    us, graders = _best_us(lambda: [it.grader.model_dump() for it in req.items], n)
    rows.append(("grader.model_dump()", us))
    responses = [it.response for it in req.items]
    us, outs = _best_us(
        lambda: [score_item(g, r) for g, r in zip(graders, responses, strict=True)], n
    )
    rows.append(("score_item in-process", us))
    us, results = _best_us(
        lambda: [to_result(it.id, o) for it, o in zip(req.items, outs, strict=True)], n
    )
    rows.append(("to_result", us))
    resp = RewardsResponse(rewards=results, groups=[], mean=0.0, elapsed_ms=0.0)
    us, _ = _best_us(resp.model_dump_json, n)
    rows.append(("response -> JSON", us))
    pool = CheckPool(workers=1, timeout_s=20.0)
    try:

        def pooled() -> list[Any]:
            return asyncio.run(on_pool(pool, graders, responses, 5.0, 20.0))

        pooled()  # the worker's imports
        us, _ = _best_us(pooled, n)
        rows.append(("on_pool, 1 worker (score_item + IPC)", us))
    finally:
        pool.close()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--metric", nargs="+", default=["fuzzy_match", "gleu", "rouge_1"])
    ap.add_argument("--items", type=int, default=2000)
    args = ap.parse_args()
    for metric in args.metric:
        rows = stages(metric, args.items)
        server = sum(us for label, us in rows[1:] if label != "score_item in-process")
        print(f"\n{metric}: {args.items} items, microseconds per item (best of 3)")
        for label, us in rows:
            print(f"  {label:42s} {us:8.2f}")
        print(f"  {'server path, without HTTP (sum)':42s} {server:8.2f}")
        print(f"  {'bound on the ratio, without HTTP':42s} {rows[0][1] / server:8.2f}x")


if __name__ == "__main__":
    main()
