"""The ``referee`` command.

referee serve --port 8000                    # the API, everything in one process
referee verify '\\boxed{0.5}' '\\frac12'      # one check, prints the verdict
referee rewards batch.jsonl --out scored.jsonl [--server http://127.0.0.1:8000]
referee run sol.cpp --lang cpp --stdin '1 2'  # one program in the sandbox (or --server URL)
referee worker                                # a Celery worker for jobs (REFEREE_BROKER_URL)
referee jobs submit items.jsonl --wait        # a job, with a progress bar (see cli/jobs.py)
referee judge --grader '{"type": "genrm"}' --prompt P --response R  # a model judge (cli/judge.py)
referee train grpo --model M --dataset d.jsonl --grader '{"type": "math"}'  (see train_cli)
referee dataset --task basic_arithmetic --n 1000 --seed 1 --out train.jsonl  (see cli/dataset.py)

`referee run` prints the program's stdout to stdout, its stderr and then a status line to
stderr, and exits with 0 (ok), 1 (runtime_error), 3 (compile_error), 4 (time_limit),
5 (memory_limit), 6 (output_limit) or 7 (sandbox_error or no sandbox).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterator, Sequence
from typing import Any, TextIO

from referee.client.errors import RefereeError
from referee.services.jsonl import json_lines

__all__ = ["main"]


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    # The app is built by each uvicorn worker from the environment: pass flags through it.
    if args.math_workers:
        os.environ["REFEREE_MATH_WORKERS"] = str(args.math_workers)
    os.environ["REFEREE_HOST"], os.environ["REFEREE_PORT"] = args.host, str(args.port)
    from referee.services.settings import Settings

    uvicorn.run(
        "referee.services.app:create_app",
        factory=True,
        host=args.host,
        port=args.port,
        workers=args.workers,
        log_level=args.log_level,
        h11_max_incomplete_event_size=Settings().max_header_bytes,
    )
    return 0


def _verify(args: argparse.Namespace) -> int:
    from referee.verifiers import CheckPool, TimedOut, WorkerFailed
    from referee.verifiers.math import verify
    from referee.verifiers.registry import math_config

    config = math_config({"extract": args.extract})
    with CheckPool(workers=1, timeout_s=args.timeout) as pool:
        [outcome] = pool.map(verify, [(args.response, args.reference, config)])
        result = outcome.result()
    if isinstance(result, TimedOut):
        out: dict[str, Any] = {
            "score": 0.0,
            "outcome": "timeout",
            "reason": f"no verdict within {args.timeout:g} s",
        }
    elif isinstance(result, WorkerFailed):
        out = {"score": 0.0, "outcome": "error", "reason": result.reason}
    else:
        out = result.to_dict()
    if args.json:
        print(json.dumps(out))
    else:
        width = max(len(k) for k in out)
        for key, value in out.items():
            if value is not None:
                print(f"{key:<{width}}  {value}")
    return 0 if out["score"] == 1.0 else 1


def _read_items(stream: TextIO) -> Iterator[tuple[int, dict[str, Any] | None, str | None]]:
    for lineno, data, error in json_lines(stream):
        if error is not None:
            yield lineno, None, f"line {lineno}: not JSON: {error.msg}"
            continue
        if not isinstance(data, dict):
            yield lineno, None, f"line {lineno}: expected a JSON object"
            continue
        data.setdefault("id", str(lineno))
        yield lineno, data, None


def _rewards(args: argparse.Namespace) -> int:
    from pydantic import ValidationError
    from tqdm import tqdm

    from referee.client.models import RewardItem, RewardResult

    items: list[RewardItem] = []
    lines: list[int] = []
    bad: list[RewardResult] = []
    with open(args.file, encoding="utf-8") as stream:
        for lineno, data, error in _read_items(stream):
            if data is not None:
                try:
                    items.append(RewardItem.model_validate(data))
                    lines.append(lineno)
                    continue
                except ValidationError as exc:
                    first = exc.errors()[0]
                    error = f"line {lineno}: {'.'.join(map(str, first['loc']))}: {first['msg']}"
            bad.append(_invalid(str((data or {}).get("id", lineno)), str(error)))
    out = open(args.out, "w", encoding="utf-8") if args.out else sys.stdout
    bar = tqdm(total=len(items), unit="item", desc="scoring", file=sys.stderr, disable=args.quiet)
    results: list[RewardResult] = []
    step = max(1, args.chunk_size)
    try:
        if args.server:
            from referee.client import RefereeClient
            from referee.client.sdk_base import group_chunks

            def sent(part: list[Any]) -> list[Any]:  # the SDK sends a part's groups first
                return [item for chunk in group_chunks(part, len(part)) for item in chunk]

            with RefereeClient(args.server, api_key=args.api_key, chunk_size=step) as client:
                score = lambda p: client.rewards(p).rewards  # noqa: E731
                results, refused = _in_parts(items, lines, step, score, bar, sent)
        else:
            results, refused = _score_locally(items, lines, args, bar)
        bad.extend(refused)
    finally:
        bar.close()
    for res in results + bad:
        out.write(res.model_dump_json() + "\n")
    if out is not sys.stdout:
        out.close()
    scored = [r.score for r in results if r.score is not None and r.valid]
    mean = sum(scored) / len(scored) if scored else 0.0
    print(f"{len(results)} scored, mean {mean:.4f}; {len(bad)} invalid lines", file=sys.stderr)
    for res in bad[:5]:
        print(f"  {res.details['error']}", file=sys.stderr)
    return 0 if not bad else 2


def _invalid(item_id: str, error: str) -> Any:
    from referee.client.models import RewardResult

    return RewardResult(id=item_id, score=0.0, details={"outcome": "invalid", "error": error})


def _parts(items: Sequence[Any], step: int) -> list[list[int]]:
    """The items' indices in parts of about ``step``, each group whole in one part: the SDK's
    and the jobs' cut (``group_chunks``), so rollouts of one prompt may lie anywhere in the file (a
    round of every prompt after another) and still be scored as one group."""
    from referee.client.sdk_base import group_chunks

    where = {id(item): i for i, item in enumerate(items)}
    return [[where[id(item)] for item in chunk] for chunk in group_chunks(list(items), step)]


def _in_parts(
    items: Sequence[Any],
    lines: Sequence[int],
    step: int,
    score: Any,
    bar: Any,
    sent: Any = list,
) -> tuple[list[Any], list[Any]]:
    """``items`` scored about ``step`` at a time by ``score(part) -> results``, each group whole
    in one part (:func:`_parts`): the results in the file's order, and the items refused. When the
    scorer refuses a part for one item (``items.N...``: a database the folder lacks, say), that
    item is reported as an invalid line with the reason and the rest of the part is scored
    without it, its groups whole; every other failure stops the run. ``sent(part)``: the part in
    the order the request holds it (``N`` counts in that order)."""
    import re

    from referee.client.errors import InvalidRequest

    scored: dict[int, Any] = {}
    refused: list[Any] = []
    for indices in _parts(items, step):
        chunk = [items[i] for i in indices]
        bar.update(len(chunk))
        while chunk:
            try:
                scored.update(zip(indices, score(chunk), strict=True))
                break
            except InvalidRequest as exc:
                named = re.match(r"items\.(\d+)\.", str(exc))
                order = sent(chunk)
                if named is None or int(named.group(1)) >= len(order):
                    raise
                n = next(k for k, item in enumerate(chunk) if item is order[int(named.group(1))])
                reason = str(exc)[named.end() :]
                refused.append(_invalid(chunk[n].id, f"line {lines[indices[n]]}: {reason}"))
                del chunk[n], indices[n]
    return [scored[i] for i in sorted(scored)], refused


def _score_locally(
    items: Sequence[Any], lines: Sequence[int], args: argparse.Namespace, bar: Any
) -> tuple[list[Any], list[Any]]:
    """The server's own scorer (``services/scoring/scorer.py``), in-process: the check pool, sandbox
    slots for code items, the judge and PRM policy the settings name, the deadlines
    (``REFEREE_MATH_TIMEOUT_S``, ``REFEREE_PROCEDURAL_TIMEOUT_S``), named graders, the SQLite
    files of ``REFEREE_SQL_DATABASES_DIR``. The scored results, and the items refused."""
    import asyncio

    from referee.services.scoring.code import has_code
    from referee.services.scoring.named import GraderRegistry
    from referee.services.scoring.scorer import Scorer
    from referee.services.settings import Settings

    overrides = {"math_workers": args.workers, "math_timeout_s": args.timeout}
    settings = Settings(**{k: v for k, v in overrides.items() if v is not None})
    graders = GraderRegistry.from_settings(settings)  # REFEREE_GRADERS
    code = any(has_code(item.grader.model_dump()) for item in graders.expand_items(items))
    # sandbox slots only for code items; an offline run leaves a server's curriculum alone
    scorer = Scorer.from_settings(settings, sandbox=code, graders=graders, curriculum=False)
    step = max(1, min(args.chunk_size, 128))
    loop = asyncio.new_event_loop()
    try:
        if scorer.sandbox is not None:
            loop.run_until_complete(asyncio.to_thread(scorer.sandbox.start))
        return _in_parts(
            items, lines, step, lambda p: loop.run_until_complete(scorer.score(p, 1.0)).rewards, bar
        )
    finally:
        loop.run_until_complete(scorer.close())
        loop.run_until_complete(loop.shutdown_default_executor())  # as asyncio.run does
        loop.close()


RUN_EXIT_CODES = {
    "ok": 0,
    "runtime_error": 1,
    "compile_error": 3,
    "time_limit": 4,
    "memory_limit": 5,
    "output_limit": 6,
    "sandbox_error": 7,
}


def _run_locally(
    code: str, language: str, stdin: str, time_limit: float | None, memory_mb: int | None
) -> Any:
    from referee.client.models import ExecutionResult, RunLimits, SandboxRunResponse
    from referee.services.execution.program import Program
    from referee.services.execution.slots import SandboxExecutor
    from referee.services.execution.wire import run_result_dict
    from referee.services.settings import Settings

    executor = SandboxExecutor(Settings(sandbox_slots=1))
    try:
        executor.start()
        runner = executor.require_runner()
        limits = executor.limits(RunLimits(time_s=time_limit, memory_mb=memory_mb))
        start = time.perf_counter()
        compiled, run = runner.run_once(Program(code, language, limits), stdin)
    finally:
        executor.close()
    return SandboxRunResponse(
        **run_result_dict(run),
        language=language,
        compile=ExecutionResult(**run_result_dict(compiled)) if compiled else None,
        limits=executor.applied(limits),
        elapsed_ms=(time.perf_counter() - start) * 1000,
    )


def _run(args: argparse.Namespace) -> int:

    with open(args.file, encoding="utf-8") as fh:
        code = fh.read()
    if args.stdin_file is not None:
        with open(args.stdin_file, encoding="utf-8", errors="replace") as fh:
            stdin = fh.read()
    else:
        stdin = args.stdin or ""
    try:
        if args.server:
            from referee.client import RefereeClient

            with RefereeClient(args.server, api_key=args.api_key, max_retries=2) as client:
                result = client.sandbox_run(
                    code, args.lang, stdin, time_limit_s=args.time_limit, memory_mb=args.memory_mb
                )
        else:
            from referee.client.errors import ServiceUnavailable

            try:
                result = _run_locally(code, args.lang, stdin, args.time_limit, args.memory_mb)
            except ServiceUnavailable as exc:
                raise RefereeError(str(exc)) from exc
    except RefereeError as exc:
        print(f"referee: {exc}", file=sys.stderr)
        return RUN_EXIT_CODES["sandbox_error"]
    except Exception as exc:  # LanguageUnavailable and friends from the library
        from referee.sandbox import SandboxError

        if not isinstance(exc, SandboxError):
            raise
        print(f"referee: {exc}", file=sys.stderr)
        return RUN_EXIT_CODES["sandbox_error"]
    if result.compile is not None and result.compile.status != "ok":
        sys.stderr.write(result.compile.stderr)
    sys.stdout.write(result.stdout)
    sys.stdout.flush()
    sys.stderr.write(result.stderr)
    status = f"referee: {result.status}"
    if result.exit_code is not None:
        status += f", exit code {result.exit_code}"
    if result.message:
        status += f" ({result.message})"
    truncated = ", stdout truncated" if result.stdout_truncated else ""
    print(f"{status}, {result.wall_time_s:.3f} s{truncated}", file=sys.stderr)
    return RUN_EXIT_CODES.get(result.status, RUN_EXIT_CODES["sandbox_error"])


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="referee", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the HTTP API")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--workers", type=int, default=1, help="uvicorn worker processes")
    serve.add_argument(
        "--math-workers",
        type=int,
        default=0,
        help="check worker processes per server process (default: CPU count)",
    )
    serve.add_argument("--log-level", default="info")
    serve.set_defaults(func=_serve)

    verify = sub.add_parser("verify", help="check one answer against a reference")
    verify.add_argument("response", help="the response (or just its final answer)")
    verify.add_argument("reference", help="the reference answer")
    verify.add_argument(
        "--extract",
        default="auto",
        choices=["auto", "boxed", "answer_tag", "final_answer", "gsm8k", "none"],
    )
    verify.add_argument("--timeout", type=float, default=5.0)
    verify.add_argument("--json", action="store_true", help="print the verdict as JSON")
    verify.set_defaults(func=_verify)

    rewards = sub.add_parser("rewards", help="score a JSONL file of reward items")
    rewards.add_argument("file", help="JSONL: one {id, prompt, response, grader, group?} per line")
    rewards.add_argument("--out", help="write results here as JSONL (default: stdout)")
    rewards.add_argument("--server", help="score through this referee server instead of in-process")
    rewards.add_argument("--api-key", default=os.environ.get("REFEREE_API_KEY"))
    rewards.add_argument(
        "--workers", type=int, help="check workers (default: REFEREE_MATH_WORKERS, one per CPU)"
    )
    rewards.add_argument(
        "--timeout", type=float, help="deadline of one check (default: REFEREE_MATH_TIMEOUT_S)"
    )
    rewards.add_argument("--chunk-size", type=int, default=512)
    rewards.add_argument("--quiet", action="store_true", help="no progress bar")
    rewards.set_defaults(func=_rewards)

    run = sub.add_parser("run", help="run one program in the sandbox")
    run.add_argument("file", help="the program's source file")
    run.add_argument("--lang", "--language", required=True, help="python, cpp, java, ...")
    given = run.add_mutually_exclusive_group()
    given.add_argument("--stdin", help="text fed to the program's stdin")
    given.add_argument("--stdin-file", help="a file fed to the program's stdin")
    run.add_argument("--time-limit", type=float, help="wall-clock limit in seconds")
    run.add_argument("--memory-mb", type=int, help="memory limit in MiB")
    run.add_argument("--server", help="run on this referee server instead of in-process")
    run.add_argument("--api-key", default=os.environ.get("REFEREE_API_KEY"))
    run.set_defaults(func=_run)

    from referee.services.cli.jobs import register as register_jobs

    register_jobs(sub)
    from referee.services.cli.dataset import register as register_dataset

    register_dataset(sub)
    from referee.services.cli.judge import register as register_judge

    register_judge(sub)
    from referee.trainer_adapter.train_cli import register as register_train

    register_train(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except FileNotFoundError as exc:
        print(f"referee: {exc.strerror}: {exc.filename}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except RefereeError as exc:  # e.g. code items with no isolation available
        print(f"referee: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
