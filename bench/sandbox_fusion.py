"""referee's sandbox against SandboxFusion, side by side in one run.

    .venv/bin/python -m bench.sandbox_fusion --url http://127.0.0.1:8080           # full run
    .venv/bin/python -m bench.sandbox_fusion --url http://127.0.0.1:8080 --quick   # small run

SandboxFusion (https://github.com/bytedance/SandboxFusion) is not part of referee and this
script starts nothing of it: run its server yourself, from a checkout of its repository kept
outside this one, in its own virtual environment (its Python dependencies at the versions of its
poetry.lock), bound to 127.0.0.1, then pass its address as ``--url``. Its config
(``sandbox/configs/<SANDBOX_CONFIG>.yaml``) chooses the isolation: ``none`` runs every program
as a plain subprocess of the server (an address-space rlimit, nothing else), ``lite`` wraps it
in an overlayfs + chroot, cgroups (cgcreate), a pid namespace and a network namespace, which
needs sudo and libcgroup's tools. Its Python runtime is whatever ``python`` its conda
``sandbox-runtime`` environment (or, without conda, the activated environment) resolves to:
for a fair Python comparison use the same interpreter as referee's sandbox (the table shows
both). The script probes and reports which isolation the server actually ran the code with.

Two workloads, each run by 2 concurrent workers (threads), defined in ``bench.sandbox`` and
reused from it:

* ``python``: ``print(input())``, one run per job;
* ``cpp10``: a C++ program against 10 stdin/stdout tests per job. SandboxFusion's ``/run_code``
  runs one stdin per request and compiles every time: a job is 10 requests (10 compiles).

Modes: ``SandboxFusion /run_code``; referee's library (bubblewrap backend, ``run_tests``:
compile once per job); referee's HTTP server (started here with uvicorn on a free loopback
port): ``POST /v1/sandbox/run`` (one program per request; for cpp10 10 requests, compiling
every time, as SandboxFusion does) and, for cpp10, ``POST /v1/rewards`` with one ``code`` item
of 10 tests (compile once); and, as a floor, bench.sandbox's bare subprocess (no sandbox).
Reported: job p50/p95 (ms), jobs/s, program runs/s, and each mode's p50 and jobs/s against
SandboxFusion's. Writes OUT/sandbox_fusion.md (OUT: bench/out/).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from bench.clients import thread_clients
from bench.sandbox import (
    CPP_SOURCE,
    CPP_TESTS,
    LIMITS,
    PY_SOURCE,
    WORKERS,
    Job,
    bare_cpp,
    bare_python,
    http_jobs,
    library_jobs,
    measure_plan,
    start_server,
)
from referee.sandbox import BwrapBackend, get_language

# Run by SandboxFusion to find out how it isolates a program (and which Python it runs).
PROBE = """import os, sys
print(sys.executable, sys.version.split()[0])
print(os.getpid())
print(os.readlink('/proc/self/ns/net'), os.readlink('/proc/self/ns/pid'))
print(os.stat('/').st_ino, os.stat('/').st_dev)
print(open('/proc/self/cgroup').read().replace(chr(10), ' '))
"""


def _client_factory(url: str) -> Callable[[], httpx.Client]:
    return thread_clients(url, timeout=120)


def fusion_run(client: httpx.Client, code: str, language: str, stdin: str) -> dict[str, Any]:
    body = {
        "code": code,
        "language": language,
        "stdin": stdin,
        "run_timeout": LIMITS.wall_time_s,
        "memory_limit_MB": LIMITS.memory_mb,
    }
    response = client.post("/run_code", json=body)
    response.raise_for_status()
    out: dict[str, Any] = response.json()
    return out


def fusion_jobs(url: str) -> tuple[Job, Job]:
    client = _client_factory(url)

    def python() -> bool:
        out = fusion_run(client(), PY_SOURCE, "python", "hi\n")
        return bool(out["status"] == "Success" and out["run_result"]["stdout"] == "hi\n")

    def cpp() -> bool:
        ok = True
        for stdin, want in CPP_TESTS:  # one request (one compile) per test
            out = fusion_run(client(), CPP_SOURCE, "cpp", stdin)
            ok = ok and out["status"] == "Success" and out["run_result"]["stdout"] == want
        return ok

    return python, cpp


def referee_run_jobs(url: str) -> Job:
    """cpp10 through ``POST /v1/sandbox/run``: one request (one compile) per test."""
    client = _client_factory(url)

    def cpp() -> bool:
        ok = True
        for stdin, want in CPP_TESTS:
            body = {
                "code": CPP_SOURCE,
                "language": "cpp",
                "stdin": stdin,
                "limits": {"time_s": LIMITS.wall_time_s, "memory_mb": LIMITS.memory_mb},
            }
            out = client().post("/v1/sandbox/run", json=body).json()
            ok = ok and out["status"] == "ok" and out["stdout"] == want
        return ok

    return cpp


def probe_fusion(url: str) -> tuple[str, str, list[str]]:
    """(isolation, python, evidence): how SandboxFusion ran a program, seen from inside it."""
    with httpx.Client(base_url=url, timeout=60) as client:
        ping = client.get("/v1/ping")
        ping.raise_for_status()
        out = fusion_run(client, PROBE, "python", "")
    if out["status"] != "Success":
        raise RuntimeError(f"SandboxFusion could not run the probe: {out}")
    lines = out["run_result"]["stdout"].splitlines()
    python, pid, namespaces, root, cgroup = (lines + [""] * 5)[:5]
    same_net = namespaces.split()[0] == os.readlink("/proc/self/ns/net")
    same_pid = namespaces.split()[1] == os.readlink("/proc/self/ns/pid")
    host_root = os.stat("/")
    same_root = root == f"{host_root.st_ino} {host_root.st_dev}"
    sandbox_cgroup = "sandbox_mem_" in cgroup or "sandbox_cpu_" in cgroup
    if same_net and same_pid and same_root and not sandbox_cgroup:
        isolation = "none"
    elif sandbox_cgroup and not same_root:
        isolation = "lite"
    else:
        isolation = "unknown"
    evidence = [
        f"pid {pid} ({'host' if same_pid else 'own'} pid namespace)",
        f"{'host' if same_net else 'own'} network namespace",
        f"{'host' if same_root else 'other'} root filesystem",
        f"{'a SandboxFusion' if sandbox_cgroup else 'no per-run'} cgroup",
    ]
    return isolation, python, evidence


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True, help="a running SandboxFusion server")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default=str(Path(__file__).parent / "out"))
    args = parser.parse_args(argv)
    fusion_url = args.url.rstrip("/")
    n_py, n_cpp = (40, 6) if args.quick else (200, 30)
    isolation, fusion_python, evidence = probe_fusion(fusion_url)
    print(f"SandboxFusion isolation: {isolation} ({'; '.join(evidence)})", flush=True)
    backend = BwrapBackend.create()
    referee_python = get_language("python").run_argv("main.py", LIMITS)[0]
    load = os.getloadavg()[0]
    tmp = Path(tempfile.mkdtemp(prefix="bench-sandbox-fusion-"))
    server = start_server(tmp)
    url = server.url
    sf = f"SandboxFusion /run_code (isolation {isolation})"
    try:
        sf_py, sf_cpp = fusion_jobs(fusion_url)
        lib_py, lib_cpp = library_jobs(backend)
        http_py, http_rewards = http_jobs(url)
        http_cpp = referee_run_jobs(url)
        plan: list[tuple[str, str, Job, int, int]] = [
            ("python", sf, sf_py, n_py, 1),
            ("python", "referee library (bwrap)", lib_py, n_py, 1),
            ("python", "referee http /v1/sandbox/run", http_py, n_py, 1),
            ("python", "bare subprocess, referee's python (no sandbox)", bare_python, n_py, 1),
            ("cpp10", sf + ", 10 requests", sf_cpp, n_cpp, 10),
            ("cpp10", "referee library (bwrap)", lib_cpp, n_cpp, 10),
            ("cpp10", "referee http /v1/sandbox/run, 10 requests", http_cpp, n_cpp, 10),
            ("cpp10", "referee http /v1/rewards, 1 request", http_rewards, n_cpp, 10),
            ("cpp10", "bare subprocess, compile once (no sandbox)", bare_cpp, n_cpp, 10),
        ]
        rows = measure_plan(plan, width=52)
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    base = {w: (p50, jobs) for w, m, p50, _, jobs, _ in rows if m.startswith("SandboxFusion")}
    lines = [
        "# referee's sandbox vs SandboxFusion",
        "",
        f"{WORKERS} concurrent workers; {os.cpu_count()} CPUs; python: {n_py} jobs, cpp10: "
        f"{n_cpp} jobs (10 tests each); limits {LIMITS.wall_time_s:g} s, "
        f"{LIMITS.memory_mb} MB per run; load average at start {load:.1f}.",
        "",
        f"- SandboxFusion at {fusion_url}: isolation **{isolation}** (probed: "
        f"{'; '.join(evidence)}){' - no isolation at all' if isolation == 'none' else ''}; "
        f"its Python: {fusion_python}; C++: `g++ -std=c++17` (no -O), compiled per request.",
        f"- referee: bubblewrap backend, cgroups={'yes' if backend.cgroups is not None else 'no'}"
        f"; its Python: {referee_python}; C++: `g++ -O2 -std=gnu++17`.",
        "",
        "| workload | mode | p50 ms | p95 ms | jobs/s | runs/s | p50 / SF p50 | jobs/s / SF |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for workload, mode, p50, p95, jobs_s, runs_s in rows:
        sf_p50, sf_jobs = base[workload]
        lines.append(
            f"| {workload} | {mode} | {p50:.1f} | {p95:.1f} | {jobs_s:.2f} | {runs_s:.1f} "
            f"| {p50 / sf_p50:.2f}x | {jobs_s / sf_jobs:.2f}x |"
        )
    lines += [
        "",
        "Ratios are against SandboxFusion's row of the same workload (p50: lower is faster; "
        "jobs/s: higher is faster). A cpp10 job is 10 program runs; SandboxFusion and "
        "/v1/sandbox/run compile 10 times per job, the library, /v1/rewards and the bare row "
        "once. The bare rows (bench.sandbox's floor: a plain subprocess with referee's rlimits) "
        "separate the interpreter's and compiler's own cost from the sandbox's.",
    ]
    text = "\n".join(lines) + "\n"
    print("\n" + text)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "sandbox_fusion.md").write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
