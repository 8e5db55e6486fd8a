"""Scalars: an answer piece read as an exact number or a guarded sympy expression.

The fast number reader first (exact ``Fraction``, no parser), then the small LaTeX parser,
then latex2sympy2_extended; every sympy tree passes
:func:`~referee.verifiers.math.guards.check_expression` before anything evaluates it. Results are
cached: the rollouts of a group often share their answer string.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from typing import Any

import sympy
from latex2sympy2_extended.latex2sympy2 import (
    ConversionConfig,
    NormalizationConfig,
    _Latex2Sympy,
    normalize_latex,
)

from referee.verifiers.math.config import MathConfig
from referee.verifiers.math.fast_latex import parse_simple_latex
from referee.verifiers.math.fast_numbers import TooLarge, parse_fast_number
from referee.verifiers.math.guards import Rejected, check_expression
from referee.verifiers.math.values import (
    Equation,
    IntervalSet,
    MatrixValue,
    Relation,
    Scalar,
    Seq,
    Value,
)

__all__ = ["Unparseable", "from_sympy", "latex_to_sympy", "read_scalar"]

_I = sympy.Symbol("i")
_DOIT_HINTS = {"risch": False, "meijerg": False, "heurisch": False}
"""An integral is evaluated by the cheap methods only: ``\\int_0^1 e^{-x^2}\\sin(x^7)\\,dx`` ran
sympy's Risch and Meijer-G searches for minutes; the common ones (polynomials, ``\\sin^2``,
``e^{-x}`` to infinity, ``\\frac{1}{1+x^2}``) still come out exact."""


class _Converter(_Latex2Sympy):  # type: ignore[misc]
    """latex2sympy2_extended's converter, leaving binomials unevaluated for the guards
    (``\\binom{1000000}{500000}`` was computed while parsing, before any guard saw it)."""

    def convert_binom(self, binom: Any) -> Any:
        top, bottom = self.convert_expr(binom.upper), self.convert_expr(binom.lower)
        return sympy.binomial(top, bottom, evaluate=False)


_NORMALIZATION = NormalizationConfig()
_CONVERSION = ConversionConfig()


def latex2sympy(s: str) -> Any:
    """latex2sympy2_extended's ``latex2sympy`` with its defaults, through :class:`_Converter`."""
    converter = _Converter(None, None, False, config=_CONVERSION)
    return converter.parse(normalize_latex(s, _NORMALIZATION))


class Unparseable(ValueError):
    """The answer is not something the verifier can read as math."""


def latex_to_sympy(s: str, config: MathConfig) -> Any:
    """Parse (fast subset first, then latex2sympy2_extended), guard, evaluate. Cached: the
    rollouts of a group often share their answer string."""
    ok, value = _latex_to_sympy_cached(s, config)
    if ok:
        return value
    kind, message = value
    raise (Rejected if kind == "rejected" else Unparseable)(message)


@lru_cache(maxsize=8192)
def _latex_to_sympy_cached(s: str, config: MathConfig) -> tuple[bool, Any]:
    try:
        return True, _latex_to_sympy_uncached(s, config)
    except Rejected as exc:
        return False, ("rejected", str(exc))
    except Unparseable as exc:
        return False, ("unparseable", str(exc))


def _latex_to_sympy_uncached(s: str, config: MathConfig) -> Any:
    expr = parse_simple_latex(s)
    if expr is None:
        try:
            expr = latex2sympy(s)
        except Exception as exc:  # the ANTLR parser raises many types; none is our fault
            raise Unparseable(f"cannot parse {s[:80]!r}: {type(exc).__name__}") from exc
    check_expression(expr, config)
    try:
        if isinstance(expr, sympy.MatrixBase):
            return sympy.ImmutableMatrix(expr.doit(**_DOIT_HINTS))
        value = expr.doit(**_DOIT_HINTS) if hasattr(expr, "doit") else expr
        if isinstance(value, sympy.MatPow):  # a literal matrix's inverse or power: its value
            value = sympy.ImmutableMatrix(value.doit(**_DOIT_HINTS))
        if _I in getattr(value, "free_symbols", ()):
            value = value.subs(_I, sympy.I)
        return value
    except (TypeError, ValueError, ArithmeticError, AttributeError, RecursionError) as exc:
        raise Unparseable(f"cannot evaluate {s[:80]!r}: {type(exc).__name__}") from exc


def read_scalar(s: str, config: MathConfig) -> Value:
    try:
        fast = parse_fast_number(s, config.max_digits, int(config.max_magnitude_log10))
    except TooLarge as exc:
        raise Rejected(str(exc)) from exc
    if fast is not None:
        return Scalar(
            exact=fast.value, decimal_places=fast.decimal_places, sig_digits=fast.sig_digits
        )
    value = latex_to_sympy(s, config)
    return from_sympy(value)


def from_sympy(value: Any) -> Value:
    if isinstance(value, sympy.MatrixBase):
        return MatrixValue(sympy.ImmutableMatrix(value))
    if isinstance(value, sympy.Set):
        if isinstance(value, sympy.FiniteSet):
            return Seq(tuple(from_sympy(a) for a in value.args), "set")
        return IntervalSet(value)
    if isinstance(value, sympy.Equality):
        lhs_simple = isinstance(value.lhs, sympy.Symbol | sympy.core.function.AppliedUndef)
        return Equation(value.lhs, from_sympy(value.rhs), lhs_simple)
    if isinstance(value, sympy.core.relational.Relational | sympy.And | sympy.Or):
        return Relation(value)
    if isinstance(value, sympy.Rational):
        return Scalar(exact=Fraction(int(value.p), int(value.q)), expr=value)
    if isinstance(value, sympy.Tuple | tuple):
        return Seq(tuple(from_sympy(a) for a in value), "tuple", "(", ")")
    if isinstance(value, sympy.Basic):
        return Scalar(expr=value)
    raise Unparseable(f"unsupported value {type(value).__name__}")
