"""``answer_match`` against the peers' own code: veRL's Search-R1 reward
(``search_r1_like_qa_em.compute_score`` and ``compute_score_subem``, from the pinned verl wheel)
and SQuAD v1.1's token F1 (lm-eval's copy, ``qasper/metrics.py``, from the pinned lm-eval
wheel), on a generated corpus of answers: the same scores, every one."""

from __future__ import annotations

import itertools
import json

import pytest
from qa_peer import search_r1, squad_f1

from referee.verifiers.answer_match import answer_match, normalize_answer, references_from

GOLD = [
    ["Paris"],
    ["The Eiffel Tower", "Eiffel tower"],
    ["George Washington", "Washington"],
    ["1969"],
    ["an apple a day"],
    ["New York City", "NYC", "New York"],
    ["Ünïcödé – dash"],
    ["C++"],
]


def said(gold: str) -> list[str]:
    """Ways a model might put the answer (and near misses)."""
    return [
        gold,
        gold.upper(),
        f"  {gold}. ",
        f"the {gold}",
        f"{gold}!!!",
        gold.replace(" ", "   "),
        f"It is {gold}",
        gold[:-1],
        f"{gold} and more",
        gold.replace("-", " "),
        "",
    ]


def wrapped(answer: str) -> list[str]:
    """The answer in a response: tags, think blocks, several blocks, a flood, no tag."""
    return [
        f"<answer>{answer}</answer>",
        f"<think>I think <answer>wrong</answer></think>\n<answer>{answer}</answer>",
        f"<answer>wrong</answer> then <answer>{answer}</answer>",
        f"<answer>{answer}</answer> then <answer>wrong</answer>",
        f"<answer>{answer}",
        f"{answer}",
        f"<answer>a <answer>{answer}</answer>",
        "<answer>x</answer>" * 11 + f"<answer>{answer}</answer>",
        "<answer>" * 12 + f"{answer}</answer>",
        f"<answer>{answer}</answer>" + "</answer>" * 10,
        f"<answer>\n{answer}\n</answer>",
    ]


def corpus() -> list[tuple[list[str], str]]:
    return [
        (gold, response)
        for gold in GOLD
        for answer in {a for g in gold for a in said(g)}
        for response in wrapped(answer)
    ]


def test_exact_match_equals_search_r1() -> None:
    peer = search_r1()
    cases = corpus()
    wrong, right = [], 0
    for gold, response in cases:
        theirs = float(peer.compute_score(response, {"target": gold}))
        ours = answer_match(response, gold, "em", max_answer_tags=10).score
        right += theirs == 1.0
        if ours != theirs:
            wrong.append((gold, response, theirs, ours))
    assert not wrong, f"{len(wrong)} of {len(cases)} differ: {wrong[:5]}"
    assert 0.2 * len(cases) < right < 0.8 * len(cases)
    assert any(0 < answer_match(r, g, "em", max_answer_tags=10).score < 1 for g, r in cases)


def test_substring_match_equals_search_r1() -> None:
    peer = search_r1()
    cases = corpus()
    wrong = []
    for gold, response in cases:
        theirs = float(peer.compute_score_subem(response, {"target": gold}))
        ours = answer_match(response, gold, "subem").score
        if ours != theirs:
            wrong.append((gold, response, theirs, ours))
    assert not wrong, f"{len(wrong)} of {len(cases)} differ: {wrong[:5]}"


def test_f1_equals_squad() -> None:
    peer = squad_f1()
    cases = 0
    for gold in GOLD:
        for answer in {a for g in gold for a in said(g)} | {"Paris is in France", "tower"}:
            theirs = max(float(peer.f1_abstractive([answer], [g])) for g in gold)
            ours = answer_match(answer, gold, "f1", extract="none").score
            assert ours == pytest.approx(theirs, abs=1e-12), (gold, answer)
            cases += 1
    assert cases > 80


def test_normalisation_and_references() -> None:
    assert normalize_answer("  The  Eiffel-Tower!! ") == "eiffeltower"
    assert normalize_answer("An apple, a day") == "apple day"
    assert references_from('{"target": ["a", "b"]}') == ["a", "b"]
    assert references_from('["x"]') == ["x"]
    assert references_from("[1, 2]") == ["[1, 2]"]  # not a list of texts: the text itself
    assert references_from(["Paris", "paris"]) == ["Paris", "paris"]
    assert references_from("{not json") == ["{not json"]


def test_references_that_normalise_to_nothing_are_no_reward() -> None:
    """Search-R1's reward gives every answer 1.0 under subem for a target of "the" (the empty
    string is in every answer); referee leaves such a reference out, and a row with nothing
    else is bad_reference."""
    peer = search_r1()
    assert peer.compute_score_subem("<answer>anything</answer>", {"target": ["The"]}) == 1
    for metric in ("em", "subem", "f1"):
        empty = answer_match("<answer>anything</answer>", ["The", "?!"], metric)  # type: ignore[arg-type]
        assert (empty.score, empty.outcome) == (0.0, "bad_reference")
    kept = answer_match("<answer>anything</answer>", ["the", "Paris"], "subem")
    assert (kept.score, kept.outcome) == (0.0, "wrong")


def test_outcomes_and_details() -> None:
    missing = answer_match("Paris", ["Paris"])
    assert (missing.score, missing.outcome) == (0.0, "no_answer")
    assert answer_match("<answer>Lyon</answer>", ["Paris"]).outcome == "wrong"
    partial = answer_match("<answer>the city of Paris</answer>", "Paris", "f1")
    assert partial.outcome == "partial" and partial.score == pytest.approx(0.5)
    flood = answer_match("<answer>Paris</answer>" * 12, ["Paris"], max_answer_tags=10)
    assert flood.score == 0.25 and "a quarter" in (flood.reason or "")
    thought = answer_match("<think>Paris?</think> I say <answer>Paris</answer>", ["Lyon", "Paris"])
    assert (thought.score, thought.matched, thought.extracted) == (1.0, "Paris", "Paris")
    after = answer_match(
        "<think>Lyon</think><answer>Paris</answer>", ["Paris"], extract="after_thinking"
    )
    assert after.score == 1.0
    flan = {"extract": "none", "marker": "The answer is: "}
    assert answer_match("So... The answer is: Yes.", "yes", **flan).score == 1.0  # type: ignore[arg-type]
    assert answer_match("Yes", "yes", **flan).score == 1.0  # type: ignore[arg-type]
    assert answer_match("The answer is: no. The answer is: yes", "yes", **flan).score == 1.0  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "response",
    [
        "<answer>" * 200_000,
        "</answer>" * 200_000,
        "<answer>x</answer>" * 100_000,
        "<answer>" + "a " * 500_000 + "</answer>",
        "".join(itertools.repeat("<answer><think></think>", 50_000)),
    ],
)
def test_hostile_floods_are_read_in_one_pass(response: str) -> None:
    for metric in ("em", "subem", "f1"):
        result = answer_match(response, json.dumps(["a " * 1_000]), metric, max_answer_tags=10)
        assert 0.0 <= result.score <= 1.0
