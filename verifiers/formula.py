"""A safe arithmetic evaluator for OpenAI's multi grader ``calculate_output`` formulas.

    >>> from referee.verifiers.formula import evaluate
    >>> evaluate("0.5 * a + 0.5 * max(b, c)", {"a": 1.0, "b": 0.2, "c": 0.6})
    0.8

Only numbers, the given names, ``+ - * /``, ``^`` (or ``**``) for powers, unary minus and
``min max abs floor ceil exp sqrt log`` are allowed; the formula is parsed with :mod:`ast` and
walked node by node, never handed to ``eval``. Powers are capped (``|exponent| <= 64``), so a
formula cannot burn the CPU; a division by zero or a math domain error is a ``ValueError``.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["FUNCTIONS", "evaluate", "parse_formula"]

FUNCTIONS: dict[str, Callable[..., float]] = {
    "min": min,
    "max": max,
    "abs": abs,
    "floor": math.floor,
    "ceil": math.ceil,
    "exp": math.exp,
    "sqrt": math.sqrt,
    "log": math.log,
}
_MAX_EXPONENT = 64


def parse_formula(formula: str) -> ast.Expression:
    try:
        return ast.parse(formula.replace("**", "^"), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise ValueError(f"the formula does not parse: {exc}") from None


def _power(base: float, exponent: float) -> float:
    if abs(exponent) > _MAX_EXPONENT:
        raise ValueError(f"an exponent above {_MAX_EXPONENT} is not allowed")
    return float(base**exponent)


_BINARY: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.Pow: _power,
    ast.BitXor: _power,  # OpenAI's ^
}


def _eval(node: ast.AST, names: Mapping[str, float]) -> float:
    if isinstance(node, ast.Expression):
        return _eval(node.body, names)
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        if isinstance(node.value, bool):
            raise ValueError("the formula may not use True/False")
        return float(node.value)
    if isinstance(node, ast.Name) and node.id in names:
        return float(names[node.id])
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _eval(node.operand, names)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _BINARY[type(node.op)](_eval(node.left, names), _eval(node.right, names))
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in FUNCTIONS
        and not node.keywords
        and node.args
    ):
        args = [_eval(a, names) for a in node.args]
        return float(FUNCTIONS[node.func.id](*args))
    what = node.id if isinstance(node, ast.Name) else type(node).__name__
    raise ValueError(f"the formula may not use {what}")


def evaluate(formula: str | ast.Expression, names: Mapping[str, Any]) -> float:
    """The formula's value with ``names`` bound; ValueError for anything not allowed or not
    computable (division by zero, log of 0, an overflow)."""
    tree = parse_formula(formula) if isinstance(formula, str) else formula
    try:
        value = _eval(tree, {k: float(v) for k, v in names.items()})
    except (ZeroDivisionError, OverflowError, TypeError) as exc:
        raise ValueError(f"the formula cannot be computed: {exc}") from None
    except ValueError as exc:
        raise ValueError(str(exc) if "formula" in str(exc) else f"math error: {exc}") from None
    except RecursionError:
        raise ValueError("the formula nests too deeply") from None
    if not math.isfinite(value):
        raise ValueError("the formula's value is not finite")
    return value
