"""Configuration of the math verifier: one frozen object, hashable, so parsed references can be
cached per configuration and the object can cross a process boundary by pickling."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["ExtractMode", "MathConfig", "PercentPolicy"]

ExtractMode = Literal["auto", "boxed", "answer_tag", "final_answer", "gsm8k", "none"]
"""Where the final answer is read from. ``auto`` tries, in order: the last ``\\boxed{}``/
``\\fbox{}``, ``<answer>`` tags, a final-answer cue ("The final answer is ...", "Answer: ...",
"Answer $...$"), GSM8K ``####``, a one-line bare answer, the last display-math block, the last
inline-math segment of the final sentence, then (when ``last_number_fallback``) the last number
(see :mod:`referee.verifiers.math.answer_extraction`). ``none`` takes the whole response."""

PercentPolicy = Literal["either", "fraction", "number"]
"""How ``50%`` compares: ``either`` accepts 50 and 0.5, ``fraction`` 0.5, ``number`` 50."""


@dataclass(frozen=True, slots=True)
class MathConfig:
    extract: ExtractMode = "auto"
    last_number_fallback: bool = True
    """In ``auto`` mode, fall back to the last number in the response when nothing else matches."""
    hedging_is_wrong: bool = True
    """Several different final answers (``\\boxed{7}`` ... ``\\boxed{8}``, "7 or 8") score 0."""
    percent: PercentPolicy = "either"
    rel_tol: float = 1e-12
    """Relative tolerance for values that are only known numerically (irrational constants)."""
    approx_min_sig_digits: int = 5
    """A decimal answer matches an irrational (or non-terminating) reference when it is that
    value rounded or truncated to the answer's places and has at least this many significant
    digits (3.14159 matches pi, 3.1416 does not). 0 disables approximate matches."""
    strip_units: bool = True
    """Drop trailing units and ``\\text{}`` words around a number (``5 \\text{ cm}`` -> 5)."""
    degrees_equal_radians: bool = False
    """Read ``30^\\circ`` as pi/6 when the reference is in radians (off: degrees are dropped)."""
    decimal_comma: bool = False
    """Read a comma between digits as a decimal point (``1,22`` = 1.22, ``2,74 €``). Off by
    default: it clashes with thousands separators (``1,000`` would be 1) and with lists
    (``1,2``); on for data written with decimal commas."""
    ordered_lists: bool = False
    """Compare a bare comma list in the reference (``1, -2``, MATH's "enter all solutions
    separated by commas") in order. Off by default: such a list is a set of answers. Tuples and
    vectors (``(1, 2)``) are always ordered, sets (``\\{1, 2\\}``, ``\\pm``) never."""
    abs_tol: float = 0.0
    """Numbers within this absolute difference are equal (0: exact values, with the decimal
    rule of ``approx_min_sig_digits``). A tolerance accepts near misses, so it is off by
    default: for RL a false positive is worse than a false negative."""
    timeout_s: float = 5.0
    """Hard deadline for one check when it runs in a :class:`~referee.verifiers.CheckPool`."""
    max_answer_chars: int = 2_000
    """Extracted answers longer than this are not parsed (guard)."""
    max_nesting: int = 40
    """Brace/bracket nesting deeper than this is not parsed (guard)."""
    max_digits: int = 1_000
    """A number literal with more digits than this is not parsed (guard)."""
    max_magnitude_log10: float = 10_000.0
    """Powers and factorials whose result would exceed 10**this are not evaluated (guard)."""
