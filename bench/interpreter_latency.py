"""Latency of one call to the persistent interpreter versus a fresh sandbox per run (printed).

    .venv/bin/python -m bench.interpreter_latency          # 200 calls each
    .venv/bin/python -m bench.interpreter_latency -n 50

Runs ``x + 1`` (after ``x = 1``) ``n`` times in one ``PersistentInterpreter`` and the program
``x = 1; print(x + 1)`` ``n`` times with ``BwrapBackend.run`` (a new bwrap sandbox, cgroup and
interpreter each time), one after the other on one thread, and prints p50 and p95 of each and
the ratio of the p50s. A quick check, not a figure for publication: nothing else should run.
"""

from __future__ import annotations

import argparse
import statistics
import time

from referee.sandbox import BwrapBackend, ExecRequest, Limits, get_language
from referee.sandbox.interpreter import InterpreterLimits, PersistentInterpreter


def _quantiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[int(0.95 * (len(ordered) - 1))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=200, help="calls per mode")
    args = parser.parse_args(argv)
    backend = BwrapBackend.create()
    persistent: list[float] = []
    with PersistentInterpreter(backend, InterpreterLimits()) as interp:
        assert interp.run("x = 1").ok
        for _ in range(args.n):
            started = time.perf_counter()
            result = interp.run("x + 1")
            persistent.append(time.perf_counter() - started)
            assert result.stdout == "2\n", result
    python = get_language("python")
    limits = Limits(wall_time_s=10.0)
    request = ExecRequest(
        argv=(python.run_argv("x", limits)[0], "-I", "-S", "-B", "-c", "x = 1; print(x + 1)"),
        limits=limits,
        env=python.full_env(),
        toolchain_dirs=python.toolchain_dirs,
        hidden_dirs=python.hidden_dirs,
    )
    fresh: list[float] = []
    for _ in range(args.n):
        started = time.perf_counter()
        run = backend.run(request)
        fresh.append(time.perf_counter() - started)
        assert run.stdout == "2\n", run
    p50_p, p95_p = _quantiles(persistent)
    p50_f, p95_f = _quantiles(fresh)
    print(f"persistent run('x + 1'):     p50 {p50_p * 1e3:7.2f} ms  p95 {p95_p * 1e3:7.2f} ms")
    print(f"fresh BwrapBackend.run:      p50 {p50_f * 1e3:7.2f} ms  p95 {p95_f * 1e3:7.2f} ms")
    print(f"p50 ratio (fresh / persistent): {p50_f / p50_p:.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
