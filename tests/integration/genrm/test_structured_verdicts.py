"""Judges that constrain their verdict with structured outputs (``structured=True``).

The constraint travels from the judges through the ``openai`` backend to referee's test
OpenAI-compatible server (the real app serving a tiny transformers judge taught its verdicts,
tests/trained_judge.py, in-process over ASGI):
in ``ignore`` mode the server takes the field and says it ignored it; in ``reject`` mode it answers
400 like a server that predates ``structured_outputs``, and the backend asks again without it.
vLLM enforcing the constraint is tested in tests/gpu."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
from trained_judge import CRITERIA, QUESTION, RIGHT, WRONG

from referee.genrm.backend import Completion, Prompt, SamplingParams, StructuredOutput
from referee.genrm.judges import (
    VERDICT_REGEX,
    Criterion,
    JudgeItem,
    judge_pairwise,
    judge_pointwise,
    judge_rubric,
)
from referee.genrm.openai_backend import OpenAIBackend
from referee.genrm.openai_server import create_app
from referee.genrm.transformers_backend import TransformersBackend
from referee.genrm.verdicts import parse_choice, parse_score, parse_yes_no

ITEMS = [JudgeItem("What is 2 + 2?", "4", reference="4"), JudgeItem("What is 2 + 3?", "6")]


@pytest.mark.parametrize(
    ("kind", "text", "verdict"),
    [
        ("yes_no", "The sum is right.\n[RESULT] Yes", True),
        ("yes_no", "[RESULT] No", False),
        ("score", "Mostly right, one slip.\n[RESULT] 7", 7.0),
        ("score", "Perfect.\n[RESULT] 10", 10.0),
        ("choice", "B shows its work.\n[RESULT] B", "B"),
        ("choice", "Both equal.\n[RESULT] tie", "tie"),
    ],
)
def test_constrained_outputs_parse(kind: str, text: str, verdict: object) -> None:
    assert re.fullmatch(VERDICT_REGEX[kind], text)
    parsed = {
        "yes_no": parse_yes_no,
        "score": lambda t: parse_score(t, 1, 10),
        "choice": lambda t: parse_choice(t, ("A", "B")),
    }[kind](text)
    assert parsed == verdict


@pytest.mark.parametrize(
    "text", ["[RESULT] Maybe", "[RESULT] 11", "rationale [x] [RESULT] Yes", "[RESULT] yes"]
)
def test_constraint_excludes_other_outputs(text: str) -> None:
    assert not any(re.fullmatch(p, text) for p in VERDICT_REGEX.values())


class Recording:
    """Records the sampling parameters each call carries; answers a fixed verdict."""

    name = "recording"
    model_name = "recording"

    def __init__(self, reply: str) -> None:
        self.reply = reply
        self.params: list[SamplingParams] = []

    async def generate(
        self, prompts: Sequence[Prompt], params: SamplingParams
    ) -> list[list[Completion]]:
        self.params.append(params)
        return [[Completion(text=self.reply)] * params.n for _ in prompts]

    async def close(self) -> None:
        return None


def test_each_judge_asks_for_its_verdict_constraint() -> None:
    yes, score, choice = Recording("[RESULT] Yes"), Recording("[RESULT] 7"), Recording("[RESULT] A")
    asyncio.run(judge_pointwise(yes, ITEMS, structured=True))
    asyncio.run(judge_pointwise(score, ITEMS, mode="score", structured=True))
    asyncio.run(judge_rubric(yes, ITEMS, [Criterion("correct")], structured=True))
    asyncio.run(
        judge_rubric(score, ITEMS, [Criterion("correct")], mode="implicit", structured=True)
    )
    asyncio.run(judge_pairwise(choice, "q", ["a", "b"], structured=True))
    assert [p.structured for p in yes.params] == [
        StructuredOutput("regex", VERDICT_REGEX["yes_no"])
    ] * 2
    assert [p.structured for p in score.params] == [
        StructuredOutput("regex", VERDICT_REGEX["score"])
    ] * 2
    assert choice.params[0].structured == StructuredOutput("regex", VERDICT_REGEX["choice"])
    # off by default; never with label probabilities (one token, read from its probabilities)
    plain = Recording("[RESULT] Yes")
    asyncio.run(judge_pointwise(plain, ITEMS))
    asyncio.run(judge_pointwise(plain, ITEMS, label_probs=True, structured=True))
    assert [p.structured for p in plain.params] == [None, None]


def _backend(app: Any) -> OpenAIBackend:
    return OpenAIBackend(
        "http://tiny.test/v1", "tiny-llama", concurrency=4, transport=httpx.ASGITransport(app=app)
    )


async def _stats(backend: OpenAIBackend) -> dict[str, int]:
    data: dict[str, int] = (await backend._http.get("/stats")).json()
    return data


@pytest.fixture(scope="module")
def taught(taught_judge: Path) -> Any:
    return TransformersBackend.from_pretrained(str(taught_judge))


TAUGHT_ITEMS = [JudgeItem(QUESTION, RIGHT, reference="4"), JudgeItem(QUESTION, WRONG, "4")]
TAUGHT_CRITERIA = [Criterion(c["text"], c["weight"]) for c in CRITERIA]


def test_structured_request_reaches_a_server_that_ignores_it(taught: Any) -> None:
    async def run() -> tuple[Any, Any, dict[str, int]]:
        backend = _backend(create_app(taught))
        try:
            pointwise = await judge_pointwise(backend, TAUGHT_ITEMS, structured=True)
            rubric = await judge_rubric(
                backend, [JudgeItem(QUESTION, RIGHT)], TAUGHT_CRITERIA, structured=True
            )
            return pointwise, rubric, await _stats(backend)
        finally:
            await backend.close()

    pointwise, rubric, stats = asyncio.run(run())
    assert stats["structured"] == 5 and stats["rejected"] == 0  # 2 pointwise + 3 criteria
    # the taught judge's verdicts, read as without the constraint
    assert [r.score for r in pointwise] == [1.0, 0.0]
    assert [r.score for r in rubric] == [0.25]


def test_server_refusing_structured_outputs_falls_back_to_plain_requests(taught: Any) -> None:
    async def run() -> tuple[Any, dict[str, int], bool]:
        backend = _backend(create_app(taught, structured="reject"))
        try:
            results = await judge_pointwise(backend, TAUGHT_ITEMS, structured=True)
            again = await judge_pointwise(backend, TAUGHT_ITEMS, structured=True)
            return results + again, await _stats(backend), backend.structured_supported
        finally:
            await backend.close()

    results, stats, supported = asyncio.run(run())
    assert not supported  # remembered: later requests go plain
    assert 1 <= stats["rejected"] <= len(TAUGHT_ITEMS)  # only the first wave carried the field
    assert stats["structured"] == stats["rejected"]
    assert [r.score for r in results] == [1.0, 0.0, 1.0, 0.0]  # every item answered, plainly


def test_grader_option_reaches_the_backend() -> None:
    from referee.client.models import GenRMGrader, RewardItem, RubricCriterion, RubricGrader
    from referee.services.scoring.judge import resolve_judge_leaves

    graders = [
        GenRMGrader(structured_verdict=True),
        RubricGrader(criteria=[RubricCriterion(text="correct")], structured_verdict=True),
        GenRMGrader(),
    ]
    items = [RewardItem(id=str(k), response="4", grader=g) for k, g in enumerate(graders)]
    backend = Recording("[RESULT] Yes")
    resolved = asyncio.run(resolve_judge_leaves([g.model_dump() for g in graders], items, backend))
    assert [r["score"] for r in resolved] == [1.0, 1.0, 1.0]
    constrained = [p.structured is not None for p in backend.params]
    assert sorted(constrained) == [False, True, True]  # three calls: the option splits groups
