r"""Exact reading of plain numbers without ANTLR or sympy: the fast path.

Most final answers in GSM8K/MATH-style rollouts are integers, decimals or simple fractions;
reading them with :class:`fractions.Fraction` takes microseconds and is exact (``1/2^98`` and
``1/2^99`` stay different, ``0.1 + 0.2`` style rounding never happens). Every pattern here is
anchored and linear, and digit counts are bounded before ``int()`` sees them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

__all__ = ["FastNumber", "TooLarge", "parse_fast_number"]

_SIGN = r"[+-]?"
_DEC = r"(?:\d+(?:\.\d*)?|\.\d+)"
_INT_OR_DEC = re.compile(rf"^({_SIGN})({_DEC})$")
_SCI = re.compile(
    rf"^({_SIGN})({_DEC})\s*(?:[eE]|\\times\s*10\s*\^|\\cdot\s*10\s*\^|\*\s*10\s*\^|"
    rf"\*\*\s*|x\s*10\s*\^)\s*\{{?\s*([+-]?\d+)\s*\}}?$"
)
_POW10 = re.compile(r"^([+-]?)10\s*\^\s*\{?\s*([+-]?\d+)\s*\}?$")
_SLASH = re.compile(rf"^({_SIGN})\(?\s*({_SIGN}\d+)\s*\)?\s*/\s*\(?\s*({_SIGN}\d+)\s*\)?$")
_FRAC = re.compile(
    rf"^({_SIGN})\\frac\s*\{{\s*({_SIGN}{_DEC})\s*\}}\s*\{{\s*({_SIGN}{_DEC})\s*\}}$"
)
_FRAC_SHORT = re.compile(rf"^({_SIGN})\\frac\s*(\d)\s*(\d)$")
_MIXED = re.compile(
    rf"^({_SIGN})(\d+)\s*(?:\\frac\s*\{{\s*(\d+)\s*\}}\s*\{{\s*(\d+)\s*\}}|"
    r"\s(\d+)\s*/\s*(\d+)|\s*\((\d+)/(\d+)\))$"
)
_REPEAT_BAR = re.compile(rf"^({_SIGN})(\d*)\.(\d*)\\(?:overline|bar|dot)\s*\{{?\s*(\d+)\s*\}}?$")
_REPEAT_PAREN = re.compile(rf"^({_SIGN})(\d*)\.(\d*)\((\d+)\)$")
_REPEAT_DOTS = re.compile(rf"^({_SIGN})(\d*)\.(\d+)\s*\.\.\.$")


class TooLarge(ValueError):
    """A number literal over the configured digit or exponent budget."""


@dataclass(frozen=True, slots=True)
class FastNumber:
    value: Fraction
    decimal_places: int | None = None
    """Places after the point when written as a terminating decimal (an approximation
    candidate); None for integers, fractions and repeating decimals."""
    sig_digits: int = 0


def _check(digits: str, max_digits: int) -> None:
    if len(digits) > max_digits:
        raise TooLarge(f"number literal has {len(digits)} digits (limit {max_digits})")


def _signed(sign: str, value: Fraction) -> Fraction:
    return -value if sign == "-" else value


def _sig_digits(mantissa: str) -> int:
    digits = mantissa.replace(".", "").lstrip("0")
    return len(digits)


def _repeating(sign: str, whole: str, fixed: str, period: str) -> Fraction:
    whole_v = int(whole) if whole else 0
    n, k = len(fixed), len(period)
    fixed_v = int(fixed) if fixed else 0
    value = (
        Fraction(whole_v) + Fraction(fixed_v, 10**n) + Fraction(int(period), (10**k - 1) * 10**n)
    )
    return _signed(sign, value)


def _dots_period(digits: str) -> tuple[str, str]:
    """Split ``0.142857142857...`` digits into (non-repeating, period)."""
    for k in range(1, len(digits) // 2 + 1):
        period = digits[-k:]
        if digits[-2 * k : -k] == period:
            # extend left as far as the period keeps repeating
            start = len(digits) - 2 * k
            while start - k >= 0 and digits[start - k : start] == period:
                start -= k
            return digits[:start], period
    return digits[:-1], digits[-1]


def parse_fast_number(
    text: str, max_digits: int = 1000, max_exponent: int = 10_000
) -> FastNumber | None:
    """``text`` as an exact number, or None when it is not a plain number form.

    Raises :class:`TooLarge` for literals over the digit or exponent budget.
    """
    s = text.strip()
    if not s or len(s) > 4 * max_digits:
        if s:
            raise TooLarge(f"answer of {len(s)} characters is too long for a number")
        return None
    m = _MIXED.match(s)
    if m:
        groups = [g for g in m.groups()[2:] if g is not None]
        _check(m.group(2) + "".join(groups), max_digits)
        num, den = int(groups[0]), int(groups[1])
        if den == 0 or num >= den:
            return None
        return FastNumber(_signed(m.group(1), int(m.group(2)) + Fraction(num, den)))
    s = s.replace(" ", "") if len(s) < 200 and "\\" not in s else s
    if s.startswith("+") and s[1:2] == "-":
        return None
    m = _INT_OR_DEC.match(s)
    if m:
        _check(m.group(2), max_digits)
        mant = m.group(2)
        places = len(mant.split(".", 1)[1]) if "." in mant else None
        return FastNumber(_signed(m.group(1), Fraction(mant)), places or None, _sig_digits(mant))
    m = _SLASH.match(s)
    if m:
        _check(m.group(2) + m.group(3), max_digits)
        den = int(m.group(3))
        if den == 0:
            return None
        return FastNumber(_signed(m.group(1), Fraction(int(m.group(2)), den)))
    m = _FRAC.match(s) or _FRAC_SHORT.match(s)
    if m:
        _check(m.group(2) + m.group(3), max_digits)
        den_f = Fraction(m.group(3))
        if den_f == 0:
            return None
        return FastNumber(_signed(m.group(1), Fraction(m.group(2)) / den_f))
    m = _SCI.match(text.strip()) or _SCI.match(s)
    if m:
        _check(m.group(2), max_digits)
        exp = int(m.group(3)) if len(m.group(3)) < 8 else max_exponent + 1
        if abs(exp) > max_exponent:
            raise TooLarge(f"exponent {m.group(3)} over the limit {max_exponent}")
        mant = m.group(2)
        value = Fraction(mant) * Fraction(10) ** exp
        return FastNumber(_signed(m.group(1), value), None, _sig_digits(mant))
    m = _POW10.match(s)
    if m:
        exp = int(m.group(2)) if len(m.group(2)) < 8 else max_exponent + 1
        if abs(exp) > max_exponent:
            raise TooLarge(f"exponent {m.group(2)} over the limit {max_exponent}")
        return FastNumber(_signed(m.group(1), Fraction(10) ** exp))
    for pattern in (_REPEAT_BAR, _REPEAT_PAREN):
        m = pattern.match(s)
        if m:
            _check(m.group(2) + m.group(3) + m.group(4), max_digits)
            return FastNumber(_repeating(m.group(1), m.group(2), m.group(3), m.group(4)))
    m = _REPEAT_DOTS.match(s)
    if m:
        _check(m.group(2) + m.group(3), max_digits)
        fixed, period = _dots_period(m.group(3))
        return FastNumber(_repeating(m.group(1), m.group(2), fixed, period))
    return None
