"""Deciding whether two parsed answers are equal, with the cheapest sound method first.

The method follows the reference's type: exact rational arithmetic for numbers (never float
rounding: 1/2^98 and 1/2^99 differ), high-precision numeric comparison with a relative tolerance
for irrational constants, a decimal-approximation rule for answers written as decimals, and for
expressions with variables: expansion, then evaluation at several fixed points (fast, rejects
almost every wrong answer), then ``simplify`` only when the evaluations cannot decide.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

import sympy
from sympy.core.function import AppliedUndef

from referee.verifiers.math.config import MathConfig
from referee.verifiers.math.guards import expansion_terms, polynomial_degree
from referee.verifiers.math.parsing import text_as_math, to_real_set
from referee.verifiers.math.symbolic import (
    MAX_EXPANDED_TERMS,
    PRECISION,
    close,
    numeric,
    ratio_constant,
    simplifies_to_zero,
    symbolic_equal,
)
from referee.verifiers.math.values import (
    Equation,
    IntervalSet,
    MatrixValue,
    Relation,
    Scalar,
    Seq,
    Text,
    Value,
)

__all__ = ["equal"]


def _percent_variants(v: Scalar, policy: str) -> list[Scalar]:
    if not v.percent or policy == "number":
        return [v]
    hundredth = Scalar(
        exact=v.exact / 100 if v.exact is not None else None,
        expr=v.expr / 100 if v.expr is not None else None,
    )
    return [hundredth] if policy == "fraction" else [v, hundredth]


def _terminating(value: Fraction) -> bool:
    q = value.denominator
    for prime in (2, 5):
        while q % prime == 0:
            q //= prime
    return q == 1


def _rounds_to(scaled: Fraction, target: int, truncation: bool) -> bool:
    """``target`` is ``scaled`` rounded (half up or half down), or truncated, to an integer."""
    floor = scaled.numerator // scaled.denominator
    candidates = {floor, floor + 1} if scaled != floor else {floor}
    truncated = floor if scaled >= 0 else -((-scaled.numerator) // scaled.denominator)
    rounded = {c for c in candidates if abs(scaled - c) <= Fraction(1, 2)}
    return (truncation and target == truncated) or target in rounded


def _approx_match(
    decimal: Scalar,
    other_value: Any,
    other_exact: Fraction | None,
    config: MathConfig,
    truncation: bool = True,
) -> bool:
    """``decimal`` (written with k places) is ``other`` rounded (or, when ``truncation``,
    truncated) to k places, where ``other`` has no finite decimal expansion (an irrational, or a
    rational such as 1/3). A decimal reference must be the rounding of the answer's value."""
    places = decimal.decimal_places
    if places is None or config.approx_min_sig_digits <= 0:
        return False
    if decimal.sig_digits < config.approx_min_sig_digits or decimal.exact is None:
        return False
    target = decimal.exact * 10**places
    if target.denominator != 1:
        return False
    if other_exact is not None:
        if _terminating(other_exact):
            return False  # a value with a finite decimal expansion must be written exactly
        return _rounds_to(other_exact * 10**places, target.numerator, truncation)
    try:
        num = sympy.N(other_value * 10**places, PRECISION + places)
        if not num.is_real or not num.is_finite:
            return False
        scaled = Fraction(str(sympy.Float(num, PRECISION + places)))
    except (TypeError, ValueError, ArithmeticError):
        return False
    return _rounds_to(scaled, target.numerator, truncation)


def _constant_equal(r: Any, p: Any, config: MathConfig) -> str | None:
    if r.has(sympy.zoo, sympy.nan) or p.has(sympy.zoo, sympy.nan):
        return None  # undefined (1/0) equals nothing, not even itself
    if r == p:
        return "exact"
    if r.is_infinite or p.is_infinite or r.has(sympy.oo, sympy.zoo) or p.has(sympy.oo, sympy.zoo):
        return None
    rn, pn = numeric(r), numeric(p)
    if rn is None or pn is None:
        return "symbolic" if simplifies_to_zero(r - p) else None
    same = close(rn, pn, config.rel_tol)
    if same is None:
        return "symbolic" if simplifies_to_zero(r - p) else None
    return "numeric" if same else None


def _scalar_equal(r: Scalar, p: Scalar, config: MathConfig) -> str | None:
    for rv in _percent_variants(r, config.percent):
        for pv in _percent_variants(p, config.percent):
            method = _scalar_pair(rv, pv, config)
            if method:
                return method
    return None


def _within_tolerance(r: Scalar, p: Scalar, config: MathConfig) -> bool:
    """|r - p| <= abs_tol (numbers only; off when abs_tol is 0)."""
    if config.abs_tol <= 0:
        return False
    if r.exact is not None and p.exact is not None:
        return abs(r.exact - p.exact) <= Fraction(config.abs_tol)
    rs, ps = r.sym(), p.sym()
    if rs.free_symbols or ps.free_symbols:
        return False
    rn, pn = numeric(rs), numeric(ps)
    if rn is None or pn is None:
        return False
    try:
        diff = abs(sympy.N(rn - pn, PRECISION))
        return bool(diff.is_finite and diff <= config.abs_tol)
    except (TypeError, ValueError, ArithmeticError):
        return False


def _scalar_pair(r: Scalar, p: Scalar, config: MathConfig) -> str | None:
    method = _scalar_pair_exact(r, p, config)
    if method is None and _within_tolerance(r, p, config):
        return "abs_tol"
    return method


def _scalar_pair_exact(r: Scalar, p: Scalar, config: MathConfig) -> str | None:
    if r.exact is not None and p.exact is not None:
        if r.exact == p.exact:
            return "exact"
        if _approx_match(p, None, r.exact, config) or _approx_match(
            r, None, p.exact, config, truncation=False
        ):
            return "approx_decimal"
        return None
    rs, ps = r.sym(), p.sym()
    if p.degrees and not r.degrees and config.degrees_equal_radians and rs.has(sympy.pi):
        ps = ps * sympy.pi / 180
    if not rs.free_symbols and not ps.free_symbols:
        method = _constant_equal(rs, ps, config)
        if method:
            return method
        if p.exact is not None and _approx_match(p, rs, None, config):
            return "approx_decimal"
        if r.exact is not None and _approx_match(r, ps, None, config, truncation=False):
            return "approx_decimal"
        return None
    return symbolic_equal(rs, ps)


def _same_function(a: Any, b: Any) -> dict[Any, Any] | None:
    """``f(n)`` and ``f(x)``: the same function of dummy arguments; the renaming b -> a."""
    if not (isinstance(a, AppliedUndef) and isinstance(b, AppliedUndef)):
        return None
    if a.func != b.func or len(a.args) != len(b.args):
        return None
    if not all(isinstance(x, sympy.Symbol) for x in (*a.args, *b.args)):
        return None
    return dict(zip(b.args, a.args, strict=True))


def _renamed(v: Value, names: dict[Any, Any]) -> Value:
    if isinstance(v, Scalar) and v.expr is not None:
        return Scalar(expr=v.expr.xreplace(names))
    return v


def _equation_equal(r: Equation, p: Equation, config: MathConfig) -> str | None:
    if r.simple_lhs and p.simple_lhs and r.lhs == p.lhs:
        return equal(r.rhs, p.rhs, config)
    names = _same_function(r.lhs, p.lhs)
    if names is not None:
        return equal(r.rhs, _renamed(p.rhs, names), config)
    if not isinstance(r.rhs, Scalar) or not isinstance(p.rhs, Scalar):
        return None
    rd, pd = r.lhs - r.rhs.sym(), p.lhs - p.rhs.sym()
    if r.lhs == p.lhs and equal(r.rhs, p.rhs, config):
        return "equation"
    if symbolic_equal(rd, pd) or symbolic_equal(rd, -pd):
        return "equation"
    if rd.free_symbols == pd.free_symbols and ratio_constant(rd, pd):
        return "equation_scaled"
    return None


def _unordered_equal(r: tuple[Value, ...], p: tuple[Value, ...], config: MathConfig) -> bool:
    """The same items in any order, each item of one found in the other (a repeated item, as
    in a set, counts once)."""
    if not r or not p:
        return len(r) == len(p)
    matched = [False] * len(p)
    for item in r:
        hit = False
        for j, cand in enumerate(p):
            if equal(item, cand, config):
                matched[j] = hit = True
                if len(r) == len(p):
                    break
        if not hit:
            return False
    return all(matched)


def _seq_equal(r: Seq, p: Seq, config: MathConfig) -> str | None:
    if r.kind == "tuple" and p.kind == "tuple":
        if (r.interval_like or p.interval_like) and (r.open, r.close) != (p.open, p.close):
            return None
        if len(r.items) == len(p.items) and all(
            equal(a, b, config) for a, b in zip(r.items, p.items, strict=True)
        ):
            return "tuple"
        return None
    if "set" in (r.kind, p.kind) and "tuple" in (r.kind, p.kind):
        return None
    # a bare list against a tuple: order matters; a bare list in the reference is a set of
    # answers unless ordered_lists (MATH: "enter all the solutions, separated by commas")
    ordered = "tuple" in (r.kind, p.kind) or (
        config.ordered_lists and r.kind == "list" and p.kind == "list"
    )
    if ordered:
        if len(r.items) == len(p.items) and all(
            equal(a, b, config) for a, b in zip(r.items, p.items, strict=True)
        ):
            return "tuple"
        return None
    return "set" if _unordered_equal(r.items, p.items, config) else None


def _canon_set(x: Any) -> Any:
    return sympy.Interval(sympy.S.NegativeInfinity, sympy.S.Infinity) if x == sympy.S.Reals else x


def _real_sets_equal(a: Any, b: Any, config: MathConfig) -> str | None:
    a, b = _canon_set(a), _canon_set(b)
    pieces_a = list(a.args) if isinstance(a, sympy.Union) else [a]
    pieces_b = list(b.args) if isinstance(b, sympy.Union) else [b]
    if len(pieces_a) != len(pieces_b):
        return None
    left = list(pieces_b)
    for x in pieces_a:
        for j, y in enumerate(left):
            if type(x) is type(y) and _piece_equal(x, y, config):
                del left[j]
                break
        else:
            return None
    return "interval"


def _piece_equal(x: Any, y: Any, config: MathConfig) -> bool:
    if isinstance(x, sympy.Interval):
        if (x.left_open, x.right_open) != (y.left_open, y.right_open):
            return False
        return bool(_sym_equal(x.start, y.start, config) and _sym_equal(x.end, y.end, config))
    if isinstance(x, sympy.FiniteSet):
        return _unordered_equal(
            tuple(Scalar(expr=v) for v in x.args), tuple(Scalar(expr=v) for v in y.args), config
        )
    return bool(x == y)


def _sym_equal(a: Any, b: Any, config: MathConfig) -> str | None:
    if a == b:
        return "exact"
    if a.is_infinite or b.is_infinite:
        return None
    return _scalar_equal(Scalar(expr=a), Scalar(expr=b), config)


_ARTICLE = re.compile(r"^(?:the|an?)\s+")


def _text_of(v: Value) -> str | None:
    """A value as a word: ``\\text{E}`` and ``E`` (read as Euler's number) are the same letter."""
    if isinstance(v, Text):
        return v.text
    if isinstance(v, Scalar) and isinstance(v.expr, sympy.Symbol):
        return str(v.expr).casefold()
    if isinstance(v, Scalar) and v.expr is not None and v.expr in (sympy.E, sympy.I):
        return "e" if v.expr == sympy.E else "i"
    return None


def equal(ref: Value, pred: Value, config: MathConfig) -> str | None:
    """The method that shows ``pred`` equals ``ref``, or None when they differ."""
    if isinstance(pred, Equation) and pred.simple_lhs and not isinstance(ref, Equation):
        pred = pred.rhs
    if isinstance(ref, Equation) and ref.simple_lhs and not isinstance(pred, Equation):
        ref = ref.rhs
    if isinstance(ref, Text) or isinstance(pred, Text):
        rt, pt = _text_of(ref), _text_of(pred)
        if rt is not None and pt is not None and _ARTICLE.sub("", rt) == _ARTICLE.sub("", pt):
            return "text"  # "the circle" is "circle"
        # "xw-yz" against a determinant that equals it, "p - q" against "p-q": short runs of
        # letters are algebra when both sides read as such (words stay words: east is not tase);
        # two plain runs stay names (the angle ABD is not ADB)
        if isinstance(ref, Text) and isinstance(pred, Text):
            if not any(c in " -" for c in ref.written + pred.written):
                return None
        rm = text_as_math(ref, config) if isinstance(ref, Text) else ref
        pm = text_as_math(pred, config) if isinstance(pred, Text) else pred
        if rm is None or pm is None or _text_of(rm) is not None or _text_of(pm) is not None:
            return None
        return equal(rm, pm, config)
    if isinstance(ref, Scalar) and isinstance(pred, Scalar):
        return _scalar_equal(ref, pred, config)
    if isinstance(ref, Equation) and isinstance(pred, Equation):
        return _equation_equal(ref, pred, config)
    if isinstance(ref, Seq) and isinstance(pred, Seq):
        if ref.interval_like and pred.interval_like:
            return _seq_equal(ref, pred, config)
        return _seq_equal(ref, pred, config)
    if isinstance(ref, Seq) and len(ref.items) == 1 and not isinstance(pred, Seq):
        return equal(ref.items[0], pred, config)
    if isinstance(pred, Seq) and len(pred.items) == 1 and not isinstance(ref, Seq):
        return equal(ref, pred.items[0], config)
    if isinstance(ref, MatrixValue | Seq) and isinstance(pred, MatrixValue | Seq):
        rm, pm = _as_matrix(ref), _as_matrix(pred)
        if rm is None or pm is None or rm.shape != pm.shape:
            return None
        ok = all(_sym_equal(a, b, config) for a, b in zip(rm, pm, strict=True))
        return "matrix" if ok else None
    if isinstance(ref, IntervalSet | Seq | Relation) or isinstance(
        pred, IntervalSet | Seq | Relation
    ):
        rs, ps = _as_set(ref), _as_set(pred)
        if rs is not None and ps is not None:
            return _real_sets_equal(rs, ps, config)
        if isinstance(ref, Relation) and isinstance(pred, Relation):
            return "relation" if ref.value == pred.value else None
    return None


_MAX_RELATION_DEGREE = 12
"""Solving an inequality for its set of solutions is only tried up to this degree: sympy's
solver takes seconds on ``(x+1)^{200} > 0``."""


def _as_set(v: Value) -> Any | None:
    if isinstance(v, Relation):
        try:
            syms = v.value.free_symbols
            sides = [a for a in v.value.atoms(sympy.core.relational.Relational)]
            small = all(
                polynomial_degree(r.lhs - r.rhs) <= _MAX_RELATION_DEGREE
                and expansion_terms(r.lhs - r.rhs) <= MAX_EXPANDED_TERMS
                for r in sides
            )
            if len(syms) == 1 and small:
                return v.value.as_set()
        except (NotImplementedError, TypeError, ValueError, AttributeError):
            return None
        return None
    if isinstance(v, Seq) and v.kind == "list" and all(isinstance(x, Scalar) for x in v.items):
        # a bare list of solutions against a set or a relation: ``1, 2`` is ``x \in \{1, 2\}``
        return sympy.FiniteSet(*(x.sym() for x in v.items if isinstance(x, Scalar)))
    return to_real_set(v)


def _as_matrix(v: Value) -> Any | None:
    if isinstance(v, MatrixValue):
        m = v.value
        return m.T if m.shape[0] == 1 else m  # a row and a column vector compare alike
    if (
        isinstance(v, Seq)
        and v.kind in ("tuple", "list")
        and all(isinstance(x, Scalar) for x in v.items)
    ):
        return sympy.ImmutableMatrix([[x.sym()] for x in v.items if isinstance(x, Scalar)])
    return None
