"""OpenAI's multi/score_model/label_model objects: validation, the safe formula evaluator and
their mapping onto referee's graders."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError
from trained_judge import OPENAI_GRADERS

from referee.client.models import RewardItem
from referee.services.scoring.openai import lower, render_template
from referee.verifiers.formula import evaluate
from referee.verifiers.registry import score_item


def item(grader: dict[str, Any], response: str = "Paris") -> RewardItem:
    return RewardItem.model_validate({"id": "1", "response": response, "grader": grader})


@pytest.mark.parametrize(
    ("formula", "names", "expected"),
    [
        ("0.5 * a + 0.5 * b", {"a": 1, "b": 0}, 0.5),
        ("(a + b) / 2", {"a": 1, "b": 0.5}, 0.75),
        ("a ^ 2", {"a": 0.5}, 0.25),
        ("a ** 2", {"a": 0.5}, 0.25),
        ("max(a, b, 0.1)", {"a": 0, "b": 0}, 0.1),
        ("min(1, abs(-a))", {"a": 3}, 1.0),
        ("floor(a * 10) / 10", {"a": 0.87}, 0.8),
        ("ceil(a)", {"a": 0.2}, 1.0),
        ("sqrt(a) + log(exp(b))", {"a": 0.25, "b": 0.25}, 0.75),
        ("-a + 1", {"a": 0.25}, 0.75),
    ],
)
def test_formula_values(formula: str, names: dict[str, float], expected: float) -> None:
    assert evaluate(formula, names) == pytest.approx(expected)


@pytest.mark.parametrize(
    "formula",
    [
        "__import__('os').system('true')",
        "a.__class__",
        "[a for a in b]",
        "a if b else 1",
        "lambda: 1",
        "open('/etc/passwd')",
        "a < b",
        "'x' * 9",
        "9 ^ 9 ^ 9 ^ 9",  # a power tower is refused, not computed
        "a / 0",
        "log(0)",
        "q + 1",  # an unknown name
    ],
)
def test_formula_refuses(formula: str) -> None:
    with pytest.raises(ValueError):
        evaluate(formula, {"a": 1.0, "b": 0.0})


def test_multi_validation_says_what_is_wrong() -> None:
    inner = {"a": {"type": "string_check", "reference": "Paris"}}
    with pytest.raises(ValidationError, match="not one of the graders"):
        item({"type": "multi", "graders": inner, "calculate_output": "a + b"})
    with pytest.raises(ValidationError, match="calls only"):
        item({"type": "multi", "graders": inner, "calculate_output": "eval(a)"})
    with pytest.raises(ValidationError, match="passing_labels"):
        item(
            {
                "type": "label_model",
                "input": [{"role": "user", "content": "x"}],
                "labels": ["good", "bad"],
                "passing_labels": ["great"],
            }
        )


def test_multi_is_scored_by_its_formula() -> None:
    spec = {
        "type": "multi",
        "name": "capital",
        "graders": {
            "exact": {"type": "string_check", "reference": "Paris", "operation": "eq"},
            "loose": {"type": "string_check", "reference": "paris", "operation": "ilike"},
        },
        "calculate_output": "0.75 * exact + 0.25 * loose",
    }
    lowered = lower(item(spec).grader.model_dump())
    assert lowered["type"] == "weighted" and lowered["formula"] == spec["calculate_output"]
    score, details = score_item(lowered, "Paris")
    assert score == 1.0 and details["outcome"] == "multi"
    score, details = score_item(lowered, "It is PARIS")
    assert score == 0.25
    assert [p["name"] for p in details["parts"]] == ["exact", "loose"]


def test_a_formula_that_cannot_be_computed_is_invalid() -> None:
    spec = {
        "type": "multi",
        "graders": {"a": {"type": "string_check", "reference": "Paris"}},
        "calculate_output": "1 / a",
    }
    score, details = score_item(lower(item(spec).grader.model_dump()), "London")
    assert score is None and details["valid"] is False and "calculate_output" in details["reason"]


def test_model_graders_map_onto_rubric_judges() -> None:
    messages = [
        {"role": "system", "content": "Rate how well the answer names {{ item.city }}."},
        {"role": "user", "content": "Answer: {{sample.output_text}}"},
    ]
    # the judge tests' score_model (range 0-10), with a prompt and an item of its own
    spec = {**OPENAI_GRADERS["score_model"], "input": messages, "item": {"city": "Paris"}}
    score_model = item(spec).grader.model_dump()
    lowered = lower(score_model)
    rubric = lowered["graders"][0]["grader"]
    assert (rubric["type"], rubric["mode"]) == ("rubric", "implicit")
    assert "names Paris" in rubric["criteria"][0]["text"]
    assert lowered["openai"]["model"] == "gpt-4o-2024-08-06"
    # the judge's 0-1 rating is scaled to the grader's range
    judged = {**lowered, "graders": [{**lowered["graders"][0], "grader": precomputed(0.5)}]}
    assert score_item(judged, "Paris")[0] == 5.0

    label = lower(
        item(
            {
                "type": "label_model",
                "input": messages,
                "labels": ["correct", "incorrect"],
                "passing_labels": ["correct"],
            }
        ).grader.model_dump()
    )
    rubric = label["graders"][0]["grader"]
    assert (rubric["type"], rubric["mode"]) == ("rubric", "explicit")
    assert "passing labels: correct" in rubric["criteria"][0]["text"]


def precomputed(score: float | None) -> dict[str, Any]:
    return {"type": "precomputed", "of": "rubric", "score": score, "details": {}}


def test_templates() -> None:
    row = {"a": {"b": [1, {"c": "deep"}]}, "n": 3}
    assert render_template("{{item.a.b[1].c}} {{ item.n }}", row, "R") == "deep 3"
    assert render_template("{{sample.output_text}}", row, "R") == "R"
    assert render_template("{{item.missing}}", row, "R") == "{{item.missing}}"


def test_hostile_formulas_end_as_errors_or_values() -> None:
    with pytest.raises(ValidationError, match="does not parse"):
        item(
            {
                "type": "multi",
                "graders": {"a": {"type": "string_check", "reference": "x"}},
                "calculate_output": "(" * 999 + "a" + ")" * 999,
            }
        )
    try:  # deep unary chains: a value, or a clear error, never a crash
        assert evaluate("-" * 1999 + "a", {"a": 1.0}) == -1.0
    except ValueError as exc:
        assert "deeply" in str(exc)
    with pytest.raises(ValueError, match=r"not finite|cannot be computed|math error"):
        evaluate("exp(a * 1000)", {"a": 1.0})


def test_a_trainers_row_becomes_the_item() -> None:
    from referee.client.grader_specs import fill_item

    row = {"answer": "42", "grader": {"type": "python"}}
    spec = {
        "type": "multi",
        "graders": {
            "code": {"type": "python", "source": "def grade(s, i): return 1.0"},
            "judge": {"type": "score_model", "input": [{"role": "user", "content": "x"}]},
            "own": {"type": "python", "source": "def grade(s, i): return 1.0", "item": {"a": 1}},
        },
        "calculate_output": "code",
    }
    filled = fill_item(spec, row)["graders"]
    assert filled["code"]["item"] == {"answer": "42"}  # the grader column is not part of it
    assert filled["judge"]["item"] == {"answer": "42"}
    assert filled["own"]["item"] == {"a": 1}


def test_python_graders_spread_over_the_sandbox_slots() -> None:
    """One source's responses go to the slots in equal jobs (one sandbox start each), no job
    under 32 responses (a start is shared) nor over 256 (a slot is not held for long)."""
    from referee.services.scoring.python import _group_size

    assert _group_size(200, 2) == 100
    assert _group_size(201, 2) == 101
    assert _group_size(10, 2) == 32
    assert _group_size(10_000, 2) == 256
    assert _group_size(100, 0) == 100
