"""The scoring pipeline below HTTP: a batch of reward items scored by the ``Scorer`` with a real
check pool (worker processes) and a real sandbox executor (bubblewrap), no server, no routes.

What is checked: math verdicts and their details; code items run in the sandbox beside math
items of the same batch; weighted sums across the two; a group grader (majority vote, the
length penalty over its inner grader); per-group statistics; deadlines (a math check that
overruns costs that item alone, a program that loops is stopped at its time limit, procedural
items get their own least deadline); a batch with code and no sandbox is refused as a whole.

All of it goes through ``score`` below: a ``Scorer`` over the module's pool and sandbox, its
settings those of the test.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from grader_cases import ALL_RIGHT, ALL_RIGHT_SCORES, penalised_group, weighted

from referee.client.errors import ServiceUnavailable
from referee.client.models import RewardItem, RewardsResponse
from referee.services.execution.slots import SandboxExecutor
from referee.services.scoring.scorer import Scorer
from referee.services.settings import Settings
from referee.verifiers import CheckPool

MATH_TIMEOUT_S = 2.0
# Passes every guard, but sympy tries to integrate it symbolically for minutes.
SLOW = "\\boxed{\\int_0^1 \\frac{\\ln(1+x^{5})}{1+x^{3}} dx}"
ADD = "a, b = map(int, input().split())\nprint(a + b)\n"
STDIO = [{"stdin": "1 2\n", "stdout": "3\n"}, {"stdin": "40 2\n", "stdout": "42\n"}]


@pytest.fixture(scope="module")
def pool() -> Iterator[CheckPool]:
    with CheckPool(workers=2, timeout_s=MATH_TIMEOUT_S) as p:
        yield p


@pytest.fixture(scope="module")
def sandbox() -> Iterator[SandboxExecutor]:
    executor = SandboxExecutor(Settings(sandbox_slots=2, sandbox_time_s=2.0))
    executor.start()
    # bubblewrap is required here, as in tests/integration/sandbox (CI installs it)
    assert executor.backend is not None, executor.unavailable_reason
    yield executor
    executor.close()


def score(
    pool: CheckPool,
    items: list[dict[str, Any]],
    sandbox: SandboxExecutor | None = None,
    *,
    timeout_s: float = MATH_TIMEOUT_S,
    procedural_timeout_s: float | None = None,
) -> RewardsResponse:
    batch = [RewardItem.model_validate(item) for item in items]
    settings = Settings(
        math_timeout_s=timeout_s,
        **({} if procedural_timeout_s is None else {"procedural_timeout_s": procedural_timeout_s}),
    )
    return asyncio.run(Scorer(settings, pool, sandbox=sandbox).score(batch))


def math_item(item_id: str, response: str, reference: str, **extra: Any) -> dict[str, Any]:
    grader = {"type": "math", "reference": reference}
    return {"id": item_id, "response": response, "grader": grader, **extra}


def code_item(item_id: str, program: str, **grader: Any) -> dict[str, Any]:
    response = f"Here it is.\n\n```python\n{program}```\n"
    spec = {"type": "code", "language": "python", "tests": STDIO, **grader}
    return {"id": item_id, "response": response, "grader": spec}


def test_math_verdicts_in_order_with_their_details(pool: CheckPool) -> None:
    out = score(
        pool,
        [
            math_item("half", "so it is \\boxed{\\frac{1}{2}}", "0.5"),
            math_item("wrong", "\\boxed{3}", "4"),
            math_item("none", "I cannot say.", "4"),
            math_item("sym", "\\boxed{(x+1)^2}", "x^2+2x+1"),
        ],
    )
    assert [r.id for r in out.rewards] == ["half", "wrong", "none", "sym"]
    assert [r.score for r in out.rewards] == [1.0, 0.0, 0.0, 1.0]
    assert out.rewards[0].details["outcome"] == "correct"
    assert out.rewards[1].details["outcome"] == "wrong"
    assert out.rewards[2].details["outcome"] != "correct"
    assert out.mean == pytest.approx(0.5)
    assert out.groups == []


def test_group_statistics(pool: CheckPool) -> None:
    items = [
        math_item("a0", "\\boxed{4}", "4", group="a"),
        math_item("a1", "\\boxed{5}", "4", group="a"),
        math_item("b0", "\\boxed{4}", "4", group="b"),
        math_item("b1", "\\boxed{2+2}", "4", group="b"),
        math_item("loose", "\\boxed{4}", "4"),
    ]
    groups = {g.group: g for g in score(pool, items).groups}
    assert set(groups) == {"a", "b"}
    assert (groups["a"].n, groups["a"].pass_rate, groups["a"].mean) == (2, 0.5, 0.5)
    assert groups["a"].std == pytest.approx(0.5)
    assert groups["b"].all_pass and not groups["b"].all_fail
    assert not groups["a"].all_pass and not groups["a"].all_fail


def test_code_runs_in_the_sandbox_beside_math(pool: CheckPool, sandbox: SandboxExecutor) -> None:
    wrong = "a, b = map(int, input().split())\nprint(a - b)\n"
    out = score(
        pool,
        [
            code_item("ok", ADD),
            math_item("m", "\\boxed{4}", "4"),
            code_item("wrong", wrong),
            code_item(
                "aon", "a, b = map(int, input().split())\nprint(3)\n", reward="all_or_nothing"
            ),
        ],
        sandbox,
    )
    by_id = {r.id: r for r in out.rewards}
    assert [r.id for r in out.rewards] == ["ok", "m", "wrong", "aon"]
    assert by_id["ok"].score == 1.0 and by_id["ok"].details["passed"] == 2
    assert [t["outcome"] for t in by_id["ok"].details["tests"]] == ["passed", "passed"]
    assert by_id["m"].score == 1.0
    assert by_id["wrong"].score == 0.0
    assert by_id["aon"].score == 0.0 and by_id["aon"].details["passed"] == 1


def test_a_response_without_a_program_scores_zero(
    pool: CheckPool, sandbox: SandboxExecutor
) -> None:
    item = {"id": "x", "response": "no code here", "grader": code_item("x", ADD)["grader"]}
    (result,) = score(pool, [item], sandbox).rewards
    assert result.score == 0.0 and result.details["outcome"] == "no_code"


def test_weighted_sums_math_code_and_format(pool: CheckPool, sandbox: SandboxExecutor) -> None:
    grader = weighted(
        (2.0, {"type": "math", "reference": "4"}),
        (1.0, {"type": "code", "language": "python", "tests": STDIO}),
        (1.0, {"type": "format", "pattern": "think"}),
    )
    program = f"```python\n{ADD}```\n\n"
    right = f"<think>2+2</think>\n\n{program}so \\boxed{{4}}"
    wrong_math = f"{program}so \\boxed{{5}}"
    out = score(
        pool,
        [
            {"id": "all", "response": right, "grader": grader},
            {"id": "code-only", "response": wrong_math, "grader": grader},
        ],
        sandbox,
    )
    assert out.rewards[0].score == pytest.approx(1.0)
    assert out.rewards[1].score == pytest.approx(1 / 4)


def test_majority_vote_per_group(pool: CheckPool) -> None:
    answers = ["\\boxed{0.5}", "\\boxed{1/2}", "\\boxed{2}", "no answer"]
    items = [
        {"id": f"v{k}", "response": a, "grader": {"type": "majority_vote"}, "group": "g"}
        for k, a in enumerate(answers)
    ]
    out = score(pool, items)
    assert [r.score for r in out.rewards] == [1.0, 1.0, 0.0, 0.0]
    assert out.rewards[0].details["outcome"] == "majority"
    assert out.rewards[2].details["outcome"] == "minority"


def test_length_penalty_scores_its_inner_grader_first(pool: CheckPool) -> None:
    out = score(pool, penalised_group("g", ALL_RIGHT))
    assert [r.score for r in out.rewards] == pytest.approx(ALL_RIGHT_SCORES)
    assert out.rewards[1].details["inner"]["outcome"] == "correct"


@pytest.mark.slow  # about 1 s: a check held to its deadline
def test_an_overrunning_check_costs_its_item_alone(pool: CheckPool) -> None:
    out = score(
        pool,
        [
            math_item("slow", SLOW, "1"),
            math_item("fast", "\\boxed{4}", "4"),
            math_item("fast2", "\\boxed{7}", "7"),
        ],
        timeout_s=1.0,
    )
    slow, fast, fast2 = out.rewards
    assert slow.score == 0.0 and slow.details["outcome"] == "timeout"
    assert "1 s" in slow.details["error"]
    assert fast.score == 1.0 and fast2.score == 1.0
    # the pool is usable again afterwards (the overrunning worker was replaced)
    again = score(pool, [math_item("after", "\\boxed{4}", "4")])
    assert again.rewards[0].score == 1.0


@pytest.mark.slow  # about 1 s: a program held to its time limit
def test_a_looping_program_is_stopped_at_its_time_limit(
    pool: CheckPool, sandbox: SandboxExecutor
) -> None:
    out = score(
        pool, [code_item("loop", "while True:\n    pass\n", limits={"time_s": 0.5})], sandbox
    )
    (loop,) = out.rewards
    assert loop.score == 0.0
    assert [t["outcome"] for t in loop.details["tests"]] == ["time_limit", "time_limit"]


def test_procedural_items_get_their_least_deadline(pool: CheckPool) -> None:
    """A procedural item's deadline is at least ``procedural_timeout_s``, however small the math
    deadline: a right answer to a generated problem scores 1 with a math deadline of 1 ms."""
    from referee.verifiers import procedural

    (problem,) = procedural.generate("basic_arithmetic", {}, seed=3, n=1)
    grader = {"type": "procedural", "task": "basic_arithmetic", "entry": problem["entry"]}
    item = {"id": "p", "response": f"\\boxed{{{problem['answer']}}}", "grader": grader}
    # starved first: a worker that has scored a procedural item may score one in under 1 ms
    starved = score(pool, [item], timeout_s=0.001, procedural_timeout_s=0.001)
    assert starved.rewards[0].details["outcome"] == "timeout"
    out = score(pool, [item], timeout_s=0.001, procedural_timeout_s=30.0)
    assert out.rewards[0].score == 1.0, out.rewards[0].details


def test_code_without_a_sandbox_refuses_the_batch(pool: CheckPool) -> None:
    with pytest.raises(ServiceUnavailable, match="code execution is not enabled"):
        score(pool, [math_item("m", "\\boxed{4}", "4"), code_item("c", ADD)], None)


def test_requests_jobs_and_the_inner_batch_honour_the_procedural_deadline() -> None:
    """The Scorer's two entry points (a request's batch, a job's chunk) and the inner batch of
    length_penalty all take their deadlines from the settings (tests/procedural_deadline.py;
    a pool of its own, whose workers have scored no procedural item)."""
    import procedural_deadline as deadline

    settings = Settings(math_timeout_s=0.0005, procedural_timeout_s=0.001)
    batch = [RewardItem.model_validate(item) for item in deadline.items()]
    with CheckPool(workers=1, timeout_s=MATH_TIMEOUT_S) as cold:
        scorer = Scorer(settings, cold)
        deadline.assert_honoured(asyncio.run(scorer.score(batch)).rewards)
        deadline.assert_honoured(asyncio.run(scorer.score_job_chunk(batch, 1.0)).rewards)
