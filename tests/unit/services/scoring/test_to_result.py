"""A verdict becomes a RewardResult without pydantic's walk over the fields
(``scoring/batch.to_result``): the model it builds is the one validation would build."""

from __future__ import annotations

from typing import Any

import pytest

from referee.client.models import RewardResult, RewardsResponse
from referee.services.scoring.batch import to_result
from referee.verifiers import TimedOut, WorkerFailed

OUTCOMES: list[Any] = [
    (1.0, {"outcome": "correct", "extracted": "42"}),
    (0, {"outcome": "wrong"}),
    (None, {"outcome": "judge_unparsable", "error": "no verdict"}),
    (0.25, [("outcome", "partial"), ("calls", [1, 2])]),  # details as pairs: made a dict
    TimedOut(2.5),
    WorkerFailed("the worker died"),
]


@pytest.mark.parametrize("outcome", OUTCOMES, ids=repr)
def test_the_result_is_the_validated_model(outcome: Any) -> None:
    made = to_result("item-7", outcome)
    dumped = made.model_dump()
    again = RewardResult.model_validate({k: v for k, v in dumped.items() if k != "valid"})
    assert made == again  # valid filled as the validator fills it
    assert made.model_dump_json() == again.model_dump_json()
    assert made.model_fields_set == set(RewardResult.model_fields)
    assert type(made.score) in (float, type(None))
    assert type(made.details) is dict
    # and it serializes inside the response as a validated one does
    response = RewardsResponse(rewards=[again], groups=[], mean=0.0, elapsed_ms=1.0)
    built = response.model_copy(update={"rewards": [made]})
    assert built.model_dump_json() == response.model_dump_json()


def test_the_model_has_nothing_the_shortcut_leaves_out() -> None:
    """The shortcut sets ``__dict__`` and the fields set; a private attribute, extra fields
    kept or a computed default would need it changed."""
    assert not RewardResult.__private_attributes__
    assert RewardResult.model_config.get("extra") == "forbid"
    made = to_result("x", (1.0, {"outcome": "correct"}))
    assert made.__pydantic_extra__ is None and made.__pydantic_private__ is None
    assert made.model_copy(update={"score": 0.5}).score == 0.5
