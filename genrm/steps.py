"""Reasoning steps: splitting a solution into steps, and step rewards as token-level rewards.

A process reward model scores each step of a solution. :func:`split_steps` cuts a solution at
"Step k:" markers, at blank lines, at line breaks, or at a delimiter of the caller's (Math-Shepherd
data marks step ends with ``ки``); ``auto`` takes markers when there are at least two, else blank
lines, else lines. Every step keeps its character span in the solution, so prefixes are exact
slices of what the policy wrote. :func:`token_rewards` and :func:`token_rewards_from_offsets` put
each step's value on the last token of that step, the shape PPO-style trainers take for dense
rewards.

    steps = split_steps("Step 1: 2+3=5\\nStep 2: so \\\\boxed{5}")
    [s.text for s in steps]  # ['Step 1: 2+3=5', 'Step 2: so \\\\boxed{5}']
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "MAX_STEPS",
    "SplitMode",
    "Step",
    "split_steps",
    "token_rewards",
    "token_rewards_from_offsets",
]

SplitMode = Literal["auto", "step_markers", "blank_lines", "lines", "delimiter"]

MAX_STEPS = 64
"""A longer solution keeps its first 63 steps and merges the rest into the last one."""

_MARKER = re.compile(r"(?im)^[ \t]*(?:[#*]+[ \t]*)?step[ \t]*\d+[ \t]*[:.)]")
_BLANK = re.compile(r"\n[ \t]*\n\s*")
_LINE = re.compile(r"\n\s*")


@dataclass(frozen=True, slots=True)
class Step:
    index: int
    """1-based position of the step."""
    start: int
    end: int
    """Character span of the step in the solution (``solution[start:end]``)."""
    text: str


def _spans_between(solution: str, separator: re.Pattern[str]) -> list[tuple[int, int]]:
    spans, pos = [], 0
    for m in separator.finditer(solution):
        spans.append((pos, m.start()))
        pos = m.end()
    spans.append((pos, len(solution)))
    return spans


def _spans_at_markers(solution: str) -> list[tuple[int, int]]:
    starts = [m.start() for m in _MARKER.finditer(solution)]
    if not starts:
        return [(0, len(solution))]
    bounds = [0, *starts] if solution[: starts[0]].strip() else starts
    return list(zip(bounds, [*bounds[1:], len(solution)], strict=True))


def _spans_at_delimiter(solution: str, delimiter: str) -> list[tuple[int, int]]:
    spans, pos = [], 0
    while (hit := solution.find(delimiter, pos)) != -1:
        spans.append((pos, hit + len(delimiter)))  # the delimiter ends its step
        pos = hit + len(delimiter)
    spans.append((pos, len(solution)))
    return spans


def _trim(solution: str, start: int, end: int) -> tuple[int, int]:
    while start < end and solution[start].isspace():
        start += 1
    while end > start and solution[end - 1].isspace():
        end -= 1
    return start, end


def split_steps(
    solution: str, mode: SplitMode = "auto", delimiter: str | None = None
) -> list[Step]:
    """The steps of ``solution`` (empty pieces dropped). A solution with no text has no steps."""
    if mode == "delimiter":
        if not delimiter:
            raise ValueError("split mode 'delimiter' needs a non-empty delimiter")
        spans = _spans_at_delimiter(solution, delimiter)
    elif mode == "step_markers":
        spans = _spans_at_markers(solution)
    elif mode == "blank_lines":
        spans = _spans_between(solution, _BLANK)
    elif mode == "lines":
        spans = _spans_between(solution, _LINE)
    elif mode == "auto":
        if len(_MARKER.findall(solution)) >= 2:
            spans = _spans_at_markers(solution)
        elif _BLANK.search(solution.strip()):
            spans = _spans_between(solution, _BLANK)
        else:
            spans = _spans_between(solution, _LINE)
    else:
        raise ValueError(f"unknown split mode {mode!r}")
    trimmed = [_trim(solution, s, e) for s, e in spans]
    kept = [(s, e) for s, e in trimmed if e > s and solution[s:e].strip(delimiter or None)]
    if len(kept) > MAX_STEPS:
        kept = [*kept[: MAX_STEPS - 1], (kept[MAX_STEPS - 1][0], kept[-1][1])]
    return [Step(i + 1, s, e, solution[s:e]) for i, (s, e) in enumerate(kept)]


def token_rewards(step_values: Sequence[float], step_token_counts: Sequence[int]) -> list[float]:
    """A reward per token: each step's value on its last token, 0 elsewhere.

    ``step_token_counts[k]`` is how many tokens step k spans (the response's tokens, in order).
    """
    if len(step_values) != len(step_token_counts):
        raise ValueError(
            f"{len(step_values)} step values for {len(step_token_counts)} token counts"
        )
    out: list[float] = []
    for value, count in zip(step_values, step_token_counts, strict=True):
        if count < 0:
            raise ValueError("a token count is negative")
        if count == 0:
            continue  # a step with no token of its own has nowhere to put its reward
        out.extend([0.0] * (count - 1))
        out.append(float(value))
    return out


def token_rewards_from_offsets(
    steps: Sequence[Step],
    step_values: Sequence[float],
    offsets: Sequence[tuple[int, int]],
) -> list[float]:
    """Token rewards from a tokenizer's offset mapping of the solution (``(start, end)`` per
    token, as fast tokenizers return with ``return_offsets_mapping=True``): each step's value goes
    on the last token that starts inside the step."""
    if len(steps) != len(step_values):
        raise ValueError(f"{len(step_values)} step values for {len(steps)} steps")
    rewards = [0.0] * len(offsets)
    for step, value in zip(steps, step_values, strict=True):
        last = None
        for i, (start, end) in enumerate(offsets):
            if end > start and step.start <= start < step.end:
                last = i
        if last is not None:
            rewards[last] = float(value)
    return rewards
