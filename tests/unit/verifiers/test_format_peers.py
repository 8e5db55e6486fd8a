"""Named formats against the peers' own format rewards, on a generated corpus of responses
(every sequence of up to five pieces of tags, braces, text and whitespace): ``think_boxed``
against veRL's geometry3k format reward (``geo3k.format_reward``, the pinned verl wheel's file:
``re.fullmatch`` of ``<think>.*</think>.*\\boxed\\{.*\\}.*`` with DOTALL) and ``think_closed``
against TRL's ``think_format_reward`` (the installed trl, the version the tests pin): the same
verdict on every response; and both linear on floods, where the regular expressions
backtrack."""

from __future__ import annotations

import itertools

from qa_peer import geo3k_format_reward
from trl.rewards import think_format_reward

from referee.verifiers.format_check import check_format

PIECES = ["<think>", "</think>", "\\boxed{", "}", "x", " ", "\n", "\\boxed", "{", "<think"]


def test_verdicts_equal_verls_geo3k_format() -> None:
    peer = geo3k_format_reward()
    total, passed, wrong = 0, 0, []
    for n in range(1, 6):
        for parts in itertools.product(PIECES, repeat=n):
            text = "".join(parts)
            theirs = peer(text)
            ours = check_format(text, "think_boxed").score
            total += 1
            passed += theirs == 1.0
            if ours != theirs:
                wrong.append((text, theirs, ours))
    assert not wrong, f"{len(wrong)} of {total} differ: {wrong[:10]}"
    assert total > 100_000 and 0 < passed < total


def test_verdicts_equal_trls_think_format_reward() -> None:
    total, passed, wrong = 0, 0, []
    for n in range(1, 6):
        texts = ["".join(parts) for parts in itertools.product(PIECES, repeat=n)]
        theirs = think_format_reward([[{"content": t}] for t in texts])
        for text, verdict in zip(texts, theirs, strict=True):
            ours = check_format(text, "think_closed").score
            total += 1
            passed += verdict == 1.0
            if ours != verdict:
                wrong.append((text, verdict, ours))
    assert not wrong, f"{len(wrong)} of {total} differ: {wrong[:10]}"
    assert total > 100_000 and 0 < passed < total


def test_floods_are_read_in_one_pass() -> None:
    for text in (
        "<think>" + "</think>" * 100_000,
        "<think></think>" + "\\boxed{" * 100_000,
        "<think>" + "</think>\\boxed{" * 50_000,
    ):
        assert check_format(text, "think_boxed").score == 0.0
    assert check_format("<think>" + "</think>" * 100_000, "think_closed").score == 1.0
    assert check_format("<think>" + "x" * 1_000_000 + "<think>", "think_closed").score == 0.0
