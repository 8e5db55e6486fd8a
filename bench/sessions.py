"""Sessions: a python tool call in a live session against a fresh sandbox run of the same code,
sessions held at once and their memory, and an episode's overhead over its tool runs.

    .venv/bin/python -m bench.sessions                 # report to bench/out/sessions.md (+ .png)
    .venv/bin/python -m bench.sessions -n 100 --hold 16

One real referee server (uvicorn, bubblewrap), called over HTTP from this process, one call at
a time (a latency, not a throughput):

1. **Latency.** ``n`` calls of ``x + 1`` in one python session (``x = 1`` set first;
   ``POST /v1/sessions/{id}/tools/python``) against ``n`` ``POST /v1/sandbox/run`` of
   ``x = 1; print(x + 1)`` (a new sandbox, cgroup and interpreter each time): p50, p95 and the
   ratio of the p50s.
2. **Held at once.** ``--hold`` python sessions opened side by side (each has run
   ``import math``), then the resident memory of their sandboxes (the proportional set size,
   shared pages split, of every process below the server) per session, and the host's
   available memory before and after.
3. **Episode overhead.** ``--episodes`` whole episodes (open, three tool calls, the answer,
   verify, close): the episode's wall time against the sum of its tool runs' own wall time
   (``info.wall_s``, measured in the interpreter's host).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

import httpx

from bench.clients import load_proc_tree
from referee.services.launcher import Server, start_referee

ROOT = Path(__file__).resolve().parents[1]
TASK = {"prompt": "What is 41 + 1?", "reference": "42"}


def _quantiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[int(0.95 * (len(ordered) - 1))]


def _open(http: httpx.Client) -> str:
    r = http.post("/v1/sessions", json={"env": "python", "task": TASK})
    r.raise_for_status()
    return str(r.json()["session_id"])


def _tool(http: httpx.Client, sid: str, code: str) -> dict[str, Any]:
    r = http.post(f"/v1/sessions/{sid}/tools/python", json={"arguments": {"code": code}})
    r.raise_for_status()
    out: dict[str, Any] = r.json()
    return out


def latency(http: httpx.Client, n: int) -> dict[str, Any]:
    sid = _open(http)
    assert _tool(http, sid, "x = 1")["output"] == "(no output)\n"
    session: list[float] = []
    for _ in range(n):
        started = time.perf_counter()
        out = _tool(http, sid, "x + 1")
        session.append(time.perf_counter() - started)
        assert out["output"] == "2\n", out
    http.delete(f"/v1/sessions/{sid}")
    fresh: list[float] = []
    body = {"code": "x = 1\nprint(x + 1)", "language": "python", "limits": {"time_s": 10}}
    for _ in range(n):
        started = time.perf_counter()
        run = http.post("/v1/sandbox/run", json=body).json()
        fresh.append(time.perf_counter() - started)
        assert run["status"] == "ok" and run["stdout"] == "2\n", run
    (s50, s95), (f50, f95) = _quantiles(session), _quantiles(fresh)
    return {
        "n": n,
        "session_p50_ms": s50 * 1e3,
        "session_p95_ms": s95 * 1e3,
        "fresh_p50_ms": f50 * 1e3,
        "fresh_p95_ms": f95 * 1e3,
        "ratio_p50": f50 / s50,
        "session_samples_ms": [x * 1e3 for x in session],
        "fresh_samples_ms": [x * 1e3 for x in fresh],
    }


_descendants = load_proc_tree().descendants


def _pss_kib(pid: int) -> int:
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0
    for line in text.splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1])
    return 0


def _available_kib() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1])
    return 0


def held(http: httpx.Client, server: Server, count: int) -> dict[str, Any]:
    before_pids = set(_descendants(server.process.pid))
    available_before = _available_kib()
    sids = []
    started = time.perf_counter()
    for _ in range(count):
        sid = _open(http)
        assert _tool(http, sid, "import math\nmath.pi > 3")["output"] == "True\n"
        sids.append(sid)
    open_s = time.perf_counter() - started
    sandboxes = [p for p in _descendants(server.process.pid) if p not in before_pids]
    pss_kib = sum(_pss_kib(p) for p in sandboxes)
    available_after = _available_kib()
    # every one still answers with its own state
    for k, sid in enumerate(sids):
        _tool(http, sid, f"mine = {k}")
    assert all(_tool(http, sid, "mine")["output"] == f"{k}\n" for k, sid in enumerate(sids))
    for sid in sids:
        http.delete(f"/v1/sessions/{sid}")
    return {
        "sessions": count,
        "open_and_first_call_s_each": open_s / count,
        "processes": len(sandboxes),
        "pss_mib_per_session": pss_kib / 1024 / count,
        "available_drop_mib_per_session": (available_before - available_after) / 1024 / count,
    }


def episodes(http: httpx.Client, count: int) -> dict[str, Any]:
    walls, tools = [], []
    for _ in range(count):
        started = time.perf_counter()
        sid = _open(http)
        tool_s = 0.0
        for code in ("a = 40", "b = a + 2", "b"):
            tool_s += float(_tool(http, sid, code)["info"]["wall_s"])
        step = http.post(f"/v1/sessions/{sid}/step", json={"response": "\\boxed{42}"}).json()
        assert step["reward"] == 1.0, step
        reward = http.post(f"/v1/sessions/{sid}/verify", json={}).json()
        assert reward["score"] == 1.0, reward
        http.delete(f"/v1/sessions/{sid}")
        walls.append(time.perf_counter() - started)
        tools.append(tool_s)
    wall, tool = statistics.median(walls), statistics.median(tools)
    return {
        "episodes": count,
        "episode_p50_ms": wall * 1e3,
        "tool_runs_p50_ms": tool * 1e3,
        "overhead_p50_ms": (wall - tool) * 1e3,
    }


def report(lat: dict[str, Any], hold: dict[str, Any], eps: dict[str, Any]) -> str:
    return "\n".join(
        [
            "# Sessions",
            "",
            "`python -m bench.sessions`: one referee server (bubblewrap), called over HTTP one "
            "call at a time.",
            "",
            f"## A python tool call against a fresh sandbox run ({lat['n']} calls each)",
            "",
            "| | p50 | p95 |",
            "|---|---:|---:|",
            f"| session tool call `x + 1` | {lat['session_p50_ms']:.1f} ms "
            f"| {lat['session_p95_ms']:.1f} ms |",
            f"| `POST /v1/sandbox/run` of `x = 1; print(x + 1)` | {lat['fresh_p50_ms']:.1f} ms "
            f"| {lat['fresh_p95_ms']:.1f} ms |",
            f"| ratio of the p50s (fresh / session) | {lat['ratio_p50']:.1f}x | |",
            "",
            f"## {hold['sessions']} python sessions held at once",
            "",
            "| | |",
            "|---|---:|",
            f"| open and first call, each | {hold['open_and_first_call_s_each'] * 1e3:.0f} ms |",
            f"| processes of their sandboxes | {hold['processes']} |",
            "| memory per session (PSS of its processes) "
            f"| {hold['pss_mib_per_session']:.1f} MiB |",
            f"| host's available memory, drop per session "
            f"| {hold['available_drop_mib_per_session']:.1f} MiB |",
            "",
            f"## A whole episode ({eps['episodes']} episodes: open, 3 tool calls, the answer, "
            "verify, close)",
            "",
            "| | p50 |",
            "|---|---:|",
            f"| episode, wall | {eps['episode_p50_ms']:.1f} ms |",
            f"| its tool runs (in the interpreter) | {eps['tool_runs_p50_ms']:.1f} ms |",
            f"| overhead | {eps['overhead_p50_ms']:.1f} ms |",
            "",
        ]
    )


def _plot(lat: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.5))
    data = [lat["session_samples_ms"], lat["fresh_samples_ms"]]
    ax.boxplot(data, orientation="horizontal", showfliers=False)
    ax.set_yticks([1, 2], ["session tool call", "fresh /v1/sandbox/run"])
    ax.set_xscale("log")
    ax.set_xlabel("latency per call (ms, log scale)")
    ax.set_title(f"python: live session vs fresh sandbox ({lat['ratio_p50']:.1f}x at p50)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=200, help="calls per mode")
    ap.add_argument("--hold", type=int, default=64, help="sessions held at once")
    ap.add_argument("--episodes", type=int, default=20)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    env = {"REFEREE_SESSIONS_MAX_LIVE": str(max(args.hold, 4)), "REFEREE_MATH_WORKERS": "1"}
    with (
        start_referee(env, log=args.out / "sessions-server.log", name="sessions") as server,
        httpx.Client(base_url=server.url, timeout=120) as http,
    ):
        lat = latency(http, args.n)
        hold = held(http, server, args.hold)
        eps = episodes(http, args.episodes)
    text = report(lat, hold, eps)
    (args.out / "sessions.md").write_text(text)
    raw = {"latency": lat, "held": hold, "episodes": eps}
    (args.out / "sessions.json").write_text(json.dumps(raw, indent=1))
    _plot(lat, args.out / "sessions.png")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
