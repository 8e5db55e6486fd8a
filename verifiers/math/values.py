"""The parsed forms an answer can take. Comparison dispatches on these types."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import sympy

__all__ = ["Equation", "IntervalSet", "MatrixValue", "Relation", "Scalar", "Seq", "Text", "Value"]


@dataclass(frozen=True, slots=True)
class Scalar:
    """A number or a symbolic expression."""

    exact: Fraction | None = None
    """The exact rational value when it is known without sympy."""
    expr: Any = None
    """The evaluated sympy expression (None while ``exact`` suffices)."""
    decimal_places: int | None = None
    sig_digits: int = 0
    percent: bool = False
    degrees: bool = False

    def sym(self) -> Any:
        if self.expr is not None:
            return self.expr
        assert self.exact is not None
        return sympy.Rational(self.exact.numerator, self.exact.denominator)

    def __str__(self) -> str:
        core = str(self.exact) if self.exact is not None else sympy.sstr(self.expr)
        return core + ("%" if self.percent else "")


@dataclass(frozen=True, slots=True)
class Text:
    text: str
    written: str = field(default="", compare=False)
    """The answer as written (``text`` is casefolded): read again as algebra when the other side
    of a comparison is math (``xw-yz`` against a determinant)."""

    def __str__(self) -> str:
        return f"text({self.text})"


@dataclass(frozen=True, slots=True)
class Seq:
    """Several values: a set ``\\{...\\}``, a bracketed tuple ``(a, b]`` or a bare list ``a, b``."""

    items: tuple[Value, ...]
    kind: str  # "set", "tuple", "list"
    open: str = ""
    close: str = ""

    @property
    def interval_like(self) -> bool:
        return (
            self.kind == "tuple"
            and len(self.items) == 2
            and self.open in "(["
            and self.close in ")]"
        )

    def __str__(self) -> str:
        inner = ", ".join(map(str, self.items))
        if self.kind == "set":
            return "{" + inner + "}"
        return f"{self.open}{inner}{self.close}"


@dataclass(frozen=True, slots=True)
class _SympyValue:
    """A sympy object, printed as sympy prints it."""

    value: Any

    def __str__(self) -> str:
        return str(sympy.sstr(self.value))


@dataclass(frozen=True, slots=True)
class IntervalSet(_SympyValue):
    """A subset of the real line (interval, union, inequality solution) as a sympy Set."""


@dataclass(frozen=True, slots=True)
class MatrixValue:
    value: Any  # sympy ImmutableMatrix

    def __str__(self) -> str:
        return str(sympy.sstr(self.value.tolist()))


@dataclass(frozen=True, slots=True)
class Equation:
    """``lhs = rhs``; ``lhs`` is a sympy expression, ``rhs`` any parsed value."""

    lhs: Any
    rhs: Value
    simple_lhs: bool = field(default=False)
    """The left side is a lone variable or ``f(x)``: ``x = 3`` answers "3"."""

    def __str__(self) -> str:
        return f"{sympy.sstr(self.lhs)} = {self.rhs}"


@dataclass(frozen=True, slots=True)
class Relation(_SympyValue):
    """An inequality that is not a plain interval of one variable."""


Value = Scalar | Text | Seq | IntervalSet | MatrixValue | Equation | Relation
