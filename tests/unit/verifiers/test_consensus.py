"""Majority-vote consensus (TTRL): answers clustered by math equivalence, ties to the first."""

from __future__ import annotations

import pytest

from referee.verifiers.consensus import majority_vote
from referee.verifiers.math.config import MathConfig


def test_equivalent_forms_are_one_vote() -> None:
    vote = majority_vote(
        [
            "so the answer is \\boxed{\\frac{1}{2}}",
            "The answer is $0.5$",
            "\\boxed{1/2}",
            "\\boxed{3}",
            "I think \\boxed{3}",
        ]
    )
    assert vote.votes == 3
    assert vote.answer == "\\frac{1}{2}"
    assert vote.scores() == [1.0, 1.0, 1.0, 0.0, 0.0]
    assert vote.share == pytest.approx(0.6)
    assert [n for _a, n in vote.clusters] == [3, 2]


def test_tie_goes_to_the_answer_seen_first() -> None:
    vote = majority_vote(["\\boxed{7}", "\\boxed{8}", "\\boxed{8}", "\\boxed{7}"])
    assert vote.answer == "7"
    assert vote.scores() == [1.0, 0.0, 0.0, 1.0]


def test_no_answer_casts_no_vote_and_scores_zero() -> None:
    vote = majority_vote(["\\boxed{4}", "I could not work this out, sorry.", "\\boxed{2+2}"])
    assert vote.members[1] is None
    assert vote.extracted[1] is None
    assert vote.scores() == [1.0, 0.0, 1.0]
    assert vote.share == pytest.approx(2 / 3)


def test_nobody_answers() -> None:
    vote = majority_vote(["I could not work this out.", "", "Sorry, I am not able to say."])
    assert vote.answer is None and vote.votes == 0
    assert vote.scores() == [None, None, None]


def test_min_share_without_consensus_gives_none() -> None:
    vote = majority_vote(["\\boxed{1}", "\\boxed{2}", "\\boxed{3}", "\\boxed{1}"])
    assert vote.scores(min_share=0.5) == [1.0, 0.0, 0.0, 1.0]
    assert vote.scores(min_share=0.75) == [None] * 4


def test_unparseable_answers_match_only_the_same_text() -> None:
    vote = majority_vote(["\\boxed{\\foo{x}}", "\\boxed{\\foo{x}}", "\\boxed{\\foo{y}}"])
    assert vote.votes == 2
    assert vote.scores() == [1.0, 1.0, 0.0]


def test_extraction_options_apply() -> None:
    config = MathConfig(extract="boxed")
    vote = majority_vote(["the answer is 5", "\\boxed{6}", "\\boxed{6}"], config)
    assert vote.extracted[0] is None
    assert vote.answer == "6"
