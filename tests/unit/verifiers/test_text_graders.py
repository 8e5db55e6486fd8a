"""The text graders on their own: similarity scores equal the metric libraries' own, the
grader specs refuse bad input with a message, and instruction checks on model-shaped outputs."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError
from rapidfuzz import fuzz
from rouge_score import rouge_scorer
from sacrebleu import sentence_bleu

from referee.client.grader_specs import fill_grader
from referee.client.models import RewardItem
from referee.verifiers.instructions import check_instructions, loose_variants
from referee.verifiers.registry import score_item
from referee.verifiers.text_similarity import METRICS, similarity

PAIRS = [
    ("The cat sat on the mat.", "The cat sat on the mat."),
    ("the cat sat on the mat", "a cat was sitting on the mat"),
    ("Paris is the capital of France.", "The capital of France is Paris."),
    ("completely unrelated words here", "the quick brown fox jumps over the lazy dog"),
    ("", "reference text"),
    ("one two three four five six seven", "one two three four five six seven eight"),
    ("Émile a mangé des crêpes à Paris.", "Émile a mangé une crêpe à Paris."),
]


def _library(response: str, reference: str, metric: str) -> float:
    if metric == "fuzzy_match":
        return float(fuzz.ratio(response, reference)) / 100
    if metric == "bleu":
        return float(sentence_bleu(response, [reference]).score) / 100
    if metric == "gleu":
        from nltk.translate.gleu_score import sentence_gleu

        return float(sentence_gleu([reference.split()], response.split()))
    kind = "rougeL" if metric == "rouge_l" else "rouge" + metric[-1]
    scorer = rouge_scorer.RougeScorer([kind], use_stemmer=False)
    return float(scorer.score(reference, response)[kind].fmeasure)


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize(("response", "reference"), PAIRS)
def test_similarity_equals_the_library(response: str, reference: str, metric: str) -> None:
    got = similarity(response, reference, metric)
    # the library's own value, clamped to [0, 1] (sacreBLEU's identical pair is 1.0000000000000004)
    expected = min(1.0, max(0.0, _library(response, reference, metric)))
    assert got.score == got.similarity == expected
    assert 0.0 <= got.score <= 1.0


def test_pass_threshold_and_binary() -> None:
    r = similarity("the cat sat on the mat", "the cat sat on a mat", "rouge_1", 0.8)
    assert r.passed is True and r.score == pytest.approx(5 / 6)
    r = similarity("the cat sat on the mat", "the cat sat on a mat", "rouge_1", 0.9, binary=True)
    assert r.passed is False and r.score == 0.0 and r.similarity == pytest.approx(5 / 6)
    assert r.to_dict()["outcome"] == "fail"


def _grader(spec: dict[str, Any]) -> dict[str, Any]:
    return RewardItem.model_validate(
        {"id": "x", "response": "r", "grader": spec}
    ).grader.model_dump()


OPENAI_TEXT_SIMILARITY = {
    "type": "text_similarity",
    "name": "similar enough",
    "input": "{{sample.output_text}}",
    "reference": "{{item.reference_answer}}",
    "evaluation_metric": "rouge_l",
    "pass_threshold": 0.5,
}


def test_openai_objects_as_they_are_with_the_rows_reference() -> None:
    grader = _grader(fill_grader(OPENAI_TEXT_SIMILARITY, reference="the answer is four"))
    assert grader["reference"] == "the answer is four"
    score, details = score_item(grader, "I think the answer is four")
    assert score == pytest.approx(
        _library("I think the answer is four", grader["reference"], "rouge_l")
    )
    assert details["passed"] is True and details["metric"] == "rouge_l"
    check = {
        "type": "string_check",
        "name": "exact",
        "input": "{{ sample.output_text }}",
        "reference": "{{item.answer}}",
        "operation": "ilike",
    }
    grader = _grader(fill_grader(check, reference="Paris"))
    assert score_item(grader, "It is paris.")[0] == 1.0


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({**OPENAI_TEXT_SIMILARITY, "reference": "x", "evaluation_metric": "meteor"}, "WordNet"),
        ({**OPENAI_TEXT_SIMILARITY, "reference": "x", "evaluation_metric": "cosine"}, "embedding"),
        (OPENAI_TEXT_SIMILARITY, "item template"),
        ({**OPENAI_TEXT_SIMILARITY, "reference": "x", "input": "{{item.q}}"}, "sample.output_text"),
        ({"type": "text_similarity", "reference": "x", "binary": True}, "pass_threshold"),
        ({"type": "string_check", "reference": "x", "input": "hello"}, "sample.output_text"),
        ({"type": "instruction_following", "instructions": []}, "at least 1"),
        ({"type": "instruction_following", "instructions": [{"id": "nope:nope"}]}, "nope:nope"),
        (
            {
                "type": "instruction_following",
                "instructions": [{"id": "punctuation:no_comma", "kwargs": {"x": 1}}],
            },
            "takes no kwargs",
        ),
        (
            {
                "type": "instruction_following",
                "instructions": [
                    {"id": "length_constraints:number_words", "kwargs": {"num_words": 5}}
                ],
            },
            "'relation'",
        ),
        (
            {
                "type": "instruction_following",
                "instructions": [
                    {
                        "id": "length_constraints:number_words",
                        "kwargs": {"num_words": "5", "relation": "at least"},
                    }
                ],
            },
            "integer",
        ),
        (
            {
                "type": "instruction_following",
                "instructions": [
                    {
                        "id": "keywords:letter_frequency",
                        "kwargs": {"letter": "ab", "let_frequency": 1, "let_relation": "at least"},
                    }
                ],
            },
            "one ASCII letter",
        ),
        (
            {
                "type": "instruction_following",
                "instruction_id_list": ["punctuation:no_comma"],
                "kwargs": [{}, {}],
            },
            "same length",
        ),
    ],
)
def test_bad_specs_are_refused_with_a_reason(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError) as err:
        _grader(spec)
    assert message in str(err.value)


def test_an_ifeval_row_as_it_is() -> None:
    row = {  # google/IFEval: every kwarg name on every instruction, None where unused
        "type": "instruction_following",
        "instruction_id_list": ["punctuation:no_comma", "length_constraints:number_words"],
        "kwargs": [
            {"num_words": None, "relation": None, "keywords": None},
            {"num_words": 5, "relation": "less than", "keywords": None},
        ],
    }
    grader = _grader(row)
    assert grader["instructions"][1]["kwargs"] == {"num_words": 5, "relation": "less than"}
    score, details = score_item(grader, "Short, sweet.")
    assert score == 0.5
    assert [v["followed"] for v in details["instructions"]] == [False, True]
    assert details["outcome"] == "partly" and details["total"] == 2


CASES: list[tuple[str, dict[str, Any], bool, bool]] = [
    # (response, instruction, strict, loose): shapes real chat models produce
    ('Sure! Here it is:\n{"a": 1}', {"id": "detectable_format:json_format"}, False, True),
    ("**My answer is yes.**", {"id": "detectable_format:constrained_response"}, True, True),
    ("MY ANSWER IS YES.", {"id": "detectable_format:constrained_response"}, False, False),
    ('Here you go:\n"A quoted reply."', {"id": "startend:quotation"}, False, True),
    ("*Hello*, world", {"id": "punctuation:no_comma"}, False, False),
    ("<think>plan</think>\nall lower here", {"id": "change_case:english_lowercase"}, True, True),
    (
        "No way. Really",
        {"id": "startend:end_checker", "kwargs": {"end_phrase": "really"}},
        True,
        True,
    ),
    ("", {"id": "punctuation:no_comma"}, False, False),
]


@pytest.mark.parametrize(("response", "instruction", "strict", "loose"), CASES)
def test_model_shaped_outputs(
    response: str, instruction: dict[str, Any], strict: bool, loose: bool
) -> None:
    assert check_instructions(response, [instruction]).verdicts[0]["followed"] is strict
    assert (
        check_instructions(response, [instruction], mode="loose").verdicts[0]["followed"] is loose
    )


def test_loose_variants_are_ifevals_eight() -> None:
    variants = loose_variants("first\n*mid*\nlast")
    assert variants == [
        "first\n*mid*\nlast",
        "first\nmid\nlast",
        "*mid*\nlast",
        "first\n*mid*",
        "*mid*",
        "mid\nlast",
        "first\nmid",
        "mid",
    ]


def test_hostile_kwargs_are_literal_text() -> None:
    # a catastrophic-backtracking pattern as a keyword is matched as text, at once
    bomb = "(a+)+$"
    result = check_instructions(
        "a" * 5_000 + "!", [{"id": "keywords:existence", "kwargs": {"keywords": [bomb]}}]
    )
    assert result.score == 0.0
    deep = "[" * 100_000 + "]" * 100_000
    assert check_instructions(deep, [{"id": "detectable_format:json_format"}]).score == 0.0


def test_bullet_count_equals_ifevals_patterns() -> None:
    import random
    import re

    from referee.verifiers.instructions.checkers import count_line_items

    rng = random.Random(0)
    alphabet = [" ", "\n", "*", "-", "a", "\t", "\r", "\x0b", "\u2003", "\n\n", "**"]
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 16)))
        stars = len(re.findall(r"^\s*\*[^\*].*$", text, flags=re.MULTILINE))
        dashes = len(re.findall(r"^\s*-.*$", text, flags=re.MULTILINE))
        assert count_line_items(text, "*", then_other=True) == stars, repr(text)
        assert count_line_items(text, "-", then_other=False) == dashes, repr(text)
    # a degenerate RL output: the pattern backtracks over every blank line; the count does not
    assert count_line_items("\n" * 2_000_000 + "x*", "*", then_other=True) == 0


def test_placeholder_and_title_scans_equal_ifevals_patterns() -> None:
    import random
    import re

    from referee.verifiers.instructions.checkers import count_placeholders, titles

    rng = random.Random(1)
    alphabet = ["[", "]", "<", ">", "<<", ">>", "\n", "a", " ", "\r"]
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 16)))
        assert count_placeholders(text) == len(re.findall(r"\[.*?\]", text)), repr(text)
        assert titles(text) == re.findall(r"<<[^\n]+>>", text), repr(text)
    assert count_placeholders("[" * 2_000_000) == 0  # the pattern: quadratic in the line
    assert titles("<" * 2_000_000) == []


def test_openai_objects_registered_by_name_take_the_items_reference() -> None:
    from referee.services.named_graders import GraderRegistry

    registry = GraderRegistry({"close": OPENAI_TEXT_SIMILARITY})
    grader = registry.expand({"type": "named", "name": "close", "reference": "the answer is four"})
    assert grader["reference"] == "the answer is four"
    score, details = score_item(_grader(grader), "the answer is four")
    assert score == 1.0 and details["passed"] is True


@pytest.mark.parametrize(
    "label",
    [
        '{"instruction_id_list": ["punctuation:no_comma"], "kwargs": [{"num_words": null}]}',
        {"instructions": [{"id": "punctuation:no_comma"}]},
        [{"id": "punctuation:no_comma", "kwargs": {}}],
    ],
)
def test_a_rows_reference_column_carries_the_instructions(label: Any) -> None:
    grader = _grader(fill_grader({"type": "instruction_following", "mode": "loose"}, label))
    assert grader["instructions"] == [{"id": "punctuation:no_comma", "kwargs": {}}]
    assert grader["mode"] == "loose"
    assert score_item(grader, "no commas here")[0] == 1.0


def test_a_reference_without_instructions_is_refused() -> None:
    with pytest.raises(ValidationError, match="instructions"):
        _grader(fill_grader({"type": "instruction_following"}, "not instructions"))


def test_the_wire_names_every_metric_the_verifier_knows() -> None:
    """client/ may not import verifiers/, so the metric names are written twice: the schema's
    names are exactly the computed metrics and the refused ones, and both sides refuse the same."""
    import typing

    from referee.client.text_grader_models import _UNAVAILABLE, TextMetric
    from referee.verifiers.text_similarity import UNAVAILABLE

    assert set(typing.get_args(TextMetric)) == set(METRICS) | set(UNAVAILABLE)
    assert set(_UNAVAILABLE) == set(UNAVAILABLE)
