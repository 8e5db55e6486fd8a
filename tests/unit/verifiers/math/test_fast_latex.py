"""The fast LaTeX subset reader agrees with latex2sympy2_extended wherever it answers."""

from __future__ import annotations

import random
import re

import pytest
import sympy
from latex2sympy2_extended import latex2sympy

from referee.verifiers.math.fast_latex import parse_simple_latex

ATOMS = ["x", "y", "a", "2", "3", "10", "0.5", "\\pi", "e", "X"]


def _has_letter(text: str) -> bool:
    return any(ch in re.sub(r"\\[a-z]+", "", text) for ch in "xyaX")


def _expr(rng: random.Random, depth: int) -> str:
    if depth <= 0:
        return rng.choice(ATOMS)
    form = rng.randrange(13)
    a, b = _expr(rng, depth - 1), _expr(rng, depth - 1)
    if form in (4, 9) and not (_has_letter(a) and _has_letter(b)):
        # latex2sympy2_extended reads juxtaposed numbers such as 2(10) as a mixed number (12);
        # the fast reader multiplies. Compare only where the two agree on the meaning.
        form = 2
    return [
        f"{a}+{b}",
        f"{a}-{b}",
        f"{a}\\cdot {b}",
        f"\\frac{{{a}}}{{{b}}}",
        f"({a})({b})",
        f"{a}^{{{rng.choice(['2', '3', '-1', 'x'])}}}",
        f"\\sqrt{{{a}}}",
        f"\\sqrt[3]{{{a}}}",
        f"-{a}",
        f"2({a})",
        f"\\sin({a})",
        f"\\cos^2 x+{b}",
        f"\\tan{{{a}}}\\cos x",
    ][form]


def _same(a: object, b: object) -> bool:
    """Equal at a few points (latex2sympy keeps decimals as floats, the fast reader as exact)."""
    ea, eb = sympy.sympify(a), sympy.sympify(b)
    symbols = sorted(ea.free_symbols | eb.free_symbols, key=str)
    for k in range(3):
        subs = {s: sympy.Rational(3 + k + j, 7) for j, s in enumerate(symbols)}
        va, vb = complex(ea.subs(subs).evalf(30)), complex(eb.subs(subs).evalf(30))
        if abs(va - vb) > 1e-9 * max(1.0, abs(va), abs(vb)):
            return False
    return True


def _reference(text: str) -> object:
    value = latex2sympy(text).doit()
    return value.subs(sympy.Symbol("i"), sympy.I)


@pytest.mark.slow  # about 4 s: latex2sympy reads every generated expression
@pytest.mark.parametrize("seed", range(8))
def test_agrees_with_latex2sympy_on_generated_expressions(seed: int) -> None:
    rng = random.Random(seed)
    checked = 0
    for _ in range(40):
        text = _expr(rng, rng.randint(1, 3))
        fast = parse_simple_latex(text)
        if fast is None:
            continue
        checked += 1
        assert _same(fast.doit(), _reference(text)), text
    assert checked >= 30


@pytest.mark.parametrize(
    "text",
    [
        "2x+1",
        "x^2+2x+1",
        "(x+1)(x-1)",
        "3\\sqrt{2}",
        "\\frac{\\sqrt{3}}{2}",
        "2\\pi r",
        "\\frac{x^2-1}{x-1}",
        "-\\frac{1}{2}x",
        "\\sqrt[3]{27}",
        "x y",
        "4 \\times 5",
        "e^{2}",
        "\\cos(2x)",
        "1 - 2\\sin^2 x",
        "\\frac{\\cos x}{\\sin x}",
        "2\\sin(5x)\\cos(5x)",
    ],
)
def test_common_answers(text: str) -> None:
    fast = parse_simple_latex(text)
    assert fast is not None
    assert _same(fast.doit(), _reference(text))


@pytest.mark.parametrize(
    "text",
    [
        "\\sin 2x",
        "\\sin x^2",
        "f(x)",
        "x_1",
        "x!",
        "|x|",
        "2^3^4",
        "x^23",
        "\\{1\\}",
        "1,2",
        "x=1",
        "2 3",
        "",
        "\\log_2 8",
        "\\int x dx",
        "2\\frac{1}{2}",
    ],
)
def test_leaves_everything_else_to_latex2sympy(text: str) -> None:
    assert parse_simple_latex(text) is None


def test_builds_unevaluated_trees_so_guards_see_towers() -> None:
    tower = parse_simple_latex("9^{9^{9^{9}}}")
    assert isinstance(tower, sympy.Pow) and isinstance(tower.args[1], sympy.Pow)
