"""Monte Carlo PRM bookkeeping: step splitting, step values, the first wrong step in both modes,
rollout counts, shared prefixes, the cache, token-level rewards."""

from __future__ import annotations

import asyncio
import math
import random

import pytest
from chain_policy import ChainPolicy, make_problem, make_solution

from referee.genrm.prm import MemoryRolloutCache, MonteCarloPRM, PRMConfig, PRMInput
from referee.genrm.steps import (
    MAX_STEPS,
    split_steps,
    token_rewards,
    token_rewards_from_offsets,
)

OPS = [("+", 4), ("*", 2), ("-", 5), ("+", 9), ("*", 3), ("-", 1), ("+", 2)]


def _answer(start: int, ops: list[tuple[str, int]]) -> str:
    value = start
    for op, arg in ops:
        value = value + arg if op == "+" else value - arg if op == "-" else value * arg
    return str(value)


def run(prm: MonteCarloPRM, inputs: list[PRMInput], **config: object) -> list:  # type: ignore[type-arg]
    return asyncio.run(prm.estimate(inputs, PRMConfig(**config)))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("solution", "mode", "delimiter", "expected"),
    [
        ("Step 1: a\nStep 2: b\nStep 3: c", "auto", None, ["Step 1: a", "Step 2: b", "Step 3: c"]),
        (
            "intro\nStep 1: a\nmore a\nStep 2: b",
            "auto",
            None,
            ["intro", "Step 1: a\nmore a", "Step 2: b"],
        ),
        ("## Step 1. x\n## Step 2) y", "auto", None, ["## Step 1. x", "## Step 2) y"]),
        (
            "first para\nstill\n\n  second\n\n\nthird",
            "auto",
            None,
            ["first para\nstill", "second", "third"],
        ),
        ("one\ntwo\n\nthree", "lines", None, ["one", "two", "three"]),
        ("one line only", "auto", None, ["one line only"]),
        ("a ки b ки c", "delimiter", "ки", ["a ки", "b ки", "c"]),
        ("", "auto", None, []),
        ("   \n\n  ", "auto", None, []),
    ],
)
def test_split_steps(solution: str, mode: str, delimiter: str | None, expected: list[str]) -> None:
    steps = split_steps(solution, mode, delimiter)  # type: ignore[arg-type]
    assert [s.text for s in steps] == expected
    for s in steps:  # spans are exact slices
        assert solution[s.start : s.end] == s.text
    assert [s.index for s in steps] == list(range(1, len(expected) + 1))


def test_split_caps_the_number_of_steps() -> None:
    solution = "\n".join(f"line {i}" for i in range(500))
    steps = split_steps(solution, "lines")
    assert len(steps) == MAX_STEPS
    assert steps[-1].text.endswith("line 499")


def test_split_rejects_a_missing_delimiter() -> None:
    with pytest.raises(ValueError, match="delimiter"):
        split_steps("a", "delimiter")


@pytest.mark.parametrize("wrong_at", [1, 2, 3, 5, 7])
def test_per_step_values_find_the_first_wrong_step(wrong_at: int) -> None:
    problem, solution = make_problem(3, OPS), make_solution(3, OPS, wrong_at=wrong_at)
    [res] = run(
        MonteCarloPRM(ChainPolicy()), [PRMInput(problem, solution, _answer(3, OPS))], n_rollouts=4
    )
    assert res.first_wrong_step == wrong_at
    assert not res.final_correct
    assert res.hard_labels == [1] * (wrong_at - 1) + [0] * (len(OPS) + 1 - (wrong_at - 1))
    assert res.soft_labels[: wrong_at - 1] == [1.0] * (wrong_at - 1)
    assert res.rollouts_used == 4 * len(OPS)  # every prefix but the whole solution


@pytest.mark.parametrize("wrong_at", [None, 1, 2, 3, 4, 5, 6, 7])
def test_binary_search_agrees_with_per_step_and_spends_fewer_rollouts(
    wrong_at: int | None,
) -> None:
    inp = PRMInput(make_problem(3, OPS), make_solution(3, OPS, wrong_at), _answer(3, OPS))
    [full] = run(MonteCarloPRM(ChainPolicy()), [inp], n_rollouts=4)
    [fast] = run(MonteCarloPRM(ChainPolicy()), [inp], n_rollouts=4, mode="binary_search")
    assert fast.first_wrong_step == full.first_wrong_step == wrong_at
    assert fast.hard_labels == full.hard_labels
    steps = len(OPS) + 1
    if wrong_at is None:
        assert fast.final_correct and fast.rollouts_used == 0
    else:
        assert fast.rollouts_used <= 4 * math.ceil(math.log2(steps))
        assert fast.rollouts_used < full.rollouts_used


def test_soft_values_reflect_a_noisy_policy() -> None:
    inp = PRMInput(make_problem(3, OPS), make_solution(3, OPS), _answer(3, OPS))
    [res] = run(MonteCarloPRM(ChainPolicy(noise=0.5, seed=1)), [inp], n_rollouts=64)
    values = [v for v in res.soft_labels[:-1] if v is not None]
    assert all(0.25 < v < 0.75 for v in values)  # about half the rollouts go wrong
    assert res.hard_labels == [1] * (len(OPS) + 1)


def test_identical_prefixes_are_sampled_once_and_the_cache_is_used() -> None:
    policy = ChainPolicy()
    prm = MonteCarloPRM(policy, cache=MemoryRolloutCache())
    problem, ref = make_problem(3, OPS), _answer(3, OPS)
    # two solutions that share their first three steps
    a, b = make_solution(3, OPS, wrong_at=4), make_solution(3, OPS, wrong_at=6)
    first = run(prm, [PRMInput(problem, a, ref), PRMInput(problem, b, ref)], n_rollouts=2)
    shared = 3
    assert policy.prompts_seen == 2 * len(OPS) - shared
    assert sum(r.rollouts_used for r in first) == 2 * (2 * len(OPS) - shared)
    assert sum(r.cache_hits for r in first) == shared
    again = run(prm, [PRMInput(problem, a, ref)], n_rollouts=2)
    assert again[0].rollouts_used == 0 and again[0].cache_hits == len(OPS)
    assert again[0].soft_labels == first[0].soft_labels
    # other sampling parameters are another cache entry
    other = run(prm, [PRMInput(problem, a, ref)], n_rollouts=3)
    assert other[0].rollouts_used == 3 * len(OPS)


def test_progress_reports_every_rollout() -> None:
    seen: list[int] = []
    inputs = [
        PRMInput(make_problem(s, OPS), make_solution(s, OPS, wrong_at=w), _answer(s, OPS))
        for s, w in [(1, 2), (2, None), (5, 6)]
    ]
    prm = MonteCarloPRM(ChainPolicy(), batch_prompts=4)
    results = asyncio.run(prm.estimate(inputs, PRMConfig(n_rollouts=3), progress=seen.append))
    assert sum(seen) == sum(r.rollouts_used for r in results) == 3 * 3 * len(OPS)
    assert len(seen) > 1  # reported a batch at a time


def test_many_random_chains_in_one_call() -> None:
    rng = random.Random(7)
    inputs, truth = [], []
    for _ in range(30):
        ops = [(rng.choice("+-*"), rng.randint(1, 9)) for _ in range(rng.randint(1, 9))]
        wrong = rng.choice([None, *range(1, len(ops) + 1)])
        start = rng.randint(0, 20)
        inputs.append(
            PRMInput(
                make_problem(start, ops), make_solution(start, ops, wrong), _answer(start, ops)
            )
        )
        truth.append(wrong)
    for mode in ("per_step", "binary_search"):
        results = run(MonteCarloPRM(ChainPolicy()), inputs, n_rollouts=2, mode=mode)
        assert [r.first_wrong_step for r in results] == truth


def test_config_is_validated() -> None:
    with pytest.raises(ValueError, match="n_rollouts"):
        PRMConfig(n_rollouts=0)
    with pytest.raises(ValueError, match="prefix"):
        PRMConfig(prompt_template="{problem}")


def test_token_rewards() -> None:
    assert token_rewards([0.5, 1.0, 0.0], [2, 1, 3]) == [0.0, 0.5, 1.0, 0.0, 0.0, 0.0]
    assert token_rewards([0.5, 1.0], [0, 2]) == [0.0, 1.0]
    with pytest.raises(ValueError):
        token_rewards([1.0], [1, 2])


def test_token_rewards_from_offsets() -> None:
    solution = "ab cd\nef"
    steps = split_steps(solution, "lines")
    offsets = [(0, 2), (2, 5), (5, 6), (6, 8)]  # "ab", " cd", "\n", "ef"
    assert token_rewards_from_offsets(steps, [0.25, 0.75], offsets) == [0.0, 0.25, 0.0, 0.75]
