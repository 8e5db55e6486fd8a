"""Items/s of the ``sql``, ``tool_call`` and ``python`` graders through ``/v1/rewards``, against
the plain in-process way a team would score them, side by side in one run.

    .venv/bin/python -m bench.verifiers_exec            # full run
    .venv/bin/python -m bench.verifiers_exec --quick    # a tiny run (checks the script)

Peers, each called in this process with no guard at all:

* ``sql``: ``sqlite3`` itself: the database built once, then the response's and the
  reference's query executed and their rows compared as multisets (no copy, no authorizer, no
  deadline, no caps);
* ``tool_call``: ``json.loads`` of the Hermes ``<tool_call>`` block and ``==`` against the
  reference (no formats, no defaults, no partial credit);
* ``python``: the grader's source ``exec``-ed once, ``grade(sample, item)`` called per item (no
  sandbox: the user's code runs in the trainer's process).

referee: one server (uvicorn on a free loopback port, the default settings), batches of
``--batch`` items posted by 2 client threads. Half the responses are right. Reported: items/s of
each and referee's ratio to the peer. Writes OUT/verifiers_exec.md (OUT: bench/out/).
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench.clients import thread_clients
from referee.services.launcher import start_referee

OUT = Path(__file__).parent / "out"
CLIENTS = 2

SETUP = "CREATE TABLE singer(id INTEGER PRIMARY KEY, name TEXT, country TEXT, age INT);" + "".join(
    f"INSERT INTO singer VALUES ({i}, 'singer {i}', 'country {i % 7}', {20 + i % 50});"
    for i in range(200)
)
SQL_REFERENCE = "SELECT country, count(*) FROM singer GROUP BY country"
SQL_RESPONSES = [
    "```sql\nSELECT country, COUNT(id) FROM singer GROUP BY country\n```",
    "```sql\nSELECT country, count(*) FROM singer WHERE age > 30 GROUP BY country\n```",
]
CALL = {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}
TOOL_RESPONSES = [
    f"<think>weather</think>\n<tool_call>\n{json.dumps(CALL)}\n</tool_call>",
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Lyon"}}\n</tool_call>',
]
GRADE = """
def grade(sample, item):
    return 1.0 if sample["output_text"].strip() == item["answer"] else 0.0
"""
PY_RESPONSES = ["42", "41"]


def sql_item(i: int) -> dict[str, Any]:
    grader = {"type": "sql", "setup": SETUP, "reference": SQL_REFERENCE}
    return {"id": str(i), "response": SQL_RESPONSES[i % 2], "grader": grader}


def tool_item(i: int) -> dict[str, Any]:
    grader = {"type": "tool_call", "reference": [CALL]}
    return {"id": str(i), "response": TOOL_RESPONSES[i % 2], "grader": grader}


def python_item(i: int) -> dict[str, Any]:
    grader = {"type": "python", "source": GRADE, "item": {"answer": "42"}}
    return {"id": str(i), "response": PY_RESPONSES[i % 2], "grader": grader}


# --- peers, in-process -------------------------------------------------------------------


def peer_sql() -> Callable[[int], float]:
    conn = sqlite3.connect(":memory:")
    conn.executescript(SETUP)
    fence = re.compile(r"```sql\n(.*?)```", re.S)

    def score(i: int) -> float:
        m = fence.search(SQL_RESPONSES[i % 2])
        query = m.group(1) if m else ""
        got = Counter(conn.execute(query).fetchall())
        return float(got == Counter(conn.execute(SQL_REFERENCE).fetchall()))

    return score


def peer_tool() -> Callable[[int], float]:
    block = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.S)

    def score(i: int) -> float:
        calls = [json.loads(b) for b in block.findall(TOOL_RESPONSES[i % 2])]
        return float(calls == [CALL])

    return score


def peer_python() -> Callable[[int], float]:
    namespace: dict[str, Any] = {}
    exec(compile(GRADE, "grader.py", "exec"), namespace)  # the peer: no sandbox at all
    grade = namespace["grade"]

    def score(i: int) -> float:
        return float(grade({"output_text": PY_RESPONSES[i % 2]}, {"answer": "42"}))

    return score


# --- measuring ---------------------------------------------------------------------------


def in_process(score: Callable[[int], float], n: int) -> float:
    start = time.perf_counter()
    total = sum(score(i) for i in range(n))
    elapsed = time.perf_counter() - start
    if total != n // 2 + n % 2:
        raise RuntimeError(f"the peer scored {total} of {n}, expected half right")
    return n / elapsed


def over_http(url: str, make: Callable[[int], dict[str, Any]], n: int, batch: int) -> float:
    client = thread_clients(url, timeout=600)

    def post(first: int) -> float:
        items = [make(i) for i in range(first, min(first + batch, n))]
        resp = client().post("/v1/rewards", json={"items": items})
        resp.raise_for_status()
        return sum(r["score"] or 0.0 for r in resp.json()["rewards"])

    post(0)  # warm-up: builds the database, starts the sandbox, warms the pool
    start = time.perf_counter()
    with ThreadPoolExecutor(CLIENTS) as pool:
        total = sum(pool.map(post, range(0, n, batch)))
    elapsed = time.perf_counter() - start
    if total != n // 2 + n % 2:
        raise RuntimeError(f"referee scored {total} of {n}, expected half right")
    return n / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a tiny run")
    parser.add_argument("--items", type=int, default=2000, help="items per grader (sql, tool)")
    parser.add_argument("--python-items", type=int, default=200, help="python grader items")
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--out", type=Path, default=OUT, help="output folder")
    args = parser.parse_args()
    n, n_py, batch = (20, 6, 10) if args.quick else (args.items, args.python_items, args.batch)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        # the server an operator gets: its default check workers and sandbox slots
        server = start_referee({}, log=Path(tmp) / "server.log")
        url = server.url
        try:
            for name, make, peer, count in (
                ("sql", sql_item, peer_sql, n),
                ("tool_call", tool_item, peer_tool, n),
                ("python", python_item, peer_python, n_py),
            ):
                ours = over_http(url, make, count, batch)
                theirs = in_process(peer(), count)
                rows.append((name, count, ours, theirs))
                print(f"{name:10} referee {ours:10.1f} items/s   peer {theirs:10.1f} items/s")
        finally:
            server.stop()
    lines = [
        "# sql, tool_call and python graders: /v1/rewards against the peer in-process",
        "",
        f"{CLIENTS} client threads, batches of {batch}; the peers run in one thread here.",
        "",
        "| grader | items | referee items/s | peer | peer items/s | ratio |",
        "|---|---|---|---|---|---|",
    ]
    peers = {"sql": "sqlite3", "tool_call": "json ==", "python": "exec in-process"}
    for name, count, ours, theirs in rows:
        ratio = ours / theirs
        lines.append(
            f"| {name} | {count} | {ours:.1f} | {peers[name]} | {theirs:.1f} | {ratio:.2f}x |"
        )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "verifiers_exec.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out / 'verifiers_exec.md'}")


if __name__ == "__main__":
    main()
