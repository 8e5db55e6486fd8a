"""Items/s of the ``sql``, ``tool_call``, ``python`` and ``answer_match`` graders through
``/v1/rewards``, against the plain in-process way a team would score them, side by side in one
run.

    .venv/bin/python -m bench.verifiers_exec            # full run
    .venv/bin/python -m bench.verifiers_exec --quick    # a tiny run (checks the script)

Peers, each called in this process with no guard at all:

* ``sql``: ``sqlite3`` itself: the database built once, then the response's and the
  reference's query executed and their rows compared as multisets (no copy, no authorizer, no
  deadline, no caps); the grader carries the database as ``setup`` SQL (200 rows, 14 KB with
  every item);
* ``sql`` on a file: the same, the database a SQLite file that the grader names (``database``,
  the server's ``REFEREE_SQL_DATABASES_DIR``) and the peer opens;
* ``tool_call``: ``json.loads`` of the Hermes ``<tool_call>`` block and ``==`` against the
  reference (no formats, no defaults, no partial credit), the least a team would write;
* ``tool_call`` on BFCL: the peer implementation of the check, BFCL's own AST checker
  (``ast_checker`` from the pinned bfcl-eval wheel, loaded by path as the tests do,
  ``tests/bfcl_peer.py``) on the Hermes blocks read with ``json.loads``; the items are BFCL's
  simple_python, multiple, parallel and parallel_multiple entries, their ground truth as the
  reference and their function documents as ``tools`` (checked as BFCL checks them), every
  other response with one argument's value changed;
* ``python``: the grader's source ``exec``-ed once, ``grade(sample, item)`` called per item (no
  sandbox: the user's code runs in the trainer's process);
* ``answer_match``: veRL's Search-R1 reward (``search_r1_like_qa_em.compute_score``, the pinned
  verl wheel's file, ``tests/qa_peer.py``) on the same responses, as veRL's default reward
  calls it for its ``searchR1_*`` rows.

referee: one server (uvicorn on a free loopback port, the default settings), batches of
``--batch`` items posted by 2 client threads, each batch's JSON body encoded before the clock
starts (a trainer builds its requests on its own cores; here the client would take the server's
2) and each answer decoded inside it. Half the responses are right. Reported: items/s of
each (the fastest of 7 rounds, referee's and the peer's in turns), referee's ratio to the peer
and the share of items where the two give the same verdict. Writes OUT/verifiers_exec.md
(OUT: bench/out/).
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import re
import shutil
import sqlite3
import sys
import tempfile
import threading
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
QA_TARGET = {"target": ["Barack Obama", "Obama"]}
QA_RESPONSES = [
    "<think>Who was president in 2009?</think>\n<search>president 2009</search>\n"
    "<information>Barack Obama was inaugurated in January 2009.</information>\n"
    "<answer>Barack Obama</answer>",
    "<think>Who was president in 2009?</think>\n<answer>George W. Bush</answer>",
]


def sql_item(i: int) -> dict[str, Any]:
    grader = {"type": "sql", "setup": SETUP, "reference": SQL_REFERENCE}
    return {"id": str(i), "response": SQL_RESPONSES[i % 2], "grader": grader}


def sql_file_item(i: int) -> dict[str, Any]:
    grader = {"type": "sql", "database": "singers", "reference": SQL_REFERENCE}
    return {"id": str(i), "response": SQL_RESPONSES[i % 2], "grader": grader}


def tool_item(i: int) -> dict[str, Any]:
    grader = {"type": "tool_call", "reference": [CALL]}
    return {"id": str(i), "response": TOOL_RESPONSES[i % 2], "grader": grader}


def python_item(i: int) -> dict[str, Any]:
    grader = {"type": "python", "source": GRADE, "item": {"answer": "42"}}
    return {"id": str(i), "response": PY_RESPONSES[i % 2], "grader": grader}


def answer_item(i: int) -> dict[str, Any]:
    grader = {"type": "answer_match", "reference": QA_TARGET["target"], "max_answer_tags": 10}
    return {"id": str(i), "response": QA_RESPONSES[i % 2], "grader": grader}


# --- peers, in-process -------------------------------------------------------------------


def peer_sql(path: Path | None = None) -> Peer:
    conn = sqlite3.connect(path or ":memory:")
    if path is None:
        conn.executescript(SETUP)
    fence = re.compile(r"```sql\n(.*?)```", re.S)

    def score(i: int) -> float:
        m = fence.search(SQL_RESPONSES[i % 2])
        query = m.group(1) if m else ""
        got = Counter(conn.execute(query).fetchall())
        return float(got == Counter(conn.execute(SQL_REFERENCE).fetchall()))

    return score


def peer_tool() -> Peer:
    block = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.S)

    def score(i: int) -> float:
        calls = [json.loads(b) for b in block.findall(TOOL_RESPONSES[i % 2])]
        return float(calls == [CALL])

    return score


def peer_python() -> Peer:
    namespace: dict[str, Any] = {}
    exec(compile(GRADE, "grader.py", "exec"), namespace)  # the peer: no sandbox at all
    grade = namespace["grade"]

    def score(i: int) -> float:
        return float(grade({"output_text": PY_RESPONSES[i % 2]}, {"answer": "42"}))

    return score


def peer_answer() -> Peer:
    """veRL's Search-R1 reward (``search_r1_like_qa_em.compute_score``, tests/qa_peer.py: the
    pinned wheel's file) as ``default_compute_score`` calls it."""
    tests = str(Path(__file__).resolve().parent.parent / "tests")
    if tests not in sys.path:
        sys.path.insert(0, tests)
    compute_score = importlib.import_module("qa_peer").search_r1().compute_score

    def score(i: int) -> float:
        return float(compute_score(QA_RESPONSES[i % 2], QA_TARGET))

    return score


# --- BFCL: its entries as items, its AST checker as the peer ---------------------------------

BFCL_CATEGORIES = ("simple_python", "multiple", "parallel", "parallel_multiple")
_HERMES = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.S)


def _bfcl() -> Any:
    """tests/bfcl_peer.py (the pinned wheel, downloaded once into the tests' cache)."""
    tests = str(Path(__file__).resolve().parent.parent / "tests")
    if tests not in sys.path:
        sys.path.insert(0, tests)
    return importlib.import_module("bfcl_peer")


def bfcl_rows() -> list[tuple[str, dict[str, Any], list[dict[str, Any]], str]]:
    """(category, question, ground truth, response): each entry's ground truth as Hermes blocks
    (each argument's first possible value), and again with one argument's value changed."""
    rows = []
    for category in BFCL_CATEGORIES:
        for question, truth in _bfcl().entries(category):
            calls = [
                (name, {k: next(v for v in vs if v != "") for k, vs in args.items() if vs != [""]})
                for call in truth
                for name, args in call.items()
            ]
            for wrong in (False, True):
                if wrong and calls[0][1]:
                    name, args = calls[0]
                    key = sorted(args)[0]
                    value = args[key]
                    bad = f"{value}x" if not isinstance(value, int | float) else value * 2 + 3
                    calls = [(name, {**args, key: bad}), *calls[1:]]
                text = "\n".join(
                    f"<tool_call>\n{json.dumps({'name': n, 'arguments': a})}\n</tool_call>"
                    for n, a in calls
                )
                rows.append((category, question, truth, text))
    return rows


def bfcl_item_maker(
    rows: list[tuple[str, dict[str, Any], list[dict[str, Any]], str]],
) -> Callable[[int], dict[str, Any]]:
    from referee.client.grader_specs import tool_calls_from_value

    references = [tool_calls_from_value(truth) for _c, _q, truth, _t in rows]

    def item(i: int) -> dict[str, Any]:
        # the entry's function documents as `tools`, as the trainer adapters pass a BFCL row's
        # `function` column: the calls are checked against them as BFCL's checker does
        row = rows[i % len(rows)]
        grader = {
            "type": "tool_call",
            "reference": references[i % len(rows)],
            "tools": row[1]["function"],
        }
        return {"id": str(i), "response": row[3], "grader": grader}

    return item


def bfcl_peer(rows: list[tuple[str, dict[str, Any], list[dict[str, Any]], str]]) -> Peer:
    checker = _bfcl().checker()
    python = checker.Language.PYTHON

    def score(i: int) -> float:
        category, question, truth, text = rows[i % len(rows)]
        try:
            calls = [json.loads(b) for b in _HERMES.findall(text)]
            output = [{c["name"]: c["arguments"]} for c in calls]
        except (ValueError, KeyError, TypeError):
            return 0.0
        verdict = checker.ast_checker(question["function"], output, truth, python, category, "m")
        return float(verdict["valid"])

    return score


# --- measuring ---------------------------------------------------------------------------

Peer = Callable[[int], float]


ROUNDS = 7


def in_process(score: Peer, n: int) -> tuple[float, list[float]]:
    """One round of the peer: items/s and the scores."""
    start = time.perf_counter()
    scores = [score(i) for i in range(n)]
    return n / (time.perf_counter() - start), scores


def over_http(
    url: str, make: Callable[[int], dict[str, Any]], n: int, batch: int, peer: Callable[[], Any]
) -> tuple[float, list[float], float, list[float]]:
    """The fastest of ``ROUNDS`` rounds of referee (items/s, scores) and of ``peer`` (one round
    of it: items/s, scores), taken in turns: this machine's speed drifts by as much as 2x within
    a minute (a shared host), and rounds in turns see the same drift on both sides."""
    # the bodies are encoded before the clock starts, as the peer's inputs are ready before
    # its clock starts: a trainer builds them on its own cores, which here would be the
    # server's (2 in all); decoding the answers is timed
    bodies = {
        first: json.dumps({"items": [make(i) for i in range(first, min(first + batch, n))]})
        for first in range(0, n, batch)
    }
    headers = {"content-type": "application/json"}
    client = thread_clients(url, timeout=600)

    def post(first: int) -> list[float]:
        resp = client().post("/v1/rewards", content=bodies[first], headers=headers)
        resp.raise_for_status()
        return [r["score"] or 0.0 for r in resp.json()["rewards"]]

    ours = theirs = 0.0
    our_scores: list[float] = []
    their_scores: list[float] = []
    # one set of client threads for every round: each makes its httpx client (an SSL context,
    # ~35 ms of CPU) once, in the warm-up, not on a round's clock
    with ThreadPoolExecutor(CLIENTS) as pool:
        # warm-up, one post per thread: builds the database, starts the sandbox, warms the pool
        barrier = threading.Barrier(CLIENTS)
        list(pool.map(lambda _k: (barrier.wait(), post(0)), range(CLIENTS)))
        peer()  # the peer's warm-up
        for _ in range(ROUNDS):
            start = time.perf_counter()
            our_scores = [s for part in pool.map(post, range(0, n, batch)) for s in part]
            ours = max(ours, n / (time.perf_counter() - start))
            rate, their_scores = peer()
            theirs = max(theirs, rate)
    return ours, our_scores, theirs, their_scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a tiny run")
    parser.add_argument("--items", type=int, default=2000, help="items per grader (sql, tool)")
    parser.add_argument("--python-items", type=int, default=200, help="python grader items")
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--out", type=Path, default=OUT, help="output folder")
    args = parser.parse_args()
    n, n_py, batch = (20, 6, 10) if args.quick else (args.items, args.python_items, args.batch)
    rows = bfcl_rows()
    folder = Path(tempfile.mkdtemp(prefix="referee-bench-sql-"))
    database = folder / "singers.sqlite"
    with sqlite3.connect(database) as conn:
        conn.executescript(SETUP)
    conn.close()
    graders: list[tuple[str, Callable[[int], dict[str, Any]], Peer, str, int]] = [
        ("sql", sql_item, peer_sql(), "sqlite3", n),
        ("sql (database file)", sql_file_item, peer_sql(database), "sqlite3", n),
        ("tool_call", tool_item, peer_tool(), "json ==", n),
        ("tool_call (BFCL)", bfcl_item_maker(rows), bfcl_peer(rows), "BFCL ast_checker", n),
        ("python", python_item, peer_python(), "exec in-process", n_py),
        ("answer_match", answer_item, peer_answer(), "veRL search_r1_like_qa_em", n),
    ]
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        # the server an operator gets: its default check workers and sandbox slots
        env = {"REFEREE_SQL_DATABASES_DIR": str(folder)}
        server = start_referee(env, log=Path(tmp) / "server.log")
        try:
            for name, make, peer, peer_name, count in graders:
                ours, our_scores, theirs, their_scores = over_http(
                    server.url, make, count, batch, functools.partial(in_process, peer, count)
                )
                same = sum(a == b for a, b in zip(our_scores, their_scores, strict=True)) / count
                if name != "tool_call (BFCL)" and sum(our_scores) != count // 2 + count % 2:
                    raise RuntimeError(f"{name}: referee scored {sum(our_scores)} of {count}")
                results.append((name, count, ours, peer_name, theirs, same))
                print(f"{name:20} referee {ours:10.1f} items/s   peer {theirs:10.1f} items/s")
        finally:
            server.stop()
            shutil.rmtree(folder, ignore_errors=True)
    lines = [
        "# sql, tool_call, python and answer_match graders: /v1/rewards against the peer "
        "in-process",
        "",
        f"{CLIENTS} client threads, batches of {batch}; the peers run in one thread here. The "
        f"fastest of {ROUNDS} rounds each, referee's and the peer's taken in turns (the "
        "machine's speed drifts), on 2 CPUs.",
        "",
        "| grader | items | referee items/s | peer | peer items/s | ratio | same verdicts |",
        "|---|---:|---:|---|---:|---:|---:|",
    ]
    for name, count, ours, peer_name, theirs, same in results:
        lines.append(
            f"| {name} | {count} | {ours:,.1f} | {peer_name} | {theirs:,.1f} | "
            f"{ours / theirs:.2f}x | {same:.1%} |"
        )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "verifiers_exec.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out / 'verifiers_exec.md'}")


if __name__ == "__main__":
    main()
