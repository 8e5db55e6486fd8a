"""Math verification benchmark: referee side by side with Math-Verify, in one run.

    .venv/bin/python -m bench.math            # full run (a few minutes on 2 cores)
    .venv/bin/python -m bench.math --quick    # small run (under ~30 s)
    .venv/bin/python bench/math.py --out DIR  # the same, run as a file

(a) Accuracy per category on the labeled set (tests/data/math_cases.jsonl), false positives
    (expected wrong, scored 1) and false negatives (expected right, scored 0) apart, and on the
    regression table tests/data/math_holdout.jsonl.
(a3) Accuracy on math-verify 0.9.0's own test suite (its sdist's parametrized cases, written by
    no one here): referee's grader, math-verify as its tests call it, and math-verify with one
    call for all cases (bench/math_suite.py).
(b) Checks per second in one process on a seeded realistic mix (bench/math_mix.py: >= 10,000
    GSM8K/MATH-style rollouts, ~10% symbolic, ~0.5% hostile) and on a purely symbolic mix, with
    p50/p99 latency per check; referee directly in-process and through ``CheckPool(workers=1)``,
    Math-Verify's parse+verify in the main thread of a process (where its signal.alarm works).
(c) ``bench_http``: ``POST /v1/rewards`` with 1,024 items against a real uvicorn server, against
    the in-process library (CheckPool, same worker count) on the same items.

How both sides are protected (the same way): every check runs in the main thread of a child
process under the same address-space cap as CheckPool's workers (2 GiB) and the same wall-clock
deadline per check; a check that overruns is killed (its process replaced) and counts as score 0
and as a timeout. Math-Verify keeps its own default signal.alarm timeouts (parse: 5 s per
expression, verify: 5 s per comparison) inside that.

Writes the tables to OUT/math.md and a per-category accuracy plot to OUT/math_accuracy.png
(OUT defaults to bench/out/).
"""

from __future__ import annotations

import os
import sys

if __name__ == "__main__" and not __package__:
    # Run as a file, this file's folder is sys.path[0] and the file's name shadows the standard
    # library's ``math`` for everything imported after it. Re-run as the package module instead.
    _ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    _PATH = os.pathsep.join(p for p in (_ROOT, os.environ.get("PYTHONPATH", "")) if p)
    _ARGS = [sys.executable, "-P", "-m", "bench.math", *sys.argv[1:]]
    os.execve(sys.executable, _ARGS, {**os.environ, "PYTHONPATH": _PATH})

import argparse
import contextlib
import json
import logging
import multiprocessing as mp
import resource
import statistics
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.math_mix import MixItem, realistic_mix, symbolic_mix
from bench.math_suite import emit_suite, run_suite

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "tests" / "data" / "math_cases.jsonl"
HOLDOUT = ROOT / "tests" / "data" / "math_holdout.jsonl"
DEADLINE_S = 2.0
"""Per-check deadline for both verifiers in every section (CheckPool ``timeout_s=2.0``)."""
MEMORY_MB = 2048
"""Address-space cap of every process that runs checks (CheckPool's default)."""
HTTP_ITEMS = 1024

# Math-Verify logs a warning per timeout; the benchmark counts timeouts itself.
logging.getLogger("math_verify").setLevel(logging.ERROR)

Pair = tuple[str, str]


# -- the two checks (top-level: they cross process boundaries by name) ------------------------


def referee_score(response: str, reference: str) -> float:
    from referee.verifiers.math import verify

    return verify(response, reference).score


def math_verify_score(response: str, reference: str) -> float:
    """Math-Verify as its README uses it, with default timeouts (signal.alarm: main thread only).

    The gold is wrapped in ``$...$`` (bare LaTeX golds often fail to parse unwrapped); when the
    wrapped gold gives nothing, the bare one is tried."""
    from math_verify import parse, verify

    gold = parse(f"${reference}$") or parse(reference)
    pred = parse(response)
    return 1.0 if verify(gold, pred) else 0.0


CHECKS: dict[str, Callable[[str, str], float]] = {
    "referee": referee_score,
    "math-verify": math_verify_score,
}


def _forkserver() -> Any:
    """The forkserver context with both libraries preloaded, so a replaced process is warm."""
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["referee.verifiers.math", "math_verify"])
    return ctx


def _make_pool(workers: int, timeout_s: float) -> Any:
    from referee.verifiers import CheckPool

    pool = CheckPool(workers=workers, timeout_s=timeout_s, memory_mb=MEMORY_MB)
    _forkserver()  # CheckPool sets referee's preload; add math_verify (one forkserver for all)
    return pool


# -- a guarded in-process loop ---------------------------------------------------------------


@dataclass
class LoopResult:
    scores: list[float] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    timeouts: int = 0
    errors: int = 0

    @property
    def total_s(self) -> float:
        return sum(self.latencies)

    @property
    def rate(self) -> float:
        return len(self.latencies) / self.total_s if self.total_s else 0.0


def _loop_child(
    conn: Any, clock: Any, name: str, pairs: list[Pair], offset: int, warmup: list[Pair]
) -> None:
    limit = MEMORY_MB * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    fn = CHECKS[name]
    for resp, ref in warmup:
        with contextlib.suppress(Exception):
            fn(resp, ref)
    for i, (resp, ref) in enumerate(pairs, offset):
        clock[0] = i
        started = clock[1] = time.perf_counter()
        try:
            score, failed = fn(resp, ref), False
        except Exception:  # MemoryError under the cap included: score 0, counted as an error
            score, failed = 0.0, True
        elapsed = time.perf_counter() - started
        clock[1] = 0.0
        conn.send((i, score, elapsed, failed))
    conn.send(None)


def run_loop(name: str, pairs: Sequence[Pair], warmup: Sequence[Pair] = ()) -> LoopResult:
    """Run ``CHECKS[name]`` on every pair in one loop in the main thread of a child process
    and time each call there. The parent only watches: a check that runs past DEADLINE_S gets
    the child killed (score 0, a timeout, latency = time to the kill) and a fresh child
    continues with the next pair."""
    ctx = _forkserver()
    n = len(pairs)
    got: list[tuple[float, float] | None] = [None] * n
    out = LoopResult()
    pos = 0
    while pos < n:
        clock = ctx.RawArray("d", 2)
        parent, child = ctx.Pipe(duplex=False)
        proc = ctx.Process(
            target=_loop_child,
            args=(child, clock, name, list(pairs[pos:]), pos, list(warmup)),
            daemon=True,
        )
        proc.start()
        child.close()
        done = False
        while not done:
            if parent.poll(0.02):
                try:
                    msg = parent.recv()
                except EOFError:
                    msg = "dead"
                if msg is None:
                    pos, done = n, True
                    break
                if msg != "dead":
                    i, score, elapsed, failed = msg
                    got[i] = (score, elapsed)
                    out.errors += failed
                    pos = i + 1
                    continue
            started = clock[1]
            overdue = started > 0 and time.perf_counter() - started > DEADLINE_S
            if overdue or not proc.is_alive():
                proc.kill()
                proc.join()
                while parent.poll(0):  # results sent before the kill
                    try:
                        msg = parent.recv()
                    except EOFError:
                        break
                    if msg is not None:
                        i, score, elapsed, failed = msg
                        got[i] = (score, elapsed)
                        out.errors += failed
                        pos = i + 1
                if pos < n:
                    got[pos] = (0.0, time.perf_counter() - started if overdue else 0.0)
                    if overdue:
                        out.timeouts += 1
                    else:
                        out.errors += 1
                    pos += 1
                done = True
        proc.join(timeout=5)
        parent.close()
    for g in got:
        assert g is not None
        out.scores.append(g[0])
        out.latencies.append(g[1])
    return out


# -- the pool path ----------------------------------------------------------------------------


def _pool_value_score(value: Any) -> tuple[float, str]:
    from referee.verifiers import TimedOut, WorkerFailed

    if isinstance(value, TimedOut):
        return 0.0, "timeout"
    if isinstance(value, WorkerFailed):
        return 0.0, "error"
    if isinstance(value, float):
        return value, "ok"
    return float(value.score), "ok"


def run_pool_one_by_one(pairs: Sequence[Pair], warmup: Sequence[Pair]) -> LoopResult:
    """referee through CheckPool(workers=1): submit one check, wait for it, next (latency per
    check as a caller sees it: pickling, the pipe, the worker, the result back)."""
    from referee.verifiers.math import verify

    out = LoopResult()
    with _make_pool(1, DEADLINE_S) as pool:
        for f in pool.map(verify, warmup):
            f.result()
        for resp, ref in pairs:
            t0 = time.perf_counter()
            value = pool.submit(verify, resp, ref).result()
            out.latencies.append(time.perf_counter() - t0)
            score, status = _pool_value_score(value)
            out.scores.append(score)
            out.timeouts += status == "timeout"
            out.errors += status == "error"
    return out


def run_pool_batch(
    pairs: Sequence[Pair],
    warmup: Sequence[Pair],
    workers: int = 1,
    timeout_s: float = DEADLINE_S,
    repetitions: int = 1,
) -> tuple[list[float], LoopResult]:
    """The whole list submitted at once to one pool, ``repetitions`` times (the pool and its
    reference cache live on between repetitions, as a server's do); returns (wall seconds of
    each repetition, results of the last one, without latencies)."""
    from referee.verifiers.math import verify

    out = LoopResult()
    walls = []
    with _make_pool(workers, timeout_s) as pool:
        for f in pool.map(verify, list(warmup) * workers):
            f.result()
        for _ in range(repetitions):
            t0 = time.perf_counter()
            futures = pool.map(verify, pairs)
            values = [f.result() for f in futures]
            walls.append(time.perf_counter() - t0)
    for value in values:
        score, status = _pool_value_score(value)
        out.scores.append(score)
        out.timeouts += status == "timeout"
        out.errors += status == "error"
    return walls, out


# -- (a) accuracy -----------------------------------------------------------------------------


@dataclass
class Tally:
    n: int = 0
    right: int = 0
    fp: int = 0
    fn: int = 0
    timeouts: int = 0
    errors: int = 0

    @property
    def acc(self) -> float:
        return self.right / self.n if self.n else 0.0


def load_cases(quick: bool, path: Path = CASES) -> list[dict[str, Any]]:
    cases = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    if quick:  # every fifth case of every category
        seen: Counter[str] = Counter()
        keep = []
        for c in cases:
            if seen[c["category"]] % 5 == 0:
                keep.append(c)
            seen[c["category"]] += 1
        cases = keep
    return cases


def accuracy(cases: list[dict[str, Any]]) -> dict[str, Any]:
    """Both verifiers on every case, each in its own CheckPool(workers=1, timeout_s=2.0)
    worker process (main thread there: Math-Verify's alarms work), the two pools side by side."""
    from referee.verifiers.math import verify

    pairs = [(c["response"], c["reference"]) for c in cases]
    t0 = time.perf_counter()
    with _make_pool(1, DEADLINE_S) as rpool, _make_pool(1, DEADLINE_S) as mpool:
        rfut = rpool.map(verify, pairs)
        mfut = mpool.map(math_verify_score, pairs)
        rvals = [f.result() for f in rfut]
        mvals = [f.result() for f in mfut]
    wall = time.perf_counter() - t0
    tallies: dict[str, dict[str, Tally]] = {"referee": defaultdict(Tally), "math-verify": {}}
    tallies["math-verify"] = defaultdict(Tally)
    misses: dict[str, list[str]] = {"referee": [], "math-verify": []}
    missed_cases: dict[str, list[dict[str, Any]]] = {"referee": [], "math-verify": []}
    for case, rv, mv in zip(cases, rvals, mvals, strict=True):
        for name, value in (("referee", rv), ("math-verify", mv)):
            score, status = _pool_value_score(value)
            for key in (case["category"], "TOTAL"):
                t = tallies[name][key]
                t.n += 1
                ok = (score == 1.0) == bool(case["expected"])
                t.right += ok
                t.fp += score == 1.0 and not case["expected"]
                t.fn += score != 1.0 and bool(case["expected"])
                t.timeouts += status == "timeout"
                t.errors += status == "error"
            if (score == 1.0) != bool(case["expected"]):
                missed_cases[name].append(case)
                detail = status if status != "ok" else getattr(value, "outcome", "")
                why = f", {detail}" if detail else ""
                misses[name].append(
                    f"{case['category']}: {case['note']} "
                    f"(expected {case['expected']}, got {score:g}{why})"
                )
    return {"tallies": tallies, "misses": misses, "missed_cases": missed_cases, "wall_s": wall}


# -- (c) HTTP ---------------------------------------------------------------------------------


def bench_http(
    pairs: Sequence[Pair], workers: int = 2, repetitions: int = 5, warmup: Sequence[Pair] = ()
) -> dict[str, Any] | None:
    """POST /v1/rewards with ``len(pairs)`` math items to a real uvicorn server started here,
    against the in-process library (CheckPool with the server's worker count) on the same
    items. Median wall time of ``repetitions`` each. None when the server is not available."""
    try:
        import httpx

        import referee.services.app  # noqa: F401
    except Exception as exc:  # the server is written by another part of the project
        print(f"HTTP section skipped: server not available ({type(exc).__name__}: {exc})")
        return None
    from referee.services.launcher import ServerFailed, start_referee
    from referee.verifiers.math import MathConfig

    try:  # REFEREE_MATH_WORKERS: the default is one per CPU
        server = start_referee({"REFEREE_MATH_WORKERS": str(workers)}, cwd=ROOT)
    except ServerFailed as exc:
        print(f"HTTP section skipped: {exc}")
        return None
    base = server.url
    body = {
        "items": [
            {
                "id": str(i),
                "prompt": "",
                "response": resp,
                "grader": {"type": "math", "reference": ref},
            }
            for i, (resp, ref) in enumerate(pairs)
        ]
    }
    warm_body = {
        "items": [
            {"id": str(i), "prompt": "", "response": r, "grader": {"type": "math", "reference": g}}
            for i, (r, g) in enumerate(list(warmup) * workers)
        ]
    }
    try:
        with httpx.Client(base_url=base, timeout=600.0) as client:
            if warm_body["items"]:
                client.post("/v1/rewards", json=warm_body)
            http_times, http_scores = [], []
            for _ in range(repetitions):
                t0 = time.perf_counter()
                r = client.post("/v1/rewards", json=body)
                http_times.append(time.perf_counter() - t0)
                if r.status_code != 200:
                    print(f"HTTP section failed: {r.status_code} {r.text[:500]}")
                    return None
                http_scores = [float(x["score"]) for x in r.json()["rewards"]]
    finally:
        server.stop(timeout_s=10)
    # The same: one warm-up batch, then the repetitions on one pool (the server's pool, too,
    # keeps its reference cache between requests), the same per-check deadline as the server's
    # default (REFEREE_MATH_TIMEOUT_S unset: MathConfig().timeout_s).
    lib_times, res = run_pool_batch(
        pairs, warmup, workers=workers, timeout_s=MathConfig().timeout_s, repetitions=repetitions
    )
    lib_scores = res.scores
    http_s, lib_s = statistics.median(http_times), statistics.median(lib_times)
    return {
        "items": len(pairs),
        "workers": workers,
        "repetitions": repetitions,
        "http_s": http_s,
        "lib_s": lib_s,
        "ratio": http_s / lib_s if lib_s else float("nan"),
        "score_mismatches": sum(a != b for a, b in zip(http_scores, lib_scores, strict=True)),
    }


# -- report -----------------------------------------------------------------------------------


def _pct(values: Sequence[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(h) for h in header], *[[str(c) for c in r] for r in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    fmt = [
        "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |" for r in cells
    ]
    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([fmt[0], rule, *fmt[1:]])


def _rate(res: LoopResult, idx: Sequence[int]) -> float:
    total = sum(res.latencies[i] for i in idx)
    return len(idx) / total if total else 0.0


def _agreement(items: Sequence[MixItem], scores: Sequence[float]) -> float:
    return sum((s == 1.0) == it.correct for it, s in zip(items, scores, strict=True)) / len(items)


def _speed_row(label: str, res: LoopResult, items: Sequence[MixItem], wall: float | None = None):
    rate = len(items) / wall if wall else res.rate
    lat = res.latencies
    p50 = f"{_pct(lat, 0.5) * 1e3:.2f}" if lat else "–"
    p99 = f"{_pct(lat, 0.99) * 1e3:.1f}" if lat else "–"
    mx = f"{max(lat) * 1e3:.0f}" if lat else "–"
    return [
        label,
        f"{rate:,.0f}",
        p50,
        p99,
        mx,
        res.timeouts,
        res.errors,
        f"{100 * _agreement(items, res.scores):.1f}%",
    ]


def emit_disagreements(
    emit: Callable[[str], None],
    mix: Sequence[MixItem],
    ref_scores: Sequence[float],
    mv_scores: Sequence[float],
) -> None:
    """Where each verifier disagrees with the generator's intended label on the mix; referee's
    cases are re-checked (in a deadline pool) for their outcome and one example each."""
    from referee.verifiers.math import verify

    bad = [
        i for i, (it, s) in enumerate(zip(mix, ref_scores, strict=True)) if (s == 1.0) != it.correct
    ]
    emit(f"referee disagrees with the generator's label on {len(bad)} of {len(mix):,} mix items:")
    if bad:
        with _make_pool(1, DEADLINE_S) as pool:
            values = [
                f.result()
                for f in pool.map(verify, [(mix[i].response, mix[i].reference) for i in bad])
            ]
        groups: dict[tuple[str, ...], list[tuple[int, Any]]] = defaultdict(list)
        for i, v in zip(bad, values, strict=True):
            outcome = str(getattr(v, "outcome", _pool_value_score(v)[1]))
            label = "right" if mix[i].correct else "wrong"
            groups[(mix[i].kind, mix[i].form, label, outcome)].append((i, v))
        for (kind, form, label, outcome), members in sorted(
            groups.items(), key=lambda g: -len(g[1])
        ):
            i, v = members[0]
            tail = mix[i].response[-70:].replace("\n", " ")
            emit(
                f"- {len(members)} × {kind}/{form}, labelled {label}, referee: {outcome} "
                f"(method {getattr(v, 'method', None)}); e.g. reference {mix[i].reference!r}, "
                f"extracted {getattr(v, 'extracted', None)!r}, response ends {tail!r}"
            )
    mv_bad = Counter(
        f"{it.kind}/{it.form}"
        for it, s in zip(mix, mv_scores, strict=True)
        if (s == 1.0) != it.correct
    )
    emit(
        f"math-verify disagrees on {sum(mv_bad.values())}: "
        + ", ".join(f"{k} {v}" for k, v in mv_bad.most_common())
    )
    emit()


def _suite_cell(suite: dict[str, Any], column: str, group: str) -> str:
    t = suite["tallies"][column][group]
    return f"{100 * t['right'] / t['n']:.1f}% ({t['fp']} FP, {t['fn']} FN, {t['to']} TO)"


def plot(tallies: dict[str, dict[str, Tally]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cats = [*sorted(k for k in tallies["referee"] if k != "TOTAL"), "TOTAL"]
    xs = range(len(cats))
    fig, ax = plt.subplots(figsize=(14, 5))
    width = 0.4
    for off, name, color in (
        (-width / 2, "referee", "#1f77b4"),
        (width / 2, "math-verify", "#ff7f0e"),
    ):
        vals = [100 * tallies[name][c].acc for c in cats]
        ax.bar([x + off for x in xs], vals, width, label=name, color=color)
    ax.set_xticks(list(xs))
    ax.set_xticklabels(cats, rotation=45, ha="right")
    ax.set_ylabel("accuracy on the labeled set (%)")
    ax.set_ylim(0, 105)
    ax.set_title("Math verification accuracy per category: referee vs Math-Verify 0.9.0")
    ax.legend(loc="lower right")
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.math", description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="a small run (under ~30 s)")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out", help="output folder")
    ap.add_argument("--seed", type=int, default=0, help="seed of the realistic mix")
    ap.add_argument("--no-http", action="store_true", help="skip the HTTP section")
    args = ap.parse_args(argv)
    out_dir: Path = args.out.resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    os.chdir(ROOT)  # forkserver and worker processes import bench.math from here

    import math_verify

    from referee.verifiers.math import MathConfig

    mv_version = getattr(math_verify, "__version__", None)
    if mv_version is None:
        from importlib.metadata import version

        mv_version = version("math-verify")
    started = time.perf_counter()
    n_mix, n_sym = (500, 60) if args.quick else (10_000, 500)
    mix = realistic_mix(n_mix, seed=args.seed)
    sym = symbolic_mix(n_sym, seed=args.seed + 1)
    warm = [(i.response, i.reference) for i in realistic_mix(24, seed=10_000 + args.seed)]
    mix_pairs = [(i.response, i.reference) for i in mix]
    sym_pairs = [(i.response, i.reference) for i in sym]
    kinds = Counter(i.kind for i in mix)
    md: list[str] = []

    def emit(text: str = "") -> None:
        print(text, flush=True)
        md.append(text)

    emit(f"# Math verification benchmark{' (--quick)' if args.quick else ''}")
    emit()
    emit(
        f"referee vs Math-Verify {mv_version}; {os.cpu_count()} CPUs; Python "
        f"{sys.version.split()[0]}. Per-check deadline {DEADLINE_S:g} s for both (a check that "
        f"overruns is killed: score 0, counted as a timeout); {MEMORY_MB} MiB address-space cap "
        "for both. referee's own default deadline is MathConfig.timeout_s = "
        f"{MathConfig().timeout_s:g} s (the pools here use timeout_s={DEADLINE_S:g}). Math-Verify: "
        "`verify(parse('$'+reference+'$') or parse(reference), parse(response))` with its "
        "defaults (parsing_timeout=5 s per parse, timeout_seconds=5 s per comparison, "
        "signal.alarm, effective because it always runs in a process's main thread here). "
        "Math-Verify reads the whole response with its default extraction, which does not read "
        "a bare number inside `<answer>...</answer>` tags (about 5% of the mix's responses)."
    )
    emit()

    # (a) accuracy, on the development table and on the (once held-out) regression table
    tables = [
        (
            "(a) Accuracy on the labeled set",
            CASES,
            "math_accuracy.png",
            "The table the verifier was developed against (tests/data/math_cases.jsonl).",
        ),
        (
            "(a2) Accuracy on the regression table (once held out)",
            HOLDOUT,
            "math_accuracy_holdout.png",
            "tests/data/math_holdout.jsonl was written apart from the code and scored 295/300 on "
            "its first run; the five misses were then fixed, so it is now a regression table, "
            "not a blind one. Accuracy on data no one here wrote is section (a3), math-verify's "
            "own test suite.",
        ),
    ]
    for title, path, png, blurb in tables:
        cases = load_cases(args.quick, path)
        acc = accuracy(cases)
        tal = acc["tallies"]
        emit(f"## {title} ({len(cases)} cases)")
        emit()
        emit(blurb)
        emit()
        emit(
            "Both run in CheckPool(workers=1, timeout_s=2.0) worker processes (main thread), "
            "side by side. FP: expected wrong, scored 1. FN: expected right, scored 0. "
            "TO: timeouts."
        )
        emit()
        rows = []
        cats = [*sorted(k for k in tal["referee"] if k != "TOTAL"), "TOTAL"]
        for c in cats:
            r, m = tal["referee"][c], tal["math-verify"][c]
            flag = "" if r.right >= m.right else "  <-- referee below"
            rows.append(
                [
                    f"**{c}**" if c == "TOTAL" else c,
                    r.n,
                    f"{100 * r.acc:.1f}%",
                    r.fp,
                    r.fn,
                    r.timeouts,
                    f"{100 * m.acc:.1f}%",
                    m.fp,
                    m.fn,
                    m.timeouts + m.errors,
                    flag,
                ]
            )
        emit(
            _table(
                [
                    "category",
                    "n",
                    "referee",
                    "FP",
                    "FN",
                    "TO",
                    "math-verify",
                    "FP",
                    "FN",
                    "TO/err",
                    "",
                ],
                rows,
            )
        )
        emit()
        for name in ("referee", "math-verify"):
            misses = acc["misses"][name]
            tagged = sum("<answer>" in c["response"] for c in acc["missed_cases"][name])
            emit(
                f"{name} misses ({len(misses)}"
                + (f"; {tagged} of them answer in <answer> tags" if tagged else "")
                + "):"
                + ("" if misses else " none")
            )
            if name == "referee" or len(misses) <= 40:
                for line in misses:
                    emit(f"- {line}")
            else:
                by_cat = Counter(m.split(":")[0] for m in misses)
                emit("- by category: " + ", ".join(f"{k} {v}" for k, v in by_cat.most_common()))
            emit()
        plot(tal, out_dir / png)
        if path == CASES:
            dev_tal = tal
        else:
            hold_tal = tal
    tal = dev_tal

    # (a3) math-verify's own test suite
    emit("## (a3) Accuracy on math-verify 0.9.0's own test suite (from its sdist)")
    emit()
    emit(
        "Every gold/prediction case of math-verify's tests/*.py (275; 269 at compare_strings' "
        "defaults, 6 exercising its strict and set-relation switches). referee: the `math` "
        "grader's defaults (`abs_tol = 10**-precision` where a case runs at another precision); "
        "referee's disagreements are documented in tests/data/math_verify_disagreements.jsonl. "
        "Each column in CheckPool(workers=1, timeout_s=2.0) worker processes."
    )
    emit()
    suite = run_suite(lambda: _make_pool(1, DEADLINE_S), _pool_value_score, math_verify_score)
    emit_suite(emit, _table, suite)

    # (b) speed
    emit(
        f"## (b) Checks per second, one process: realistic mix of {len(mix):,} "
        f"({kinds['numeric']} numeric, {kinds['symbolic']} symbolic, {kinds['hostile']} hostile; "
        f"seed {args.seed}, groups of 8 rollouts per reference)"
    )
    emit()
    res: dict[str, LoopResult] = {}
    res["ref_direct"] = run_loop("referee", mix_pairs, warm)
    res["ref_pool1"] = run_pool_one_by_one(mix_pairs, warm)
    walls, res["ref_poolN"] = run_pool_batch(mix_pairs, warm)
    pool_wall = walls[0]
    res["mv"] = run_loop("math-verify", mix_pairs, warm)
    header = ["path", "checks/s", "p50 ms", "p99 ms", "max ms", "TO", "err", "agrees w/ label"]
    rows = [
        _speed_row("referee verify() in-process", res["ref_direct"], mix),
        _speed_row("referee CheckPool(1), one at a time", res["ref_pool1"], mix),
        _speed_row("referee CheckPool(1), whole list", res["ref_poolN"], mix, wall=pool_wall),
        _speed_row("math-verify in-process (main thread)", res["mv"], mix),
    ]
    emit(_table(header, rows))
    emit()
    mv_rate = res["mv"].rate
    emit(
        f"referee/math-verify: in-process {res['ref_direct'].rate / mv_rate:.1f}x, "
        f"pool one at a time {res['ref_pool1'].rate / mv_rate:.1f}x, "
        f"pool whole list {len(mix) / pool_wall / mv_rate:.1f}x."
    )
    # by kind, in-process
    per_kind_rows = []
    for kind in ("numeric", "symbolic", "hostile", "all but hostile"):
        idx = [
            i
            for i, it in enumerate(mix)
            if it.kind == kind or (kind == "all but hostile" and it.kind != "hostile")
        ]
        row = [kind, len(idx)]
        for key in ("ref_direct", "mv"):
            lat = [res[key].latencies[i] for i in idx]
            row += [f"{len(lat) / sum(lat):,.0f}", f"{_pct(lat, 0.5) * 1e3:.2f}"]
        per_kind_rows.append(row)
    emit()
    emit(
        _table(
            ["kind", "n", "referee checks/s", "p50 ms", "math-verify checks/s", "p50 ms"],
            per_kind_rows,
        )
    )
    emit()
    emit(
        "checks/s in-process = checks / sum of per-check times measured inside the loop "
        "(a timed-out check counts its time to the kill); whole list = checks / wall time "
        "from submitting the list to the last result. The pool latency is per check, submit "
        "to result, from the main thread. 'agrees w/ label' compares with the generator's "
        "intended label (hostile rollouts are labelled wrong)."
    )
    emit()

    emit_disagreements(emit, mix, res["ref_direct"].scores, res["mv"].scores)

    emit(f"### Purely symbolic mix ({len(sym)} items, seed {args.seed + 1})")
    emit()
    res["sym_ref"] = run_loop("referee", sym_pairs, warm)
    res["sym_mv"] = run_loop("math-verify", sym_pairs, warm)
    emit(
        _table(
            header,
            [
                _speed_row("referee verify() in-process", res["sym_ref"], sym),
                _speed_row("math-verify in-process (main thread)", res["sym_mv"], sym),
            ],
        )
    )
    emit()
    emit(f"referee/math-verify on symbolic: {res['sym_ref'].rate / res['sym_mv'].rate:.2f}x.")
    emit()

    # (c) HTTP
    http_pairs = mix_pairs[:HTTP_ITEMS]
    emit(f"## (c) POST /v1/rewards, {len(http_pairs):,} items, vs the in-process library")
    emit()
    http = None
    if not args.no_http:
        http = bench_http(http_pairs, workers=2, repetitions=2 if args.quick else 5, warmup=warm)
    if http is None:
        emit(
            "HTTP section skipped: "
            + ("--no-http" if args.no_http else "server not available (see the line above)")
        )
    else:
        emit(
            _table(
                ["path", "items", "workers", "median s", "items/s"],
                [
                    [
                        "HTTP /v1/rewards",
                        http["items"],
                        http["workers"],
                        f"{http['http_s']:.3f}",
                        f"{http['items'] / http['http_s']:,.0f}",
                    ],
                    [
                        "in-process CheckPool",
                        http["items"],
                        http["workers"],
                        f"{http['lib_s']:.3f}",
                        f"{http['items'] / http['lib_s']:,.0f}",
                    ],
                ],
            )
        )
        emit()
        emit(
            f"HTTP / in-process time: {http['ratio']:.2f}x (median of {http['repetitions']}; "
            f"target <= 1.5x); score mismatches: {http['score_mismatches']}."
        )
    emit()

    # summary
    r_tot, m_tot = tal["referee"]["TOTAL"], tal["math-verify"]["TOTAL"]
    below = [
        c for c in cats if c != "TOTAL" and tal["referee"][c].right < tal["math-verify"][c].right
    ]
    no_hostile = [i for i, it in enumerate(mix) if it.kind != "hostile"]
    emit("## Summary against the targets")
    emit()
    summary = [
        [
            "accuracy (labeled set)",
            f"{100 * r_tot.acc:.1f}%",
            f"{100 * m_tot.acc:.1f}%",
            "at least math-verify's in every category: "
            + ("yes" if not below else f"NO ({below})"),
        ],
        [
            "false positives",
            r_tot.fp,
            m_tot.fp,
            "fewer: " + ("yes" if r_tot.fp < m_tot.fp else "NO"),
        ],
        ["false negatives", r_tot.fn, m_tot.fn, ""],
        [
            "accuracy (regression table, once held out)",
            f"{100 * hold_tal['referee']['TOTAL'].acc:.1f}%",
            f"{100 * hold_tal['math-verify']['TOTAL'].acc:.1f}%",
            "100% (a regression table now)",
        ],
        *[
            [
                f"math-verify's own suite, {group.lower()}",
                _suite_cell(suite, "referee", group),
                _suite_cell(suite, "math-verify (its tests' calls)", group)
                + " (its tests' calls); "
                + _suite_cell(suite, "math-verify (one call for all)", group)
                + " (one call)",
                "target >= 98% with <= 2 FP" if "269" in group else "",
            ]
            for group in ("DEFAULT SETTINGS (269)", "ALL (275)")
        ],
        [
            "realistic mix checks/s (in-process)",
            f"{res['ref_direct'].rate:,.0f}",
            f"{mv_rate:,.0f}",
            f"{res['ref_direct'].rate / mv_rate:.1f}x (target >= 10x)",
        ],
        [
            "realistic mix checks/s (CheckPool(1))",
            f"{len(mix) / pool_wall:,.0f}",
            f"{mv_rate:,.0f}",
            f"{len(mix) / pool_wall / mv_rate:.1f}x, whole list",
        ],
        [
            "mix without hostile checks/s (in-process)",
            f"{_rate(res['ref_direct'], no_hostile):,.0f}",
            f"{_rate(res['mv'], no_hostile):,.0f}",
            f"{_rate(res['ref_direct'], no_hostile) / _rate(res['mv'], no_hostile):.1f}x "
            "(math-verify's timeouts on hostile items left out)",
        ],
        [
            "symbolic checks/s (in-process)",
            f"{res['sym_ref'].rate:,.0f}",
            f"{res['sym_mv'].rate:,.0f}",
            f"{res['sym_ref'].rate / res['sym_mv'].rate:.2f}x (target >= 1x)",
        ],
        [
            "p99 latency, CheckPool(1), one at a time",
            f"{_pct(res['ref_pool1'].latencies, 0.99) * 1e3:.1f} ms",
            f"{_pct(res['mv'].latencies, 0.99) * 1e3:.1f} ms (in-process)",
            f"target <= deadline + 50 ms = {DEADLINE_S * 1e3 + 50:.0f} ms; max referee "
            f"{max(res['ref_pool1'].latencies) * 1e3:.0f} ms",
        ],
        ["timeouts (mix)", res["ref_pool1"].timeouts, res["mv"].timeouts, ""],
        [
            f"HTTP {len(http_pairs):,} items / in-process",
            "skipped" if http is None else f"{http['ratio']:.2f}x",
            "",
            "target <= 1.5x",
        ],
    ]
    emit(_table(["", "referee", "math-verify", "target"], summary))
    emit()
    emit(f"Total run time {time.perf_counter() - started:.0f} s.")
    (out_dir / "math.md").write_text("\n".join(md) + "\n")
    print(f"\nwrote {out_dir / 'math.md'} and {out_dir / 'math_accuracy.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
