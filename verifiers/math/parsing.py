r"""From an answer string to a parsed :mod:`~referee.verifiers.math.values` form.

Structure (sets, tuples, intervals, unions, equations, inequalities, ``\pm``, lists) is read
here; scalar pieces go to the fast number reader first and to latex2sympy2_extended only when
they need it. Every sympy tree is checked by :func:`~referee.verifiers.math.guards.check_expression`
before anything evaluates it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import sympy

from referee.verifiers.math.config import MathConfig
from referee.verifiers.math.guards import check_text
from referee.verifiers.math.normalization import normalize
from referee.verifiers.math.prose import prose_words
from referee.verifiers.math.scalars import Unparseable, from_sympy, latex_to_sympy, read_scalar
from referee.verifiers.math.values import (
    Equation,
    IntervalSet,
    Relation,
    Scalar,
    Seq,
    Text,
    Value,
)

__all__ = ["Unparseable", "parse_answer", "text_as_math", "to_real_set"]

_REL_OPS = re.compile(
    r"\\leqslant|\\geqslant|\\leq|\\geq|\\le(?![a-z])|\\ge(?![a-z])|\\lt(?![a-z])|"
    r"\\gt(?![a-z])|\\neq|\\ne(?![a-z])|<=|>=|<|>"
)
_REL_KIND = {
    "<": "lt",
    r"\lt": "lt",
    ">": "gt",
    r"\gt": "gt",
    "<=": "le",
    r"\le": "le",
    r"\leq": "le",
    r"\leqslant": "le",
    ">=": "ge",
    r"\ge": "ge",
    r"\geq": "ge",
    r"\geqslant": "ge",
    r"\ne": "ne",
    r"\neq": "ne",
}
_GREEK = r"\\(?:alpha|beta|gamma|delta|theta|phi|varphi|lambda|mu|sigma|omega|psi|rho|tau)"
_VAR = re.compile(rf"^(?:[a-zA-Z]|{_GREEK})(?:_\{{?[a-zA-Z0-9]+\}}?)?(?:\s*\(\s*[a-zA-Z]\s*\))?$")
_FUNC_LHS = re.compile(r"^[a-zA-Z](?:_\{?[a-zA-Z0-9]+\}?)?\s*\([a-zA-Z, ]*\)$")
_VAR_TUPLE = re.compile(r"^\(\s*[a-zA-Z](?:\s*,\s*[a-zA-Z])+\s*\)$")
_IN_PREFIX = re.compile(r"^([a-zA-Z](?:_\{?[a-zA-Z0-9]+\}?)?)\s*\\in\s*(.+)$")
_SET_BUILDER = re.compile(
    r"^\\\{\s*([a-zA-Z])(?:\s*\\in\s*\\mathbb\s*\{?R\}?)?\s*(?:\||:|\\mid)\s*(.+?)\s*\\\}$"
)
"""Set-builder notation, ``\\{x \\mid x > 0\\}`` or ``\\{x \\in \\mathbb{R} : x \\le 3\\}``: the set
its condition describes."""
_MATRIX = re.compile(r"\\begin\{[pbvBV]?matrix\}|\\begin\{array\}")
_EMPTY = re.compile(r"^(?:\\emptyset|\\varnothing|\\\{\s*\\\}|\{\s*\})$")
_PLAIN_NUMBER = re.compile(r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:/\d+)?$")
_SEPARATORS = (",", " and ")
_ATOM = rf"(?:[A-Za-z]|{_GREEK})(?:_\s*(?:\{{[A-Za-z0-9,]+\}}|[A-Za-z0-9]))?'*"
_NAME_PART = re.compile(
    rf"^(?:\\angle\s*|m\s*\\angle\s*|\\overline\s*)?(?:{_ATOM}|\{{(?:{_ATOM})+\}})+"
    rf"(?:\s*\((?:\s*[A-Za-z0-9]+\s*,?)+\))?$"
)
_NAME_FRAC = re.compile(r"^\\frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}$")


def _top_level(s: str) -> Iterator[tuple[int, str]]:
    """(index, char) of characters at bracket depth 0 (``\\{`` counts as a bracket)."""
    depth = 0
    i = 0
    n = len(s)
    while i < n:
        ch = s[i]
        if ch == "\\" and i + 1 < n and s[i + 1] in "{}":
            depth += 1 if s[i + 1] == "{" else -1
            i += 2
            continue
        if ch in "{[(":
            depth += 1
        elif ch in "}])":
            depth -= 1
        elif depth == 0:
            yield i, ch
        i += 1


def _split_top(s: str, sep: str) -> list[str]:
    parts: list[str] = []
    last = 0
    positions = {i for i, _ in _top_level(s)}
    i = 0
    while i <= len(s) - len(sep):
        if i in positions and s.startswith(sep, i):
            parts.append(s[last:i])
            last = i + len(sep)
            i = last
            continue
        i += 1
    parts.append(s[last:])
    return parts


def _closing_index(s: str, start: int) -> int:
    depth = 0
    i = start
    while i < len(s):
        ch = s[i]
        if ch == "\\" and i + 1 < len(s) and s[i + 1] in "{}":
            depth += 1 if s[i + 1] == "{" else -1
            if depth == 0:
                return i + 1
            i += 2
            continue
        if ch in "{[(":
            depth += 1
        elif ch in "}])":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def _relation(s: str, config: MathConfig) -> Value | None:
    ops = [(m.start(), m.end(), m.group(0)) for m in _REL_OPS.finditer(s)]
    top = {i for i, _ in _top_level(s)}
    ops = [o for o in ops if o[0] in top]
    if not ops:
        return None
    parts: list[str] = []
    kinds: list[str] = []
    last = 0
    for start, end, op in ops:
        parts.append(s[last:start].strip())
        kinds.append(_REL_KIND[op])
        last = end
    parts.append(s[last:].strip())
    var_at = [i for i, p in enumerate(parts) if _VAR.match(p)]
    if len(var_at) == 1 and "ne" not in kinds and all(parts):
        idx = var_at[0]
        lo: Any = sympy.S.NegativeInfinity
        hi: Any = sympy.S.Infinity
        lo_open = hi_open = True
        try:
            bounds = {i: read_scalar(p, config) for i, p in enumerate(parts) if i != idx}
        except Unparseable:
            bounds = {}
        if bounds and all(isinstance(b, Scalar) for b in bounds.values()):
            ok = True
            for k, kind in enumerate(kinds):
                left, right = k, k + 1
                # normalise to "variable OP bound"
                if right == idx:
                    bound, kind_v = (
                        bounds[left],
                        {"lt": "gt", "gt": "lt", "le": "ge", "ge": "le"}[kind],
                    )
                elif left == idx:
                    bound, kind_v = bounds[right], kind
                else:
                    ok = False
                    break
                assert isinstance(bound, Scalar)
                if kind_v in ("gt", "ge"):
                    lo, lo_open = bound.sym(), kind_v == "gt"
                else:
                    hi, hi_open = bound.sym(), kind_v == "lt"
            if ok:
                return IntervalSet(sympy.Interval(lo, hi, lo_open, hi_open))
    return Relation(latex_to_sympy(s, config))


def _items(inner: str, config: MathConfig) -> tuple[Value, ...]:
    for sep in _SEPARATORS:
        parts = _split_top(inner, sep)
        if len(parts) > 1:
            return tuple(_parse(p.strip(), config) for p in parts if p.strip())
    return (_parse(inner.strip(), config),) if inner.strip() else ()


def _is_name(lhs: str) -> bool:
    r"""The left side names a quantity rather than stating a condition: ``x``, ``f(x)``,
    ``f(2)``, ``AB``, ``|AB|``, ``a_{37}``, ``V_{1}:V_{2}``, ``\frac{NO}{BO}``, ``(p, q)``,
    ``\angle ABC``; not ``2x``, ``x^2 + y``, ``a + 3z``."""
    s = lhs.strip()
    if s.startswith("|") and s.endswith("|"):
        s = s[1:-1].strip()
    if _VAR_TUPLE.match(s):
        return True
    frac = _NAME_FRAC.match(s)
    if frac:
        return all(_NAME_PART.match(p.strip()) for p in frac.groups())
    parts = re.split(r":|/", s)
    return all(_NAME_PART.match(p.strip()) for p in parts)


def _list(parts: list[str], config: MathConfig) -> Seq:
    items: list[Value] = []
    for p in parts:
        value = _parse(p, config)
        if isinstance(value, Seq) and value.kind == "list":
            items.extend(value.items)  # "21, 16 or 11": one flat list
        else:
            items.append(value)
    return Seq(tuple(items), "list")


def _groups(parts: list[str], config: MathConfig) -> Seq:
    """``p=5,q=2; p=7,q=2``: groups separated by semicolons; a group of several is a tuple."""
    items: list[Value] = []
    for p in parts:
        value = _parse(p, config)
        if isinstance(value, Seq) and value.kind == "list":
            value = Seq(value.items, "tuple", "(", ")")
        items.append(value)
    return Seq(tuple(items), "list")


def _equation(eq_parts: list[str], config: MathConfig) -> Value:
    """``lhs = ... = rhs``. The value is the last side when the left side is a name, when the
    equation is a chain of three or more sides (``x = 5+5+1 = 11``, intermediate steps), or
    when both sides are constants (``\\sqrt{4} = 2``, a computation)."""
    lhs_s, rhs_s = eq_parts[0].strip(), eq_parts[-1].strip()
    rhs = _parse(rhs_s, config)
    if _VAR_TUPLE.match(lhs_s):
        lhs: Any = sympy.Tuple(*sympy.symbols(lhs_s.strip("()").replace(" ", "")))
        return Equation(lhs, rhs, True)
    if _VAR.match(lhs_s) or _FUNC_LHS.match(lhs_s):
        return Equation(latex_to_sympy(lhs_s, config), rhs, True)
    if _is_name(lhs_s):
        return Equation(sympy.Symbol(" ".join(lhs_s.split())), rhs, True)
    if len(eq_parts) > 2 or not lhs_s:
        return Equation(sympy.Symbol(" ".join(lhs_s.split()) or "_"), rhs, True)
    lhs = latex_to_sympy(lhs_s, config)
    constant = not getattr(lhs, "free_symbols", True) and (
        not isinstance(rhs, Scalar) or not rhs.sym().free_symbols
    )
    return Equation(lhs, rhs, constant)


def _ratio(s: str, config: MathConfig) -> Value | None:
    """``7:32`` is the number 7/32; ``12:00`` (a zero second part) is read as its parts."""
    parts = _split_top(s, ":")
    if len(parts) != 2 or not parts[0].strip() or not parts[1].strip():
        return None
    a, b = (_parse(p.strip(), config) for p in parts)
    if not isinstance(a, Scalar) or not isinstance(b, Scalar):
        return None
    if b.exact == 0 or (b.exact is None and b.sym() == 0):
        return Seq((a, b), "tuple", ":", ":")
    if a.exact is not None and b.exact is not None:
        return Scalar(exact=a.exact / b.exact)
    return Scalar(expr=a.sym() / b.sym())


def _plus_minus(s: str, config: MathConfig) -> Value | None:
    r"""``\frac{-1 \pm \sqrt{13}}{4}``: a ``\pm`` inside a group means both signs."""
    if "\\pm" not in s and "\\mp" not in s:
        return None
    plus = s.replace("\\pm", "+").replace("\\mp", "-")
    minus = s.replace("\\pm", "-").replace("\\mp", "+")
    return Seq((_parse(plus, config), _parse(minus, config)), "set")


def _parse(s: str, config: MathConfig) -> Value:
    s = s.strip()
    if not s:
        raise Unparseable("empty answer")
    if _PLAIN_NUMBER.match(s):  # the common case: skip the structural scans
        return read_scalar(s, config)
    if _EMPTY.match(s):
        return Seq((), "set")
    if s[0] == "{" and s[-1] == "}" and _closing_index(s, 0) == len(s) - 1:
        return _parse(s[1:-1], config)  # plain braces group: {1,3} is the list 1, 3
    m = _IN_PREFIX.match(s)
    if m:
        inner = _parse(m.group(2), config)
        as_set = to_real_set(inner)
        return IntervalSet(as_set) if as_set is not None else inner
    m = _SET_BUILDER.match(s) if s.startswith("\\{") else None
    if m:
        inner = _parse(m.group(2), config)  # a condition solved later where it is no interval
        as_set = to_real_set(inner)
        return IntervalSet(as_set) if as_set is not None else inner
    groups = _split_top(s, ";")
    if len(groups) > 1 and all(p.strip() for p in groups):
        return _groups(groups, config)
    for sep in _SEPARATORS:
        parts = _split_top(s, sep)
        if len(parts) > 1 and all(p.strip() for p in parts):
            return _list(parts, config)
    for union in (r"\cup", r"\bigcup", " U ", " or "):
        parts = _split_top(s, union)
        if len(parts) > 1:
            values = [_parse(p, config) for p in parts]
            sets = [to_real_set(v) for v in values]
            if any(x is None for x in sets):
                if union == " or ":  # "x = -2 or x = 3": a list of solutions
                    return _list(parts, config)
                raise Unparseable("a union of things that are not sets")
            return IntervalSet(sympy.Union(*sets))
    rel = _relation(s, config)
    if rel is not None:
        return rel
    eq_parts = _split_top(s, "=")
    if len(eq_parts) > 1:
        return _equation(eq_parts, config)
    pm = _split_top(s, r"\pm")
    if len(pm) == 2:
        a = pm[0].strip()
        b = pm[1].strip()
        plus = _parse(f"{a}+{b}" if a else b, config)
        minus = _parse(f"{a}-{b}" if a else f"-{b}", config)
        return Seq((plus, minus), "set")
    if s.startswith("\\{") and s.endswith("\\}") and _closing_index(s, 0) == len(s) - 1:
        return Seq(_items(s[2:-2], config), "set")
    if s[0] in "([" and s[-1] in ")]" and _closing_index(s, 0) == len(s) - 1:
        body = s[1:-1]
        for sep in (",", ";"):  # (0;-2;6): a semicolon separates coordinates too
            parts = _split_top(body, sep)
            if len(parts) > 1:
                return Seq(tuple(_parse(p, config) for p in parts), "tuple", s[0], s[-1])
        return _parse(body, config)
    if ":" in s:
        ratio = _ratio(s, config)
        if ratio is not None:
            return ratio
    if _MATRIX.search(s):
        return from_sympy(latex_to_sympy(s, config))
    pm_inside = _plus_minus(s, config)
    if pm_inside is not None:
        return pm_inside
    return read_scalar(s, config)


def to_real_set(value: Value) -> Any | None:
    """The subset of the reals a value denotes, or None when it is not one."""
    if isinstance(value, IntervalSet):
        return value.value
    if isinstance(value, Seq):
        if value.interval_like:
            a, b = value.items
            if isinstance(a, Scalar) and isinstance(b, Scalar):
                return sympy.Interval(a.sym(), b.sym(), value.open == "(", value.close == ")")
            return None
        if value.kind == "set" and all(isinstance(x, Scalar) for x in value.items):
            return sympy.FiniteSet(*(x.sym() for x in value.items if isinstance(x, Scalar)))
    return None


def parse_answer(answer: str, config: MathConfig | None = None) -> Value:
    """Parse one (already extracted) answer. Raises :class:`Unparseable` or
    :class:`~referee.verifiers.math.guards.Rejected`."""
    cfg = config or MathConfig()
    norm = normalize(answer, cfg)
    if norm.is_text:
        return Text(norm.text.casefold(), norm.text)
    check_text(norm.text, cfg)
    words = prose_words(norm.text)
    if words:
        raise Unparseable(f"prose, not math (words: {', '.join(words[:4])})")
    value = _parse(norm.text, cfg)
    if isinstance(value, Scalar) and (norm.percent or norm.degrees):
        value = Scalar(
            value.exact,
            value.expr,
            value.decimal_places,
            value.sig_digits,
            norm.percent,
            norm.degrees,
        )
    return value


_ALGEBRA_WORDS = re.compile(r"[A-Za-z]{1,3}(?:\s*[- ]\s*[A-Za-z]{1,3})*")


def text_as_math(text: Text, config: MathConfig) -> Value | None:
    """A word answer read as algebra (``xw-yz``, ``a b - c d``: letters are symbols), or None
    when it is not short runs of letters with spaces and minus signs, or does not parse. Asked
    only when the other side of a comparison is math, so ``east`` against ``\\text{east}`` stays
    a word."""
    written = text.written.strip()
    if not _ALGEBRA_WORDS.fullmatch(written) or prose_words(written):
        return None
    try:
        value = _parse(written, config)
    except (Unparseable, ValueError):
        return None
    return None if isinstance(value, Text) else value
