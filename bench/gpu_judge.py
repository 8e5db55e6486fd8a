"""The ``vllm`` judge backend against raw vLLM offline generation, on one GPU, with no internet.

    bash bench/gpu_judge.sh [--items 1024] [--max-tokens 64] [--reps 3]   # the prepared run
    python -m bench.gpu_judge --help                                      # this part alone

A random Llama of about 220M parameters (``bench`` preset of :mod:`referee.genrm.local_model`:
config and a BPE tokenizer written locally, weights made on the GPU by vLLM's dummy loader) is
loaded once, in referee's :class:`~referee.genrm.vllm_backend.VLLMBackend`. On that one engine and
the exact prompts the pointwise judge sends, each workload is timed four ways:

* ``raw vLLM``: ``llm.generate(prompts, vllm.SamplingParams(...))``, written by hand;
* ``backend``: ``VLLMBackend.generate`` (request shaping, the engine thread, conversion);
* ``judge``: ``judge_pointwise`` (templates, guards, generation, verdict parsing);
* ``judge, 8 callers``: the same items as 8 concurrent judge calls, as a server receives them
  (the backend runs calls that overlap as one ``generate``).

Workloads: ``verdict`` (greedy, ``--max-tokens``; a random model rarely stops early, so every
path decodes the same tokens) and ``label_probs`` (one token and P(Yes)/P(No), read with
``logprob_token_ids``). Every prompt is run once before timing so vLLM's prefix cache is equally
warm for every path. ratio = raw seconds / referee seconds, i.e. judgements/s over raw
generations/s; the target is >= 0.9. The table is printed and written to ``--out``/gpu_judge.md
(``$OUT`` by default when set).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import re
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from referee.genrm.backend import SamplingParams
from referee.genrm.judges import JudgeItem, fill_template, judge_pointwise
from referee.genrm.templates import load_template

ROOT = Path(__file__).resolve().parent.parent
TARGET = 0.9
WORKLOADS = ("verdict", "label_probs")
CALLERS = 8


def bench_items(n: int) -> list[JudgeItem]:
    """n distinct judge items (different questions, responses and references)."""
    return [
        JudgeItem(
            f"What is {k} + {k + 7}? Explain briefly.",
            f"Adding the two numbers gives {2 * k + 7 + (k % 3 == 0)}.",
            reference=str(2 * k + 7),
        )
        for k in range(n)
    ]


def judge_prompts(items: Sequence[JudgeItem], workload: str) -> list[str]:
    """The exact prompts ``judge_pointwise`` sends for ``workload`` (binary verdicts)."""
    template = load_template("pointwise_binary")
    prompts = [fill_template(template, it) for it in items]
    if workload == "label_probs":
        prompts = [p + "\n[RESULT]" for p in prompts]
    return prompts


def referee_params(workload: str, max_tokens: int) -> SamplingParams:
    """What the judge asks the backend for (``judge_pointwise``'s own parameters)."""
    if workload == "label_probs":
        return SamplingParams(max_tokens=1, label_tokens=("Yes", "No"))
    return SamplingParams(max_tokens=max_tokens)


def raw_sampling_kwargs(
    workload: str, max_tokens: int, label_ids: Sequence[int], token_ids_supported: bool
) -> dict[str, Any]:
    """``vllm.SamplingParams`` arguments a vLLM user would write for the same work."""
    if workload == "label_probs":
        kw: dict[str, Any] = {"temperature": 0.0, "max_tokens": 1}
        if token_ids_supported:
            kw["logprob_token_ids"] = sorted(set(label_ids))
        else:
            kw["logprobs"] = 20
        return kw
    return {"temperature": 0.0, "max_tokens": max_tokens}


def torch_pin(requirements: Sequence[str]) -> str | None:
    """The torch version a package's ``Requires-Dist`` lines pin (``torch==X``), if any."""
    for req in requirements:
        m = re.match(r"^torch\s*==\s*([^\s;,]+)\s*(;.*)?$", req.strip())
        if m and "extra ==" not in (m.group(2) or ""):
            return m.group(1)
    return None


@dataclass(frozen=True, slots=True)
class Row:
    workload: str
    path: str
    seconds: float
    items: int
    raw_seconds: float

    @property
    def per_second(self) -> float:
        return self.items / self.seconds

    @property
    def ratio(self) -> float:
        return self.raw_seconds / self.seconds


def report(rows: Sequence[Row], meta: dict[str, str]) -> str:
    """The markdown report: the setting, one row per (workload, path), the target."""
    lines = ["# vllm judge backend vs raw vLLM offline generation", ""]
    lines += [f"- {k}: {v}" for k, v in meta.items()]
    lines += [
        "",
        "| workload | path | s (median) | items/s | ratio vs raw |",
        "|---|---|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r.workload} | {r.path} | {r.seconds:.3f} | {r.per_second:.0f} | {r.ratio:.3f} |"
        )
    judged = [r for r in rows if r.path.startswith("judge")]
    worst = min((r.ratio for r in judged), default=float("nan"))
    met = "met" if judged and worst >= TARGET else "NOT met"
    lines += [
        "",
        f"ratio = raw vLLM seconds / referee seconds on the same prompts and engine (judgements/s "
        f"over raw generations/s); target >= {TARGET}: {met} (lowest judge ratio {worst:.3f}).",
    ]
    return "\n".join(lines) + "\n"


def _median_time(fn: Callable[[], Any], reps: int) -> float:
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _environment(vllm: Any) -> dict[str, str]:
    import torch

    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no CUDA device"
    return {
        "GPU": gpu,
        "vLLM": str(getattr(vllm, "__version__", "?")),
        "torch": str(torch.__version__),
        "Python": platform.python_version(),
    }


def _measure(
    backend: Any, vllm: Any, items: list[JudgeItem], workload: str, args: argparse.Namespace
) -> list[Row]:
    prompts = judge_prompts(items, workload)
    label_ids = [backend.tokenizer.encode(t, add_special_tokens=False)[0] for t in ("Yes", "No")]
    raw_params = vllm.SamplingParams(
        **raw_sampling_kwargs(workload, args.max_tokens, label_ids, backend.token_ids_supported)
    )
    ours = referee_params(workload, args.max_tokens)
    label_probs = workload == "label_probs"
    size = -(-len(items) // CALLERS)
    chunks = [items[k : k + size] for k in range(0, len(items), size)]

    def raw() -> Any:
        return backend.call(lambda llm: llm.generate(prompts, raw_params, use_tqdm=False))

    def generate() -> Any:
        return asyncio.run(backend.generate(prompts, ours))

    async def judged(batch: list[JudgeItem]) -> Any:
        return await judge_pointwise(
            backend, batch, max_tokens=args.max_tokens, label_probs=label_probs
        )

    def judge() -> Any:
        return asyncio.run(judged(items))

    def callers() -> Any:
        async def all_callers() -> Any:
            return await asyncio.gather(*(judged(c) for c in chunks))

        return asyncio.run(all_callers())

    raw()  # every prompt once: graphs warm, the prefix cache equally full for every path
    judge()
    raw_s = _median_time(raw, args.reps)
    rows = [Row(workload, "raw vLLM", raw_s, len(items), raw_s)]
    for path, fn in (
        ("backend", generate),
        ("judge", judge),
        (f"judge, {CALLERS} callers", callers),
    ):
        rows.append(Row(workload, path, _median_time(fn, args.reps), len(items), raw_s))
    for row in rows:
        print(f"{row.workload:12s} {row.path:18s} {row.seconds:8.3f} s", flush=True)
    return rows


def run(args: argparse.Namespace) -> tuple[list[Row], dict[str, str]]:
    from referee.genrm.local_model import PRESETS, parameter_count, write_local_model
    from referee.genrm.vllm_backend import VLLMBackend, import_vllm

    vllm = import_vllm()
    model_dir = write_local_model(Path(args.work) / "model", args.preset, weights=False)
    backend = VLLMBackend(
        str(model_dir),
        name=f"random-{args.preset}",
        load_format="dummy",
        dtype="bfloat16",
        gpu_memory_utilization=args.gpu_memory_utilization,
        max_model_len=4096,
        seed=0,
    )
    vocab = len(backend.tokenizer)
    meta = {
        **_environment(vllm),
        "model": f"random Llama, preset {args.preset!r}, "
        f"{parameter_count(PRESETS[args.preset], vocab) / 1e6:.0f}M parameters, "
        f"BPE vocabulary {vocab}, bf16, weights from vLLM's dummy loader",
        "load": f"{args.items} pointwise judgements, max_tokens {args.max_tokens} (verdict), "
        f"median of {args.reps}; {CALLERS} callers for the concurrent row",
        "exact label log-probs (logprob_token_ids)": str(backend.token_ids_supported),
    }
    items = bench_items(args.items)
    try:
        rows = [row for w in WORKLOADS for row in _measure(backend, vllm, items, w, args)]
    finally:
        asyncio.run(backend.close())
    return rows, meta


def environment_problems(
    vllm_error: str | None, vllm_requires: Sequence[str], torch_version: str | None, cuda: bool
) -> list[str]:
    """What stops the benchmark here, each with what to do about it."""
    problems = []
    if vllm_error is not None:
        problems.append(
            f"vLLM cannot be imported ({vllm_error}). Install pyproject's vllm extra "
            "(vllm==0.33.0, which pins torch==2.14.0 and transformers<5.21) in this Python, or "
            "put those wheels and every dependency this machine lacks in $REFEREE_WHEELS "
            "(default .whl/) for bench/gpu_judge.sh to install offline."
        )
    pin = torch_pin(vllm_requires)
    if pin and torch_version and torch_version.split("+")[0] != pin:
        problems.append(
            f"this vLLM needs torch=={pin}; this Python has torch {torch_version} "
            "(its compiled kernels will not load): bring that torch's wheel too."
        )
    if not cuda:
        problems.append("no CUDA device is visible to torch: run on a machine with an NVIDIA GPU.")
    return problems


def check() -> int:
    """Print what is missing for the benchmark; 0 when nothing is."""
    import importlib.metadata

    vllm_error = None
    try:
        import vllm  # noqa: F401
    except Exception as exc:  # an ImportError, or a broken install failing on import
        vllm_error = f"{type(exc).__name__}: {exc}"
    try:
        requires = importlib.metadata.requires("vllm") or []
    except importlib.metadata.PackageNotFoundError:
        requires = []
    try:
        import torch

        torch_version: str | None = str(torch.__version__)
        cuda = bool(torch.cuda.is_available())
    except Exception:
        torch_version, cuda = None, False
    problems = environment_problems(vllm_error, requires, torch_version, cuda)
    for problem in problems:
        print(f"gpu_judge: {problem}")
    return 3 if problems else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.gpu_judge", description=__doc__)
    ap.add_argument("--items", type=int, default=1024)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--preset", default="bench", choices=["tiny", "bench"])
    ap.add_argument("--gpu-memory-utilization", type=float, default=0.85)
    out_default = Path(os.environ["OUT"]) if os.environ.get("OUT") else ROOT / "bench" / "out"
    ap.add_argument("--out", type=Path, default=out_default)
    ap.add_argument("--work", default=None, help="where the model is written (a temp dir)")
    ap.add_argument("--check", action="store_true", help="only say what is missing here")
    args = ap.parse_args(argv)
    if args.check:
        return check()
    with tempfile.TemporaryDirectory(prefix="referee-gpu-judge-") as tmp:
        args.work = args.work or tmp
        rows, meta = run(args)
    text = report(rows, meta)
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "gpu_judge.md").write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
