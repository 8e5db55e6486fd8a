"""Judge throughput against the backend's raw batched generation on the same prompts.

    python -m bench.judge [--items 64] [--max-tokens 32]

For the ``transformers`` backend (in-process) and the ``openai`` backend (against referee's test
OpenAI-compatible server serving the same tiny model on loopback): judgements/s of the pointwise
judge versus generations/s of the backend on the exact prompts the judge sends. The ratio is the
judge's own overhead (templating, guards, verdict parsing, batching); target >= 0.8 on CPU.
Writes bench/out/judge.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from pathlib import Path
from typing import Any

from bench.clients import publish
from referee.genrm.backend import LLMBackend, SamplingParams
from referee.genrm.judges import JudgeItem, fill_template, judge_pointwise
from referee.genrm.openai_backend import OpenAIBackend
from referee.genrm.openai_server import tiny_transformers_backend
from referee.genrm.templates import load_template
from referee.services.launcher import start_tiny_llm

ROOT = Path(__file__).resolve().parent.parent


def items(n: int) -> list[JudgeItem]:
    return [
        JudgeItem(f"What is {k} + {k}?", f"The sum is {2 * k}.", reference=str(2 * k))
        for k in range(n)
    ]


async def measure(
    backend: LLMBackend, batch: list[JudgeItem], max_tokens: int, reps: int
) -> tuple[float, float]:
    template = load_template("pointwise_binary")
    prompts = [fill_template(template, it) for it in batch]
    raw_times, judge_times = [], []
    for _ in range(reps):
        t = time.perf_counter()
        await backend.generate(prompts, SamplingParams(max_tokens=max_tokens))
        raw_times.append(time.perf_counter() - t)
        t = time.perf_counter()
        await judge_pointwise(backend, batch, max_tokens=max_tokens)
        judge_times.append(time.perf_counter() - t)
    return statistics.median(raw_times), statistics.median(judge_times)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.judge", description=__doc__.split("\n")[0])
    ap.add_argument("--items", type=int, default=64)
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out")
    args = ap.parse_args(argv)
    batch = items(args.items)
    rows: list[list[Any]] = []

    local = tiny_transformers_backend()
    asyncio.run(measure(local, batch[:4], 4, 1))  # warm-up
    raw, judged = asyncio.run(measure(local, batch, args.max_tokens, args.reps))
    rows.append(["transformers (in-process)", raw, judged])

    with start_tiny_llm() as llm:
        url = llm.url

        async def remote() -> tuple[float, float]:
            backend = OpenAIBackend(url, "tiny-llama", concurrency=8)
            try:
                await measure(backend, batch[:4], 4, 1)
                return await measure(backend, batch, args.max_tokens, args.reps)
            finally:
                await backend.close()

        raw, judged = asyncio.run(remote())
        rows.append(["openai (test server, loopback)", raw, judged])

    lines = [
        "# Judge throughput vs raw generation",
        "",
        f"{args.items} pointwise judgements, max_tokens={args.max_tokens}, median of "
        f"{args.reps}; tiny random 2-layer Llama (ByT5 tokenizer), {os.cpu_count()} CPUs.",
        "",
        "| backend | raw generation s | judge s | generations/s | judgements/s | ratio |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, raw_s, judge_s in rows:
        lines.append(
            f"| {name} | {raw_s:.3f} | {judge_s:.3f} | {args.items / raw_s:.1f} | "
            f"{args.items / judge_s:.1f} | {raw_s / judge_s:.2f} |"
        )
    lines += ["", "ratio = judgements/s ÷ generations/s on the same prompts (target ≥ 0.8)."]
    text = "\n".join(lines)
    publish(args.out, "judge.md", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
