"""Equality of expressions with variables, and of constants only known numerically, without
letting sympy run away on hostile input.

``symbolic_equal`` tries, cheapest first: structural equality, ``expand`` of the difference
(only when the expansion is small: ``(x+y+z+w)^{40}`` expands to 12,341 terms and takes
seconds, so it is skipped), evaluation at several fixed points (fast, and decides almost every
pair), then ``simplify`` only when the evaluations cannot decide and the expression is small.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import sympy

from referee.verifiers.math.guards import expansion_terms

__all__ = [
    "MAX_EXPANDED_TERMS",
    "PRECISION",
    "close",
    "numeric",
    "ratio_constant",
    "simplifies_to_zero",
    "symbolic_equal",
]

MAX_EXPANDED_TERMS = 500
"""``expand`` and ``simplify`` run only on expressions whose expansion has at most this many
terms (an upper bound computed from the tree, never by expanding)."""
_MAX_SIMPLIFY_OPS = 400

PRECISION = 50
_PROBES = (
    Fraction(7315, 10000),
    Fraction(13917, 10000),
    Fraction(21173, 10000),
    Fraction(4381, 10000),
    Fraction(17771, 10000),
    Fraction(28813, 10000),
)


def numeric(expr: Any) -> Any | None:
    try:
        val = sympy.N(expr, PRECISION)
    except (TypeError, ValueError, ArithmeticError, RecursionError):
        return None
    if not isinstance(val, sympy.Number | sympy.Add | sympy.Mul) or val.has(sympy.nan, sympy.zoo):
        return None
    return val


def close(a: Any, b: Any, rel_tol: float) -> bool | None:
    """|a - b| <= rel_tol * max(|a|, |b|), in arbitrary-precision arithmetic (no float overflow:
    two huge values must not both become inf and compare equal)."""
    try:
        diff = abs(sympy.N(a - b, PRECISION))
        scale = max(abs(a), abs(b))
        if not (diff.is_finite and scale.is_finite):
            return None
        if diff == 0:
            return True
        return bool(diff <= rel_tol * scale)
    except (TypeError, ValueError, ArithmeticError):
        return None


def simplifies_to_zero(expr: Any) -> bool:
    """``simplify(expr) == 0``, tried only on small expressions (simplify is unbounded)."""
    if expansion_terms(expr) > MAX_EXPANDED_TERMS or sympy.count_ops(expr) > _MAX_SIMPLIFY_OPS:
        return False
    try:
        return bool(sympy.simplify(expr) == 0)
    except (TypeError, ValueError, ArithmeticError, RecursionError, AttributeError):
        return False


def _probe(a: Any, b: Any, symbols: list[Any]) -> bool | None:
    """Evaluate both at fixed points: False on a clear difference, True when >= 3 points agree."""
    agree = 0
    for k in range(len(_PROBES)):
        subs = {
            s: sympy.Rational(
                _PROBES[(k + j) % len(_PROBES)].numerator,
                _PROBES[(k + j) % len(_PROBES)].denominator,
            )
            + j
            for j, s in enumerate(symbols)
        }
        av, bv = numeric(a.subs(subs)), numeric(b.subs(subs))
        if av is None or bv is None:
            continue
        same = close(av, bv, 1e-20)
        if same is None:
            continue
        if not same:
            return False
        agree += 1
        if agree >= 3:
            return True
    return None


def symbolic_equal(a: Any, b: Any) -> str | None:
    diff = a - b
    if diff == 0:
        return "symbolic"
    if expansion_terms(diff) <= MAX_EXPANDED_TERMS:
        try:
            if sympy.expand(diff) == 0:
                return "symbolic"
        except (TypeError, ValueError, ArithmeticError, RecursionError):
            pass
    symbols = sorted(diff.free_symbols, key=str)
    probed = _probe(a, b, symbols)
    if probed is not None:
        return "symbolic_numeric" if probed else None
    return "symbolic" if simplifies_to_zero(diff) else None


def ratio_constant(a: Any, b: Any) -> bool:
    """a = k * b for a nonzero constant k (an equation scaled on both sides)."""
    symbols = sorted((a.free_symbols | b.free_symbols), key=str)
    ratios = []
    for k in range(4):
        subs = {
            s: sympy.Rational(_PROBES[(k + j) % 6].numerator, _PROBES[(k + j) % 6].denominator) + j
            for j, s in enumerate(symbols)
        }
        av, bv = numeric(a.subs(subs)), numeric(b.subs(subs))
        if av is None or bv is None or bv == 0:
            return False
        ratios.append(sympy.N(av / bv, PRECISION))
    return ratios[0] != 0 and all(close(x, ratios[0], 1e-20) for x in ratios)
