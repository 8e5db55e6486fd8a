r"""Format rewards: does a response have the shape the prompt asked for?

    >>> from referee.verifiers.format_check import check_format
    >>> check_format("<think>\n2+2\n</think>\n<answer>4</answer>").score
    1.0
    >>> check_format("<answer>4</answer>").reason
    'no <think> opening tag'

Named patterns (tags are matched exactly, lower case):

- ``think_answer``: the DeepSeek-R1 format reward. One ``<think>...</think>`` block first, then one
  ``<answer>...</answer>`` with non-empty content; only whitespace before, between and after.
  The think block may be empty, as in R1's ``<think>.*?</think>``.
- ``answer_tag``: exactly one ``<answer>...</answer>`` with non-empty content, anywhere.
- ``boxed``: some ``\boxed{...}`` with balanced, non-empty content.
- ``think``: one ``<think>`` block first, with non-empty content, closed, followed by non-empty
  text.
- ``think_closed``: TRL's ``think_format_reward`` (``^<think>(?!.*<think>)(.*?)</think>.*$``):
  the response starts with ``<think>``, opens no other, and closes it; the block and what
  follows may be empty.
- ``think_boxed``: veRL's geometry3k format reward (``<think>.*</think>.*\\boxed\{.*\}.*``,
  matched whole): the response starts with ``<think>``, and a ``</think>``, then a ``\boxed{``,
  then a ``}`` follow it, anything around them.
- ``regex:<pattern>``: ``re.fullmatch(pattern, response[:100_000], re.DOTALL)``. A pattern that
  does not compile raises :class:`ValueError` (the API turns it into a 422). Only the first
  100,000 characters are matched; a pattern that backtracks badly can still be slow on those, so
  untrusted patterns belong under :class:`referee.verifiers.CheckPool`'s deadline.

A failed check is a result (score 0, outcome ``"wrong"``) whose reason says what is missing:
"no </think> closing tag", "text before <think>", "2 <answer> blocks". The named patterns are
plain linear scans (``str.count`` / ``str.find``), safe on hostile megabyte inputs.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Final

from referee.verifiers.result import CheckResult
from referee.verifiers.text_scan import closing_brace

__all__ = ["FORMAT_PATTERNS", "REGEX_MAX_CHARS", "REGEX_PREFIX", "check_format"]

FORMAT_PATTERNS: Final = (
    "think_answer",
    "answer_tag",
    "boxed",
    "think",
    "think_closed",
    "think_boxed",
)
REGEX_PREFIX: Final = "regex:"
REGEX_MAX_CHARS: Final = 100_000

_BOX = re.compile(r"\\boxed(?![A-Za-z])")


class _Wrong(Exception):
    """The response does not have the format; the message says what is off."""


def _tag(text: str, name: str) -> tuple[int, int]:
    """Positions of the single ``<name>`` and ``</name>`` (opening first); raises :class:`_Wrong`
    saying what is off otherwise."""
    opening, closing = f"<{name}>", f"</{name}>"
    n_open, n_close = text.count(opening), text.count(closing)
    if n_open == 0:
        raise _Wrong(f"no {opening} opening tag")
    if n_open > 1:
        raise _Wrong(f"{n_open} {opening} blocks")
    if n_close == 0:
        raise _Wrong(f"no {closing} closing tag")
    if n_close > 1:
        raise _Wrong(f"{n_close} {closing} closing tags")
    start, end = text.find(opening), text.find(closing)
    if end < start:
        raise _Wrong(f"{closing} before {opening}")
    return start, end


def _content(text: str, span: tuple[int, int], name: str) -> str:
    return text[span[0] + len(name) + 2 : span[1]]


def _think_first(text: str) -> tuple[int, int]:
    think = _tag(text, "think")
    if text[: think[0]].strip():
        raise _Wrong("text before <think>")
    return think


def _check_think_answer(text: str) -> None:
    think = _think_first(text)
    answer = _tag(text, "answer")
    after_think = think[1] + len("</think>")
    if answer[0] < after_think:
        raise _Wrong("<answer> inside the think block")
    if text[after_think : answer[0]].strip():
        raise _Wrong("text between </think> and <answer>")
    if not _content(text, answer, "answer").strip():
        raise _Wrong("empty <answer> block")
    if text[answer[1] + len("</answer>") :].strip():
        raise _Wrong("text after </answer>")


def _check_answer_tag(text: str) -> None:
    answer = _tag(text, "answer")
    if not _content(text, answer, "answer").strip():
        raise _Wrong("empty <answer> block")


def _check_think(text: str) -> None:
    think = _think_first(text)
    if not _content(text, think, "think").strip():
        raise _Wrong("empty think block")
    if not text[think[1] + len("</think>") :].strip():
        raise _Wrong("no text after </think>")


def _check_boxed(text: str) -> None:
    reason = "no \\boxed{...}"
    pos = 0
    while (m := _BOX.search(text, pos)) is not None:
        j = m.end()
        while j < len(text) and text[j] in " \t\n":
            j += 1
        if j >= len(text) or text[j] != "{":
            pos = m.end()
            continue
        close = closing_brace(text, j)
        if close is None:
            raise _Wrong("unclosed \\boxed{")  # any later box lies inside this one
        if text[j + 1 : close].strip():
            return
        reason = "empty \\boxed{}"
        pos = close + 1
    raise _Wrong(reason)


def _check_think_closed(text: str) -> None:
    if not text.startswith("<think>"):
        raise _Wrong("the response does not start with <think>")
    if text.find("<think>", 1) >= 0:
        raise _Wrong("a second <think>")
    if text.find("</think>", len("<think>")) < 0:
        raise _Wrong("no </think> closing tag")


def _check_think_boxed(text: str) -> None:
    if not text.startswith("<think>"):
        raise _Wrong("the response does not start with <think>")
    think_end = text.find("</think>", len("<think>"))
    if think_end < 0:
        raise _Wrong("no </think> closing tag")
    box = text.find("\\boxed{", think_end + len("</think>"))
    if box < 0:
        raise _Wrong("no \\boxed{ after </think>")
    if text.find("}", box + len("\\boxed{")) < 0:
        raise _Wrong("no } after \\boxed{")


_NAMED = {
    "think_answer": _check_think_answer,
    "answer_tag": _check_answer_tag,
    "boxed": _check_boxed,
    "think": _check_think,
    "think_closed": _check_think_closed,
    "think_boxed": _check_think_boxed,
}


@lru_cache(maxsize=256)
def _compile(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern, re.DOTALL)
    except (re.error, RecursionError, OverflowError) as exc:
        raise ValueError(f"format regex {pattern!r} does not compile: {exc}") from exc


def check_format(response: str, pattern: str = "think_answer") -> CheckResult:
    """Score 1.0 when ``response`` has the format ``pattern`` names, else 0.0 with a reason.

    Raises :class:`ValueError` for an unknown pattern name or a custom regex that does not
    compile.
    """
    if pattern.startswith(REGEX_PREFIX):
        compiled = _compile(pattern[len(REGEX_PREFIX) :])
        text = response[:REGEX_MAX_CHARS]
        if compiled.fullmatch(text) is not None:
            return CheckResult(1.0, "correct")
        where = f" (first {REGEX_MAX_CHARS} characters)" if len(response) > len(text) else ""
        return CheckResult(0.0, "wrong", reason=f"response{where} does not match the regex")
    check = _NAMED.get(pattern)
    if check is None:
        raise ValueError(
            f"unknown format pattern {pattern!r}: use one of {', '.join(FORMAT_PATTERNS)} "
            f"or '{REGEX_PREFIX}<pattern>'"
        )
    try:
        check(response)
    except _Wrong as wrong:
        return CheckResult(0.0, "wrong", reason=str(wrong))
    return CheckResult(1.0, "correct")
