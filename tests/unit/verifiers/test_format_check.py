"""Format rewards: the R1 think/answer format, answer tags, boxes, think blocks, custom regexes."""

from __future__ import annotations

import pytest

from referee.verifiers.format_check import REGEX_MAX_CHARS, check_format

# pattern -> (response, the reason its format is wrong; None when it is right)
CASES: dict[str, list[tuple[str, str | None]]] = {
    "think_answer": [  # DeepSeek-R1
        ("<think>\n2+2 is 4\n</think>\n<answer>\n4\n</answer>", None),
        ("  <think>x</think><answer>4</answer>\n\n", None),
        ("<think></think>\n<answer>4</answer>", None),
        ("<answer>4</answer>", "no <think> opening tag"),
        ("<think>2+2 is 4\n<answer>4</answer>", "no </think> closing tag"),
        ("Sure! <think>x</think><answer>4</answer>", "text before <think>"),
        ("<think>a</think><think>b</think><answer>4</answer>", "2 <think> blocks"),
        ("<think>x</think>\n<answer>4</answer><answer>5</answer>", "2 <answer> blocks"),
        ("<think>x</think>\nSo: <answer>4</answer>", "text between </think> and <answer>"),
        ("<think>x</think>\n<answer>4</answer>\nHope this helps!", "text after </answer>"),
        ("<think>x</think>\n<answer>  \n</answer>", "empty <answer> block"),
        ("<think>x</think>\n4", "no <answer> opening tag"),
        ("<think>x</think>\n<answer>4", "no </answer> closing tag"),
        ("<think>x <answer>4</answer></think>", "<answer> inside the think block"),
        ("</think>x<think>y", "</think> before <think>"),
        ("<THINK>x</THINK><ANSWER>4</ANSWER>", "no <think> opening tag"),
    ],
    "answer_tag": [
        ("The result is <answer>42</answer>.", None),
        ("<answer>42", "no </answer> closing tag"),
        ("<answer></answer>", "empty <answer> block"),
        ("<answer>1</answer> or <answer>2</answer>", "2 <answer> blocks"),
        ("42", "no <answer> opening tag"),
    ],
    "boxed": [
        (r"So $\boxed{\frac{1}{2}}$.", None),
        (r"\boxed {x^{2}}", None),
        (r"\boxed{} then \boxed{7}", None),
        (r"\boxed{}", r"empty \boxed{}"),
        (r"\boxed{ }", r"empty \boxed{}"),
        (r"\boxed{\frac{1}{2}", r"unclosed \boxed{"),
        ("The answer is 7.", r"no \boxed{...}"),
        (r"\boxedx{7}", r"no \boxed{...}"),
        (r"\boxed{\}}", None),
    ],
    "think": [
        ("<think>Let me see.</think>The answer is 4.", None),
        ("<think>   </think>The answer is 4.", "empty think block"),
        ("<think>Let me see.</think>\n  ", "no text after </think>"),
        ("Let me see.</think>4", "no <think> opening tag"),
        ("<think>Let me see. 4", "no </think> closing tag"),
    ],
    # custom regexes
    r"regex:Answer: \d+": [
        ("Answer: 42", None),
        ("Answer: 42\n", "response does not match the regex"),
    ],
    r"regex:.*Answer: \d+": [
        ("line1\nAnswer: 42", None),
    ],
    r"regex:(?i)answer: \d+": [
        ("ANSWER: 42", None),
    ],
}


@pytest.mark.parametrize(
    ("response", "pattern", "reason"),
    [(response, pattern, reason) for pattern, rows in CASES.items() for response, reason in rows],
)
def test_check_format(response: str, pattern: str, reason: str | None) -> None:
    result = check_format(response, pattern)
    assert result.reason == reason
    expected = (1.0, "correct") if reason is None else (0.0, "wrong")
    assert (result.score, result.outcome) == expected


def test_default_pattern_is_think_answer() -> None:
    assert check_format("<think>x</think><answer>4</answer>").score == 1.0
    assert check_format("<answer>4</answer>").reason == "no <think> opening tag"


BAD_REGEXES = ["regex:(", "regex:[a-", "regex:a{2,1}", "regex:(?P<x>a)(?P<x>b)"]


@pytest.mark.parametrize("pattern", BAD_REGEXES)
def test_bad_regex_raises(pattern: str) -> None:
    with pytest.raises(ValueError, match="does not compile"):
        check_format("a", pattern)


@pytest.mark.parametrize("pattern", ["", "thinking", "REGEX:a", "Boxed"])
def test_unknown_pattern_raises(pattern: str) -> None:
    with pytest.raises(ValueError, match="unknown format pattern"):
        check_format("a", pattern)


def test_regex_reads_only_the_first_100k_characters() -> None:
    long = "a" * (REGEX_MAX_CHARS + 10)
    assert check_format(long, "regex:a*").score == 1.0
    result = check_format(long + "!", "regex:b*")
    expected = f"response (first {REGEX_MAX_CHARS} characters) does not match the regex"
    assert result.reason == expected


@pytest.mark.parametrize(
    ("hostile", "pattern", "outcome", "reason"),
    [
        ("<think>" * 150_000, "think_answer", "wrong", "150000 <think> blocks"),
        ("<think>" * 150_000, "think", "wrong", "150000 <think> blocks"),
        ("<answer>" * 120_000, "answer_tag", "wrong", "120000 <answer> blocks"),
        ("\\boxed{" * 150_000, "boxed", "wrong", "unclosed \\boxed{"),
        ("\\boxed{}" * 120_000, "boxed", "wrong", "empty \\boxed{}"),
        ("\\boxed " * 150_000, "boxed", "wrong", "no \\boxed{...}"),
        ("(" * 1_000_000, "boxed", "wrong", "no \\boxed{...}"),
        ("{" * 1_000_000, "boxed", "wrong", "no \\boxed{...}"),
        ("\x00" * 1_000_000, "think_answer", "wrong", "no <think> opening tag"),
        # NUL bytes are text like any other: the shape is right
        (
            "<think>" + "\x00" * 1_000_000 + "</think><answer>\x00x</answer>",
            "think_answer",
            "correct",
            None,
        ),
        ("(" * 1_000_000, "regex:\\(*", "correct", None),
    ],
)
def test_hostile_inputs_finish(
    hostile: str, pattern: str, outcome: str, reason: str | None
) -> None:
    result = check_format(hostile, pattern)
    assert (result.outcome, result.score, result.reason) == (
        outcome,
        1.0 if outcome == "correct" else 0.0,
        reason,
    )
