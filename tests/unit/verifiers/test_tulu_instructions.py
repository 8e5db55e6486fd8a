"""Tülu 3's IFEval constraints (allenai/RLVR-IFeval's ``func_name`` ground truth) against
open-instruct's own verdicts.

open-instruct is not on PyPI, so its functions cannot be loaded here; its verdicts were recorded
by running its ``open_instruct/if_functions.py`` (``tests/tulu_verdicts.py``, the commit in the
file's first line) on 2,000 generated responses, 40 followed and 40 not per function. Every
verdict through referee's grader must equal open-instruct's.
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
from referee.client.instruction_specs import TULU_FUNCTIONS
from referee.client.models import RewardItem
from referee.verifiers.instructions import check_instructions
from referee.verifiers.instructions.tulu import count_pairs, options_of
from referee.verifiers.registry import score_item

VERDICTS = Path(__file__).parents[2] / "data" / "tulu_ifeval_verdicts.jsonl"


def _rows() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    lines = VERDICTS.read_text().splitlines()
    return json.loads(lines[0]), [json.loads(line) for line in lines[1:]]


def _grader(spec: Any) -> dict[str, Any]:
    return RewardItem.model_validate(
        {"id": "x", "response": "r", "grader": spec}
    ).grader.model_dump()


# An RLVR-IFeval row's ground truth as the dataset gives it: every argument name, None unused.
RLVR_KEYS = (
    "N quantifier end_phrase keyword_list word forbidden_words letter i first_word "
    "postscript_marker options section_splitter original_prompt"
).split()


def _rlvr(func_name: str, **kwargs: Any) -> str:
    return json.dumps({"func_name": func_name, **dict.fromkeys(RLVR_KEYS), **kwargs})


def test_every_verdict_equals_open_instructs() -> None:
    header, rows = _rows()
    assert len(header["open_instruct_commit"]) == 40 and header["rows"] == len(rows)
    assert {r["func_name"] for r in rows} == set(TULU_FUNCTIONS)  # all 25 functions
    wrong = []
    for row in rows:
        kwargs = {k: v for k, v in row.items() if k not in ("func_name", "response", "followed")}
        grader = _grader(fill_grader({"type": "instruction_following"}, _rlvr(**row_call(row))))
        assert grader["instructions"] == [{"id": row["func_name"], "kwargs": kwargs}]
        score, details = score_item(grader, row["response"])
        if details["instructions"][0]["followed"] != row["followed"]:
            wrong.append((row["func_name"], kwargs, row["response"][:120], row["followed"]))
        assert score == float(details["instructions"][0]["followed"])
    assert wrong == []
    assert sum(r["followed"] for r in rows) == len(rows) // 2  # both verdicts, for every function


def row_call(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k not in ("response", "followed")}


# open-instruct's own unit tests of these functions (open_instruct/test_if_functions.py)
@pytest.mark.parametrize(
    ("text", "options", "expected"),
    [
        ("I believe the answer is B", ["A", "B", "C", "D"], True),
        ("I choose red", ["red", "blue"], True),
        ("I choose green", ["red", "blue"], False),
        ("red", ["red", "blue"], True),
    ],
)
def test_open_instructs_choice_cases(text: str, options: list[str], expected: bool) -> None:
    result = check_instructions(text, [{"id": "validate_choice", "kwargs": {"options": options}}])
    assert result.verdicts[0]["followed"] is expected


@pytest.mark.parametrize(
    ("text", "n", "quantifier", "expected"),
    [
        ("AAA BBB CCC DDD EEE", 5, "around", True),
        ("AAA BBB CCC DDD", 5, "around", True),
        ("AAA BBB CCC DDD EEE FFF", 5, "around", True),
        ("AAA BBB", 5, "around", False),
        ("AAA BBB CCC", 2, "at least", True),
        ("AAA BBB CCC DDD", 2, "at most", False),
    ],
)
def test_open_instructs_capital_word_cases(
    text: str, n: int, quantifier: str, expected: bool
) -> None:
    spec = {"id": "validate_frequency_capital_words", "kwargs": {"N": n, "quantifier": quantifier}}
    assert check_instructions(text, [spec]).verdicts[0]["followed"] is expected


def test_a_reasoning_models_answer_is_checked_as_open_instruct_checks_it() -> None:
    grader = _grader(fill_grader({"type": "instruction_following"}, _rlvr("validate_lowercase")))
    answer = "\n<answer>all lowercase, as asked.</answer>\n"
    assert score_item(grader, "<think>The User Wants Lowercase.</think>" + answer)[0] == 1.0
    assert score_item(grader, "<think>fine.</think>Not lowercase.")[0] == 0.0
    # an empty answer follows nothing (open-instruct's old verifier passes "" as lowercase)
    assert score_item(grader, "<think>thinking</think>  <answer></answer> ")[0] == 0.0


def test_options_given_as_one_string_are_the_options_it_lists() -> None:
    listed = "('My answer is yes.', 'My answer is no.', 'My answer is maybe.')"
    assert options_of(listed) == ["My answer is yes.", "My answer is no.", "My answer is maybe."]
    assert options_of("Option A") == ["Option A"]
    assert options_of("[1, 2]") == ["[1, 2]"]  # not a list of strings: the text itself
    grader = _grader(
        fill_grader({"type": "instruction_following"}, _rlvr("validate_choice", options=listed))
    )
    assert score_item(grader, "My answer is no.")[0] == 1.0
    # open-instruct tests each character of the string, so "yes" passed on its letters
    assert score_item(grader, "yes")[0] == 0.0


def test_ifevalg_rows_of_ifevals_own_instructions_are_read() -> None:
    # open-instruct's newer IFEval rows: a Python literal of one {"instruction_id", "kwargs"}
    label = (
        "[{'instruction_id': ['punctuation:no_comma', 'length_constraints:number_words'], "
        "'kwargs': [None, {'num_words': 5, 'relation': 'less than'}]}]"
    )
    grader = _grader(fill_grader({"type": "instruction_following"}, label))
    assert grader["instructions"] == [
        {"id": "punctuation:no_comma", "kwargs": {}},
        {
            "id": "length_constraints:number_words",
            "kwargs": {"num_words": 5, "relation": "less than"},
        },
    ]
    assert score_item(grader, "four words no commas")[0] == 1.0
    assert score_item(grader, "five words, with a comma")[0] == 0.0
    as_json = [{"instruction_id": ["punctuation:no_comma"], "kwargs": [None]}]
    assert _grader(fill_grader({"type": "instruction_following"}, as_json))["instructions"] == [
        {"id": "punctuation:no_comma", "kwargs": {}}
    ]


@pytest.mark.parametrize(
    ("label", "message"),
    [
        (_rlvr("validate_word_constraint", N=5, quantifier="exactly"), "quantifier must be one of"),
        (_rlvr("validate_word_constraint", quantifier="at least"), "needs the kwarg 'N'"),
        (_rlvr("validate_paragraphs", N=2, i=3, first_word="The"), "i is more than N"),
        (_rlvr("verify_letter_frequency", letter="ab", N=1), "letter must be one character"),
        (_rlvr("verify_keywords", keyword_list="cat"), "keyword_list must be a list"),
        (_rlvr("validate_lowercase", N=3), "takes no kwargs"),
        (_rlvr("validate_everything"), "unknown instruction id 'validate_everything'"),
        ("[{'instruction_id': ['count:word_count_range'], 'kwargs': [None]}]", "unknown instr"),
    ],
)
def test_bad_constraints_are_refused_with_a_reason(label: str, message: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(message)):
        _grader(fill_grader({"type": "instruction_following"}, label))


def test_the_pair_scan_equals_the_lazy_patterns() -> None:
    rng = random.Random(7)
    alphabet = ["[", "]", "*", "<<", ">>", "<", ">", "\n", "a", " "]
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 16)))
        assert count_pairs(text, "[", "]") == len(re.findall(r"\[(.*?)\]", text)), repr(text)
        assert count_pairs(text, "*", "*") == len(re.findall(r"\*(.*?)\*", text)), repr(text)
        assert count_pairs(text, "<<", ">>") == len(re.findall(r"<<(.*?)>>", text)), repr(text)


@pytest.mark.parametrize(
    "hostile",
    ["[" * 2_000_000, "*" + " " * 2_000_000, "<<" * 1_000_000, "a. " * 700_000, "{" * 500_000],
)
def test_hostile_answers_are_checked_in_one_pass(hostile: str) -> None:
    instructions = [
        {"id": "validate_placeholders", "kwargs": {"N": 1}},
        {"id": "validate_highlighted_sections", "kwargs": {"N": 1}},
        {"id": "validate_title", "kwargs": {}},
        {"id": "verify_sentence_constraint", "kwargs": {"N": 3, "quantifier": "at least"}},
        {"id": "validate_json_format", "kwargs": {}},
        {"id": "validate_sections", "kwargs": {"N": 2, "section_splitter": "SECTION"}},
    ]
    result = check_instructions(hostile, instructions)
    assert len(result.verdicts) == len(instructions)
    assert result.verdicts[4]["followed"] is False  # 500,000 unclosed braces are not JSON


def test_the_ground_truth_text_itself_is_a_graders_instructions() -> None:
    """An RLVR-IFeval row's `ground_truth` (JSON text) given as the grader's `instructions`,
    as it is: the grader the trainer adapters build from the row, and the same verdicts."""
    _, rows = _rows()
    for row in rows[::7]:
        text = _rlvr(**row_call(row))
        direct = _grader({"type": "instruction_following", "instructions": text})
        assert direct == _grader(fill_grader({"type": "instruction_following"}, text))
        assert score_item(direct, row["response"])[0] == float(row["followed"])
    # an IFEval row as one object, and IFEvalG's list form, go the same way
    row = {"instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]}
    assert _grader({"type": "instruction_following", "instructions": row})["instructions"] == [
        {"id": "punctuation:no_comma", "kwargs": {}}
    ]
    for bad in ("be nice", '{"func_name": 3}', {"what": "ever"}):
        with pytest.raises(ValidationError, match="instructions given as text or an object"):
            _grader({"type": "instruction_following", "instructions": bad})
