"""Sandbox benchmark: the cost of isolation, side by side in one run.

    .venv/bin/python -m bench.sandbox            # full run (about a minute on 2 cores)
    .venv/bin/python -m bench.sandbox --quick    # small run

Two workloads, each run by 2 concurrent workers (threads):

* ``python``: a trivial program (``print(input())``), one run per job;
* ``cpp10``: a C++ program compiled once and run against 10 stdin/stdout tests per job.

Four ways to run them:

(a) ``bare``: a plain subprocess with the same rlimits (``resource_limits.rlimits_for``), no
    isolation at all: the floor. C++ is compiled once per job with the same g++ command line.
(b) ``library``: referee's bubblewrap backend through ``referee.sandbox.run_tests`` (namespaces,
    seccomp, a cgroup per run, a fresh tmpfs, compile once per job).
(c) ``docker``: referee's docker backend through the same ``run_tests`` (a container per run
    from ``referee-sandbox:latest``, built by docker/build-sandbox-image.sh: network none,
    read-only root, tmpfs work dir, memory/pids limits, no capabilities); skipped, with the
    reason in the report, when no daemon or image is there;
(d) ``http``: a real ``referee`` server (uvicorn, 2 sandbox slots): ``POST /v1/sandbox/run`` for
    the Python program, ``POST /v1/rewards`` with one ``code`` item of 10 tests for C++.

Reported per workload and mode: job latency p50/p95 (ms), jobs/s and program runs/s (a C++ job
is 10 runs plus one compile), and each mode's p50 as a ratio of the bare p50. Out of scope here:
SandboxFusion (not measured). Writes OUT/sandbox.md (OUT: bench/out/).

Second part, many tests per program (``--part tests`` runs only this part): 16 programs scored
concurrently (16 threads), each against all its tests, for a Python stdin/stdout problem with 20
tests (``py20``) and with 100 tests (``py100``) and a C++ one with 20 tests (``cpp20``). Modes:

* ``bare``: each test a plain subprocess (the same interpreter and ``-I -B`` command line as
  referee's recipe; C++ compiled once per program with the same g++ line), no isolation. It
  processes the host's site-packages (``.pth`` files), as a plain ``python -I`` does;
* ``bare -S`` (Python only): the same with ``-S``, the leanest bare start;
* ``referee``: ``run_tests`` on the bwrap backend: one sandbox per program, each test its own
  process in it (a fork of the sandbox's lean interpreter for Python);
* ``referee per-test``: the same with ``REFEREE_SANDBOX_PER_TEST=1`` (a sandbox per test).

Reported: the wall time to score every program, and each mode's time as a ratio of ``bare`` in
the same run. Writes OUT/sandbox_tests.md and OUT/sandbox_tests.png.

Third part, veRL's own client (``--part verl`` runs only this part): veRL 0.9.1's SandboxFusion
reward code, loaded from its released wheel (tests/integration/trainer/verl_sandbox_fusion.py),
against a real referee server's ``/run_code`` on 2 sandbox slots. 64 solutions (8 with
``--quick``) of 3 tests each are scored correct and wrong, twice: at veRL's default
concurrency (every solution at once, one semaphore of ``reward.sandbox_fusion.max_concurrent`` =
64 requests) and with 2 callers (2 solutions at once, a semaphore of 2). Reported: how many
correct solutions scored 1 and wrong ones 0, the wall time, tests/s, and the throughput of the
64-caller run as a ratio of the 2-caller one (queueing must not cost throughput). Writes
OUT/sandbox_verl.md.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType

from bench.clients import thread_clients
from referee.sandbox import (
    BwrapBackend,
    DockerBackend,
    Limits,
    SandboxBackend,
    SandboxUnavailable,
    StdioTest,
    get_language,
    run_tests,
)
from referee.sandbox.resource_limits import preexec_rlimits, rlimits_for
from referee.services.launcher import Server, start_referee

WORKERS = 2
LIMITS = Limits(wall_time_s=10.0, memory_mb=256)
PY_SOURCE = "print(input())\n"
CPP_SOURCE = (
    "#include <iostream>\nint main(){ long a, b; std::cin >> a >> b;"
    " std::cout << a + b << std::endl; return 0; }\n"
)
CPP_TESTS = [(f"{i} {i * 7}\n", f"{i * 8}\n") for i in range(10)]

Job = Callable[[], bool]


# -- (a) bare subprocesses ---------------------------------------------------------------------
def _bare_run(argv: list[str], stdin: str, cwd: str, address_space: bool) -> str:
    done = subprocess.run(
        argv,
        input=stdin.encode(),
        capture_output=True,
        cwd=cwd,
        timeout=LIMITS.wall_time_s,
        preexec_fn=preexec_rlimits(rlimits_for(LIMITS, address_space=address_space)),
        env={"PATH": "/usr/bin:/bin", "PYTHONIOENCODING": "utf-8"},
        check=False,
    )
    return done.stdout.decode()


def bare_python() -> bool:
    python = get_language("python").run_argv("main.py", LIMITS)[0]
    with tempfile.TemporaryDirectory(prefix="bench-bare-") as tmp:
        Path(tmp, "main.py").write_text(PY_SOURCE)
        out = _bare_run([python, "-I", "-B", "main.py"], "hi\n", tmp, True)
    return out == "hi\n"


def bare_cpp() -> bool:
    with tempfile.TemporaryDirectory(prefix="bench-bare-") as tmp:
        Path(tmp, "main.cpp").write_text(CPP_SOURCE)
        compiler = ["/usr/bin/g++", "-O2", "-std=gnu++17", "-pipe", "-o", "main", "main.cpp"]
        subprocess.run(compiler, cwd=tmp, check=True, timeout=60)
        return all(_bare_run(["./main"], stdin, tmp, True) == want for stdin, want in CPP_TESTS)


# -- (b) the library, (c) the docker backend -----------------------------------------------------
def library_jobs(backend: SandboxBackend) -> tuple[Job, Job]:
    def python() -> bool:
        result = run_tests(
            PY_SOURCE, "python", [StdioTest("hi\n", "hi\n")], LIMITS, backend=backend
        )
        return result.all_passed

    def cpp() -> bool:
        tests = [StdioTest(i, o) for i, o in CPP_TESTS]
        return run_tests(CPP_SOURCE, "cpp", tests, LIMITS, backend=backend).all_passed

    return python, cpp


# -- (d) HTTP --------------------------------------------------------------------------------
def start_server(tmp: Path) -> Server:
    env = {"REFEREE_SANDBOX_SLOTS": str(WORKERS), "REFEREE_MATH_WORKERS": "1"}
    return start_referee(env, log=tmp / "server.log")


def http_jobs(url: str) -> tuple[Job, Job]:
    client = thread_clients(url, timeout=60)

    def python() -> bool:
        body = {"code": PY_SOURCE, "language": "python", "stdin": "hi\n", "limits": {"time_s": 10}}
        out = client().post("/v1/sandbox/run", json=body).json()
        return bool(out["status"] == "ok" and out["stdout"] == "hi\n")

    def cpp() -> bool:
        grader = {
            "type": "code",
            "language": "cpp",
            "extract": "none",
            "tests": [{"stdin": i, "stdout": o} for i, o in CPP_TESTS],
            "limits": {"time_s": 10, "memory_mb": 256},
        }
        item = {"id": "0", "response": CPP_SOURCE, "grader": grader}
        out = client().post("/v1/rewards", json={"items": [item]}).json()
        return bool(out["rewards"][0]["score"] == 1.0)

    return python, cpp


# -- measuring -------------------------------------------------------------------------------
def _start_threads(pool: ThreadPoolExecutor, n: int) -> None:
    """Start the pool's ``n`` threads before a clock starts (each waits for the others)."""
    barrier = threading.Barrier(n)
    list(pool.map(lambda _: barrier.wait(), range(n)))


def measure(job: Job, n: int) -> tuple[list[float], float]:
    """Run ``job`` ``n`` times on WORKERS threads: (latencies in ms, wall seconds)."""
    job()  # warm-up
    latencies: list[float] = []
    lock = threading.Lock()

    def one(_: int) -> None:
        start = time.perf_counter()
        ok = job()
        took = (time.perf_counter() - start) * 1000
        if not ok:
            raise RuntimeError("a benchmark job gave a wrong result")
        with lock:
            latencies.append(took)

    with ThreadPoolExecutor(WORKERS) as pool:
        _start_threads(pool, WORKERS)
        start = time.perf_counter()
        list(pool.map(one, range(n)))
        wall = time.perf_counter() - start
    return latencies, wall


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


Row = tuple[str, str, float, float, float, float]
"""(workload, mode, p50 ms, p95 ms, jobs/s, program runs/s)"""


def measure_plan(plan: list[tuple[str, str, Job, int, int]], width: int) -> list[Row]:
    """Measure each (workload, mode, job, jobs, program runs per job) of ``plan`` in turn,
    printing each mode's p50 and p95 (the mode padded to ``width``) as it is done."""
    rows: list[Row] = []
    for workload, mode, job, n, runs in plan:
        latencies, wall = measure(job, n)
        p50, p95 = pct(latencies, 0.5), pct(latencies, 0.95)
        rows.append((workload, mode, p50, p95, n / wall, n * runs / wall))
        print(f"{workload:7} {mode:{width}} p50 {p50:8.1f} ms  p95 {p95:8.1f} ms", flush=True)
    return rows


# -- many tests per program ------------------------------------------------------------------
PROGRAMS = 16
PY_SUM_SOURCE = "n = int(input())\nprint(sum(map(int, input().split())) + n)\n"
CPP_SUM_SOURCE = (
    "#include <iostream>\nint main(){ long n, s = 0, x; std::cin >> n;"
    " for (long i = 0; i < n; ++i) { std::cin >> x; s += x; }"
    " std::cout << s + n << std::endl; return 0; }\n"
)


def sum_tests(count: int) -> list[tuple[str, str]]:
    out = []
    for i in range(count):
        values = [(i * 31 + j * 7) % 1000 for j in range(10 + i % 20)]
        out.append(
            (f"{len(values)}\n{' '.join(map(str, values))}\n", f"{sum(values) + len(values)}\n")
        )
    return out


def bare_program(language: str, tests: list[tuple[str, str]], lean: bool = False) -> bool:
    with tempfile.TemporaryDirectory(prefix="bench-bare-") as tmp:
        if language == "python":
            Path(tmp, "main.py").write_text(PY_SUM_SOURCE)
            python = get_language("python").run_argv("main.py", LIMITS)[0]
            argv = [python, "-I", *(["-S"] if lean else []), "-B", "main.py"]
        else:
            Path(tmp, "main.cpp").write_text(CPP_SUM_SOURCE)
            compiler = ["/usr/bin/g++", "-O2", "-std=gnu++17", "-pipe", "-o", "main", "main.cpp"]
            subprocess.run(compiler, cwd=tmp, check=True, timeout=60)
            argv = ["./main"]
        return all(_bare_run(argv, stdin, tmp, True) == want for stdin, want in tests)


def referee_program(backend: SandboxBackend, language: str, tests: list[tuple[str, str]]) -> bool:
    source = PY_SUM_SOURCE if language == "python" else CPP_SUM_SOURCE
    cases = [StdioTest(i, o) for i, o in tests]
    return run_tests(source, language, cases, LIMITS, backend=backend).all_passed


def score_all(job: Callable[[], bool], programs: int) -> float:
    """Wall seconds to run ``job`` once per program, ``PROGRAMS`` at a time."""
    with ThreadPoolExecutor(PROGRAMS) as pool:
        _start_threads(pool, PROGRAMS)
        start = time.perf_counter()
        results = list(pool.map(lambda _: job(), range(programs)))
        wall = time.perf_counter() - start
    if not all(results):
        raise RuntimeError("a benchmark program failed its tests")
    return wall


def many_tests_part(backend: BwrapBackend, out: Path, quick: bool) -> str:
    programs = 4 if quick else PROGRAMS
    sizes = {"py20": ("python", 20), "py100": ("python", 100), "cpp20": ("cpp", 20)}
    if quick:
        sizes = {"py20": ("python", 5), "py100": ("python", 10), "cpp20": ("cpp", 5)}
    modes = ("bare", "bare -S", "referee", "referee per-test")
    rows: list[tuple[str, str, float]] = []
    for workload, (language, count) in sizes.items():
        tests = sum_tests(count)
        for mode in modes:
            if mode == "bare -S" and language != "python":
                continue
            job = functools.partial(bare_program, language, tests, mode == "bare -S")
            if not mode.startswith("bare"):
                job = functools.partial(referee_program, backend, language, tests)
            saved = os.environ.get("REFEREE_SANDBOX_PER_TEST")
            os.environ["REFEREE_SANDBOX_PER_TEST"] = "1" if mode == "referee per-test" else "0"
            try:
                job()  # warm-up
                wall = score_all(job, programs)
            finally:
                if saved is None:
                    os.environ.pop("REFEREE_SANDBOX_PER_TEST", None)
                else:
                    os.environ["REFEREE_SANDBOX_PER_TEST"] = saved
            rows.append((workload, mode, wall))
            print(f"{workload:6} {mode:17} {wall:8.2f} s", flush=True)
    bare = {w: t for w, m, t in rows if m == "bare"}
    counts = {w: c for w, (_, c) in sizes.items()}
    lines = [
        "# Sandbox benchmark: many tests per program",
        "",
        f"{programs} programs scored concurrently ({PROGRAMS} threads), each against all its "
        f"tests; {os.cpu_count()} CPUs; bwrap backend with cgroups="
        f"{'yes' if backend.cgroups is not None else 'no'}.",
        "",
        "| workload | tests | mode | wall s | tests/s | time / bare |",
        "|---|---:|---|---:|---:|---:|",
    ]
    for workload, mode, wall in rows:
        n = counts[workload] * programs
        lines.append(
            f"| {workload} | {counts[workload]} | {mode} | {wall:.2f} | {n / wall:.0f} "
            f"| {wall / bare[workload]:.2f}x |"
        )
    text = "\n".join(lines) + "\n"
    out.mkdir(parents=True, exist_ok=True)
    (out / "sandbox_tests.md").write_text(text)
    _plot(rows, bare, modes, out / "sandbox_tests.png")
    return text


def _plot(
    rows: list[tuple[str, str, float]], bare: dict[str, float], modes: tuple[str, ...], path: Path
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    workloads = list(bare)
    fig, ax = plt.subplots(figsize=(7, 4))
    width = 0.8 / len(modes)
    for k, mode in enumerate(modes):
        found = {w: t for w, m, t in rows if m == mode}
        values = [found.get(wl, 0.0) / bare[wl] for wl in workloads]  # 0: not measured
        xs = [i + (k - (len(modes) - 1) / 2) * width for i in range(len(workloads))]
        ax.bar(xs, values, width, label=mode)
    ax.axhline(1.0, color="grey", linewidth=0.8, linestyle="--")
    ax.set_xticks(range(len(workloads)), workloads)
    ax.set_ylabel("wall time / bare subprocesses")
    ax.set_title("Scoring programs against many tests (lower is faster)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# -- third part: veRL's own SandboxFusion client ----------------------------------------------
def _verl_helpers() -> ModuleType:
    """tests/integration/trainer/verl_sandbox_fusion.py (with peer_code_compat), loaded by path."""
    folder = Path(__file__).resolve().parent.parent / "tests" / "integration" / "trainer"
    name = "referee_bench_peers"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            name, folder / "__init__.py", submodule_search_locations=[str(folder)]
        )
        assert spec is not None and spec.loader is not None
        package = importlib.util.module_from_spec(spec)
        sys.modules[name] = package
        spec.loader.exec_module(package)
    return importlib.import_module(f"{name}.verl_sandbox_fusion")


def verl_part(out: Path, quick: bool) -> str:
    helpers = _verl_helpers()
    solutions, tests = (8, 3) if quick else (64, 3)
    problems = [helpers.problem(i, tests) for i in range(solutions)]
    correct = [p[0] for p in problems]
    incorrect = [p[1] for p in problems]
    cases = [p[2] for p in problems]
    tmp = Path(tempfile.mkdtemp(prefix="bench-verl-"))
    server = start_server(tmp)
    url = server.url
    rows: list[tuple[str, int, int, float]] = []
    try:
        with helpers.verl_modules() as verl:
            default = verl.max_concurrent
            for label, callers, bound in (
                (f"{default} callers (veRL's default)", None, None),
                ("2 callers", 2, 2),
            ):
                start = time.perf_counter()
                right, wrong = (
                    helpers.score_all(
                        verl, url, answers, cases, callers=callers, max_concurrent=bound
                    )
                    for answers in (correct, incorrect)
                )
                wall = time.perf_counter() - start
                rows.append(
                    (label, sum(s == 1.0 for s in right), sum(s == 0.0 for s in wrong), wall)
                )
                print(f"verl {label:28} {wall:6.2f} s", flush=True)
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    runs = 2 * solutions * tests
    lines = [
        "# veRL's SandboxFusion client against /run_code",
        "",
        f"veRL {helpers.VERL_VERSION}'s own code; a referee server with {WORKERS} sandbox slots; "
        f"{solutions} correct and {solutions} wrong solutions, {tests} tests each "
        f"({runs} runs per row); {os.cpu_count()} CPUs.",
        "",
        "| callers | correct scored 1 | wrong scored 0 | wall s | tests/s |",
        "|---|---:|---:|---:|---:|",
    ]
    for label, right_ok, wrong_ok, wall in rows:
        lines.append(
            f"| {label} | {right_ok}/{solutions} | {wrong_ok}/{solutions} | {wall:.2f} "
            f"| {runs / wall:.1f} |"
        )
    ratio = rows[1][3] / rows[0][3]
    lines += ["", f"Throughput of the {rows[0][0]} run / the 2-caller run: {ratio:.2f}x."]
    text = "\n".join(lines) + "\n"
    out.mkdir(parents=True, exist_ok=True)
    (out / "sandbox_verl.md").write_text(text)
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default=str(Path(__file__).parent / "out"))
    parser.add_argument("--part", choices=("all", "runs", "tests", "verl"), default="all")
    args = parser.parse_args(argv)
    if args.part == "tests":
        print(many_tests_part(BwrapBackend.create(), Path(args.out), args.quick))
        return 0
    if args.part == "verl":
        print(verl_part(Path(args.out), args.quick))
        return 0
    n_py, n_cpp = (40, 6) if args.quick else (200, 30)
    backend = BwrapBackend.create()
    docker: DockerBackend | None = None
    docker_note = ""
    try:
        docker = DockerBackend.create()
    except SandboxUnavailable as exc:
        docker_note = f"docker backend not measured: {exc}"
        print(docker_note, flush=True)
    tmp = Path(tempfile.mkdtemp(prefix="bench-sandbox-"))
    server = start_server(tmp)
    url = server.url
    try:
        lib_py, lib_cpp = library_jobs(backend)
        http_py, http_cpp = http_jobs(url)
        plan: list[tuple[str, str, Job, int, int]] = [
            ("python", "bare", bare_python, n_py, 1),
            ("python", "library (bwrap)", lib_py, n_py, 1),
            ("python", "http /v1/sandbox/run", http_py, n_py, 1),
            ("cpp10", "bare", bare_cpp, n_cpp, 10),
            ("cpp10", "library (bwrap)", lib_cpp, n_cpp, 10),
            ("cpp10", "http /v1/rewards", http_cpp, n_cpp, 10),
        ]
        if docker is not None:
            dock_py, dock_cpp = library_jobs(docker)
            plan.insert(2, ("python", "library (docker)", dock_py, n_py, 1))
            plan.insert(6, ("cpp10", "library (docker)", dock_cpp, n_cpp, 10))
        rows = measure_plan(plan, width=22)
    finally:
        server.stop()
        if docker is not None:
            docker.close()
        shutil.rmtree(tmp, ignore_errors=True)
    floor = {w: p50 for w, m, p50, *_ in rows if m == "bare"}
    lines = [
        "# Sandbox benchmark",
        "",
        f"{WORKERS} concurrent workers; {os.cpu_count()} CPUs; bwrap backend with cgroups="
        f"{'yes' if backend.cgroups is not None else 'no'}; docker backend: "
        f"{'image ' + docker.image if docker is not None else 'not available'}; python: {n_py}"
        f" jobs, cpp10: {n_cpp} jobs (each: 1 compile + 10 test runs).",
        "",
        "| workload | mode | p50 ms | p95 ms | jobs/s | runs/s | p50 / bare |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for workload, mode, p50, p95, jobs_s, runs_s in rows:
        ratio = p50 / floor[workload]
        lines.append(
            f"| {workload} | {mode} | {p50:.1f} | {p95:.1f} | {jobs_s:.1f} | {runs_s:.1f} "
            f"| {ratio:.2f}x |"
        )
    p50s = {(w, m): p50 for w, m, p50, *_ in rows}
    if ("python", "library (docker)") in p50s:
        # the trivial program does next to nothing: what a docker run adds is its container
        per_run = p50s[("python", "library (docker)")] - floor["python"]
        lines += [
            "",
            f"A container per run (create, start, wait, remove) costs {per_run:.1f} ms here: the "
            "docker backend's p50 on the trivial Python program minus the bare subprocess's; "
            "a cpp10 job pays it 11 times (the compile and each of its 10 tests).",
        ]
    lines += [
        "",
        "SandboxFusion is compared by bench/sandbox_fusion.py (it needs a running server).",
    ]
    if docker_note:
        lines += ["", docker_note + "."]
    text = "\n".join(lines) + "\n"
    print("\n" + text)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "sandbox.md").write_text(text)
    if args.part == "all":
        print(many_tests_part(backend, out, args.quick))
        print(verl_part(out, args.quick))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
