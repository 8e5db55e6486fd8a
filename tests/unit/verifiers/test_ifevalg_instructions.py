"""The 29 instruction ids open-instruct's IFEvalG adds to IFEval's (the IF data of OLMo 2 and
later) against open-instruct's own verdicts.

open-instruct is not on PyPI, so its checkers cannot be loaded here; their verdicts were recorded
by running its ``open_instruct/IFEvalG`` code (``tests/ifevalg_verdicts.py``, the commit in the
file's first line) on 1,740 responses, 30 followed and 30 not for each id. Every verdict through
referee's grader, from the row as open-instruct's data gives it, must equal open-instruct's.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from referee.client.grader_specs import fill_grader
from referee.client.instruction_specs import IFEVALG_IDS
from referee.client.models import RewardItem
from referee.verifiers.instructions import check_instructions
from referee.verifiers.instructions.ifevalg import split_into_sentences
from referee.verifiers.instructions.tulu import pair_spans
from referee.verifiers.registry import score_item

VERDICTS = Path(__file__).parents[2] / "data" / "ifevalg_verdicts.jsonl"


def _grader(spec: Any) -> dict[str, Any]:
    return RewardItem.model_validate(
        {"id": "x", "response": "r", "grader": spec}
    ).grader.model_dump()


def _row(ids: list[str], kwargs: list[dict[str, Any] | None]) -> str:
    """open-instruct's ground truth: ``str()`` of a one-item list (single quotes, None)."""
    return str([{"instruction_id": ids, "kwargs": kwargs}])


def test_every_verdict_equals_open_instructs() -> None:
    lines = VERDICTS.read_text().splitlines()
    header, rows = json.loads(lines[0]), [json.loads(line) for line in lines[1:]]
    assert len(header["open_instruct_commit"]) == 40 and header["rows"] == len(rows)
    assert {r["id"] for r in rows} == set(IFEVALG_IDS)
    wrong = []
    for row in rows:
        grader = _grader(
            fill_grader({"type": "instruction_following"}, _row([row["id"]], [row["kwargs"]]))
        )
        score, details = score_item(grader, row["response"])
        if details["instructions"][0]["followed"] != row["followed"]:
            wrong.append((row["id"], row["kwargs"], row["response"][:120], row["followed"]))
        assert score == float(details["instructions"][0]["followed"])
    assert wrong == []
    assert sum(r["followed"] for r in rows) == len(rows) // 2


def test_a_row_of_several_ids_scores_the_fraction_followed() -> None:
    label = _row(
        ["punctuation:no_comma", "keywords:palindrome", "first_word:first_word_answer"],
        [None, None, {"first_word": "Sure"}],
    )
    grader = _grader(fill_grader({"type": "instruction_following"}, label))
    score, details = score_item(grader, "<think>Okay, so.</think>Sure a level road")
    assert score == 1.0 and details["followed"] == 3
    score, details = score_item(grader, "No, a road")
    assert score == pytest.approx(1 / 3)
    assert [v["followed"] for v in details["instructions"]] == [False, True, False]


@pytest.mark.parametrize(
    ("label", "message"),
    [
        (_row(["keywords:word_once"], [None]), "needs the kwarg 'keyword'"),
        (_row(["copy:copying_multiple"], [{"prompt_to_repeat": "x", "N": 0}]), "N must be"),
        (_row(["letters:letter_counting"], [{"N": 3, "relation": "around"}]), "relation must"),
        (_row(["count:word_count_range"], [None]), "unknown instruction id"),
    ],
)
def test_bad_kwargs_are_refused_with_a_reason(label: str, message: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(message)):
        _grader(fill_grader({"type": "instruction_following"}, label))


def test_a_word_given_as_a_list_is_its_first_item() -> None:
    label = _row(["first_word:first_word_sent"], [{"first_word": ["the", "a"]}])
    grader = _grader(fill_grader({"type": "instruction_following"}, label))
    assert grader["instructions"][0]["kwargs"] == {"first_word": "the"}
    assert score_item(grader, "The cat sat. the dog ran.")[0] == 1.0


def test_keywords_are_literal_text() -> None:
    # IFEvalG passes the keyword to `re`: "c.t" would match "cat"; here it is the text "c.t"
    spec = [{"id": "keywords:word_once", "kwargs": {"keyword": "c.t"}}]
    assert check_instructions("a cat", spec).verdicts[0]["followed"] is False
    assert check_instructions("a c.t", spec).verdicts[0]["followed"] is True


def test_pair_spans_equal_the_lazy_pattern() -> None:
    rng = random.Random(3)
    alphabet = ["a ", " b", "a", "b", " ", "\n", "x"]
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14)))
        want = [m.span() for m in re.finditer(r"a .*? b", text)]
        assert pair_spans(text, "a ", " b") == want, repr(text)


def test_the_sentence_splitter_on_ifevals_cases() -> None:
    assert split_into_sentences("Mr. Smith went home. Dr. Who? Yes!") == [
        "Mr. Smith went home.",
        "Dr. Who?",
        "Yes!",
    ]
    assert split_into_sentences("Pi is 3.14 and e.g. this... Then more.") == [
        "Pi is 3.14 and e.g. this...",
        "Then more.",
    ]
    assert split_into_sentences("") == []


@pytest.mark.parametrize(
    "hostile",
    ["the " * 500_000, "the\n" * 500_000, "- " * 700_000, "<<a " * 300_000, "." * 1_000_000],
)
def test_hostile_answers_are_checked_in_one_pass(hostile: str) -> None:
    instructions = [
        {"id": "copy:repeat_phrase", "kwargs": {"phrase": "the quick fox", "small_n": 2}},
        {"id": "detectable_format:sentence_hyphens", "kwargs": {}},
        {"id": "detectable_format:bigram_wrapping", "kwargs": {}},
        {"id": "first_word:first_word_sent", "kwargs": {"first_word": "the"}},
        {"id": "keywords:no_adjacent_consecutive", "kwargs": {}},
    ]
    result = check_instructions(hostile, instructions)
    assert len(result.verdicts) == len(instructions)
    assert result.verdicts[0]["followed"] is False
