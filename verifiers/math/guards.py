"""Cheap checks that refuse hostile answers before sympy sees them.

A power tower (``9^{9^{9^{9}}}``), a huge factorial, 10,000 nested braces or a 200,000-digit
literal can keep sympy busy for hours or exhaust memory. These checks are linear in the input and
run before any evaluation; the process pool's deadline is the second line of defence.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Any

import sympy

from referee.verifiers.math.config import MathConfig

__all__ = [
    "MAX_DEGREE",
    "Rejected",
    "check_expression",
    "check_text",
    "expansion_terms",
    "polynomial_degree",
]

_OPEN = "{[("
_CLOSE = "}])"
_MAX_NODES = 3_000
_MAX_SYMBOLIC_EXPONENT = 200
_MIN_COSTLY_MATRIX = 6
"""A matrix of symbols this many rows or more is not inverted or raised to a power (sympy takes
0.7 s on a 5x5 of distinct symbols and minutes on a 6x6)."""
_MAX_MATRIX_POWER_TERMS = 2_000
"""A power of a matrix of symbols whose entries would have more than about 2,000 terms is not
computed (a 2x2's 20th power takes 0.4 s, its 40th 5 s, a 3x3's 10th 4 s)."""
MAX_DEGREE = 2_000
"""An expression with variables of higher total degree (``((x+1)^{200}+1)^{200}``) is refused:
even evaluating it at one point makes numbers of hundreds of thousands of digits."""
_HUGE = float("inf")
_MATRIX_BODY = re.compile(r"\\begin\{(?:[pbBvV]?matrix|smallmatrix)\}(.*?)\\end\{", re.S)
_NUMERIC_COMMANDS = re.compile(r"\\(?:[dt]?frac|sqrt|cdot|times|left|right|pi)(?![A-Za-z])")


class Rejected(ValueError):
    """A guard refused to evaluate the answer; the message says which one."""


def check_text(text: str, config: MathConfig) -> None:
    if len(text) > config.max_answer_chars:
        raise Rejected(f"answer has {len(text)} characters (limit {config.max_answer_chars})")
    depth = deepest = 0
    run = longest = 0
    for ch in text:
        if ch in _OPEN:
            depth += 1
            deepest = max(deepest, depth)
        elif ch in _CLOSE:
            depth -= 1
        if ch.isdigit():
            run += 1
            longest = max(longest, run)
        else:
            run = 0
    if deepest > config.max_nesting:
        raise Rejected(f"nesting depth {deepest} (limit {config.max_nesting})")
    if longest > config.max_digits:
        raise Rejected(f"number literal has {longest} digits (limit {config.max_digits})")
    if text.count("^") > 64:
        raise Rejected(f"{text.count('^')} exponents (limit 64)")
    if "\\det" in text or "vmatrix" in text:
        _check_determinants(text)


def _check_determinants(text: str) -> None:
    """The LaTeX parser expands ``\\det`` of a written-out matrix (and a ``vmatrix``) while it
    reads it, before :func:`check_expression` sees the tree: a 5x5 of symbols takes 3 s, a 6x6
    minutes. Such an answer with a matrix of symbols of 6 rows or more is refused here."""
    for body in _MATRIX_BODY.findall(text):
        rows = body.strip().removesuffix("\\\\").count("\\\\") + 1
        if rows >= _MIN_COSTLY_MATRIX and re.search("[A-Za-z]", _NUMERIC_COMMANDS.sub("", body)):
            raise Rejected(f"determinant of a {rows}-row matrix of symbols")


def _log10_abs(expr: Any) -> float:
    """An upper bound of log10|expr| for a numeric subtree; 0.0 for small or non-numeric."""
    if isinstance(expr, sympy.Integer):
        p = abs(int(expr))
        return p.bit_length() * 0.30103 if p else 0.0
    if isinstance(expr, sympy.Rational):
        return max(abs(int(expr.p)).bit_length(), abs(int(expr.q)).bit_length()) * 0.30103
    if isinstance(expr, sympy.Float):
        return max(0.0, math.log10(abs(float(expr))) if expr != 0 else 0.0)
    return 1.0


def _rational(e: Any, depth: int = 0) -> Fraction | None:
    """The exact value of a small rational tree (``Pow(2, -1)``, ``(1+2)/6``), or None."""
    if isinstance(e, sympy.Rational):
        return Fraction(int(e.p), int(e.q))
    if depth > 20 or not e.args:
        return None
    if isinstance(e, sympy.Add | sympy.Mul):
        parts = [_rational(a, depth + 1) for a in e.args]
        if any(p is None for p in parts):
            return None
        total = Fraction(0) if isinstance(e, sympy.Add) else Fraction(1)
        for p in parts:
            assert p is not None
            total = total + p if isinstance(e, sympy.Add) else total * p
        return total
    if isinstance(e, sympy.Pow) and isinstance(e.args[1], sympy.Integer):
        base = _rational(e.args[0], depth + 1)
        n = int(e.args[1])
        if base is None or abs(n) > 64 or (base == 0 and n < 0):
            return None
        return base**n
    return None


def _exponent_value(exp: Any) -> float | None:
    """The value of a numeric exponent that has passed the guards (at most about 10^8 in
    size), or None when it has no plain numeric value."""
    if isinstance(exp, sympy.Integer | sympy.Rational | sympy.Float):
        return float(exp)
    exact = _rational(exp)
    if exact is not None:
        return float(exact)
    try:
        value = complex(sympy.N(exp, 15))
    except (TypeError, ValueError, ArithmeticError, RecursionError, AttributeError):
        return None
    return abs(value) if math.isfinite(abs(value)) else None


def _log_comb(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


def expansion_terms(expr: Any) -> float:
    """An upper bound of the number of terms ``expand(expr)`` makes, from the tree alone (a
    power of a sum of t terms to the n-th has at most C(n+t-1, t-1)); inf when astronomical.
    The largest subtree counts too: ``sin((x+y)^{40})`` expands inside the sine. Linear in the
    size of the tree."""
    worst = 1.0

    def terms(e: Any) -> float:
        nonlocal worst
        if not e.args:
            return 1.0
        if isinstance(e, sympy.Add):
            t = sum(terms(a) for a in e.args)
        elif isinstance(e, sympy.Mul):
            t = math.prod(terms(a) for a in e.args)
        elif isinstance(e, sympy.Pow):
            base_terms = terms(e.args[0])
            exp = e.args[1]
            t = base_terms
            if isinstance(exp, sympy.Integer) and base_terms > 1:
                n = abs(int(exp))
                k = int(min(base_terms, 1e6))
                t = _HUGE if n > 10_000 else math.exp(min(_log_comb(n + k - 1, k - 1), 700.0))
        else:
            t = 1.0
            for a in e.args:
                terms(a)
        worst = max(worst, t)
        return t

    terms(expr)
    return worst


def polynomial_degree(expr: Any) -> float:
    """An upper bound of the total degree in the variables (0 for constants), linear in the
    size of the tree."""
    if not expr.args:
        return 1.0 if isinstance(expr, sympy.Symbol) else 0.0
    if isinstance(expr, sympy.Add):
        return max(polynomial_degree(a) for a in expr.args)
    if isinstance(expr, sympy.Mul):
        return sum(polynomial_degree(a) for a in expr.args)
    if isinstance(expr, sympy.Pow):
        base, exp = expr.args
        base_degree, exp_degree = polynomial_degree(base), polynomial_degree(exp)
        if exp_degree or not base_degree:
            return base_degree + exp_degree
        value = _exponent_value(exp)
        return base_degree * (abs(value) if value is not None else _HUGE)
    return max(polynomial_degree(a) for a in expr.args)


def check_expression(expr: Any, config: MathConfig) -> None:
    """Walk an unevaluated sympy tree and refuse anything whose value would be enormous."""
    limit = config.max_magnitude_log10
    nodes = 0

    def bound(e: Any) -> float:
        nonlocal nodes
        nodes += 1
        if nodes > _MAX_NODES:
            raise Rejected(f"expression has more than {_MAX_NODES} nodes")
        if isinstance(e, sympy.Pow | sympy.MatPow):
            base, exp = e.args
            rows = getattr(base, "rows", None)  # a matrix's (a 6x6 of symbols inverts for minutes)
            costly = isinstance(rows, int) and rows >= _MIN_COSTLY_MATRIX
            if costly and exp != 1 and base.free_symbols:
                raise Rejected(f"power or inverse of a {rows}x{rows} matrix of symbols")
            if isinstance(rows, int) and exp.is_Integer and base.free_symbols:
                v = len(base.free_symbols)  # an entry of M^k has up to C(k+v-1, v-1) terms
                if _log_comb(abs(int(exp)) + v - 1, v - 1) > math.log(_MAX_MATRIX_POWER_TERMS):
                    raise Rejected(f"power {exp} of a {rows}x{rows} matrix of symbols")
        if isinstance(e, sympy.Pow):
            base, exp = e.args
            lb, lx = bound(base), bound(exp)
            if exp.free_symbols:
                return float(lb)
            if base.free_symbols:
                if exp.is_Integer and abs(int(exp)) > _MAX_SYMBOLIC_EXPONENT:
                    raise Rejected(f"symbolic power with exponent {exp} is too large to expand")
                if lx > 3:
                    raise Rejected("symbolic power with a huge exponent")
                return float(lb)
            if lx > 8:
                raise Rejected("power tower too large to evaluate")
            value = _exponent_value(exp)
            if value is not None:  # 10^{(\sqrt{13}-5)/6}, 6^{-1}: the exponent is small
                est = abs(value) * max(lb, 0.30103)
            else:
                est = (10.0**lx) * max(lb, 0.30103)
            if est > limit:
                raise Rejected(f"power of about 10^{est:.3g} (limit 10^{limit:g})")
            return float(est)
        if isinstance(e, sympy.factorial | sympy.gamma | sympy.factorial2 | sympy.subfactorial):
            arg = e.args[0]
            la = bound(arg)
            if la > 6:
                raise Rejected("factorial of a huge number")
            n = 10.0**la
            est = n * max(math.log10(max(n, 2.0)), 1.0)
            if est > limit:
                raise Rejected(f"factorial of about 10^{est:.3g} (limit 10^{limit:g})")
            return float(est)
        if isinstance(e, sympy.exp):
            la = bound(e.args[0])
            if la > 6:
                raise Rejected("exponential of a huge number")
            est = (10.0**la) * 0.4343
            if est > limit:
                raise Rejected(f"exponential of about 10^{est:.3g} (limit 10^{limit:g})")
            return float(est)
        if isinstance(e, sympy.Sum | sympy.Product):
            for limits in e.limits:
                if len(limits) == 3 and max(bound(limits[1]), bound(limits[2])) > 4:
                    raise Rejected("sum or product over more than 10^4 terms")
            return bound(e.function) * (10.0**4 if isinstance(e, sympy.Product) else 1.0) + 4.0
        if isinstance(e, sympy.binomial):
            for a in e.args:
                if bound(a) > 5:
                    raise Rejected("binomial of a huge number")
            return float(0.30103 * 10.0 ** bound(e.args[0]))
        if not e.args:
            return _log10_abs(e)
        child = [bound(a) for a in e.args]
        if isinstance(e, sympy.Mul):
            return sum(child)
        return max(child) + 1.0

    if isinstance(expr, sympy.MatrixBase):
        if expr.rows * expr.cols > _MAX_NODES:
            raise Rejected(f"matrix of {expr.rows}x{expr.cols} entries is too large")
        for entry in expr:
            check_expression(entry, config)
        return
    b = bound(expr)
    if b > limit:
        raise Rejected(f"value of about 10^{b:.3g} (limit 10^{limit:g})")
    if getattr(expr, "free_symbols", None):
        degree = polynomial_degree(expr)
        if degree > MAX_DEGREE:
            raise Rejected(f"polynomial of degree about {degree:.3g} (limit {MAX_DEGREE})")
