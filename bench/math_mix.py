"""A reproducible, realistic mix of (response, reference) pairs for the math benchmark.

What an RL trainer sends a verifier: G rollouts per prompt share one reference; most rollouts
are GSM8K/MATH-style chains of thought that end in a numeric final answer (``#### 42``,
``\\boxed{42}``, "The answer is 3/4", Minerva's "Final Answer: ..."), written in whatever form the
model liked (fractions, decimals, negative numbers, thousands separators, dollars, units,
percent), about half of them right. About 10% of the prompts have symbolic answers (polynomials
expanded vs factored, radicals, trigonometric identities) and about 0.5% of the rollouts are
degenerate/hostile (power towers, huge factorials, deep nesting).

    items = realistic_mix(10_000, seed=0)   # the same list for the same arguments

Every item carries the label the generator meant (``correct``), so a benchmark can also report
agreement with it; hostile items are always labelled wrong.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from fractions import Fraction

__all__ = ["MixItem", "realistic_mix", "symbolic_mix"]


@dataclass(frozen=True, slots=True)
class MixItem:
    kind: str  # numeric | symbolic | hostile
    form: str  # finer kind: integer, fraction, decimal, ..., polynomial, radical, trig, tower ...
    response: str
    reference: str
    correct: bool


# -- chain-of-thought filler ------------------------------------------------------------------

_NAMES = ["Natalia", "Weng", "Betty", "James", "Julie", "Albert", "Ken", "Alexis", "Tina", "Mark"]
_THINGS = ["clips", "apples", "marbles", "books", "cookies", "stickers", "tickets", "pencils"]
_OPENERS = [
    "Let's solve this step by step.",
    "We need to find the requested quantity.",
    "First, let's understand what the problem is asking.",
    "Let me work through this carefully.",
    "Okay, so we are given the following information.",
    "",
]
_CHECKS = [
    "Let me double-check this computation.",
    "Checking the arithmetic again confirms the value.",
    "Wait, let me re-read the problem to make sure.",
    "This is consistent with the constraints of the problem.",
    "Hmm, that seems reasonable.",
]


def _gsm8k_step(rng: random.Random) -> str:
    a, b = rng.randint(2, 99), rng.randint(2, 60)
    name, thing = rng.choice(_NAMES), rng.choice(_THINGS)
    op = rng.randrange(4)
    if op == 0:
        return f"{name} has {a} {thing} and gets {b} more, so {a}+{b}=<<{a}+{b}={a + b}>>{a + b}."
    if op == 1:
        return f"Each box holds {b} {thing}, so {a} boxes hold {a}*{b}=<<{a}*{b}={a * b}>>{a * b}."
    if op == 2 and a > b:
        return f"After giving away {b}, {name} has {a}-{b}=<<{a}-{b}={a - b}>>{a - b} {thing} left."
    return f"Half of {2 * a} is {2 * a}/2=<<{2 * a}/2={a}>>{a}."


def _latex_step(rng: random.Random) -> str:
    a, b, c = rng.randint(2, 12), rng.randint(2, 12), rng.randint(1, 30)
    op = rng.randrange(5)
    if op == 0:
        return f"Substituting $x = {a}$ gives ${b}x + {c} = {b * a + c}$."
    if op == 1:
        return f"We have $\\frac{{{a * b}}}{{{b}}} = {a}$, so the ratio simplifies nicely."
    if op == 2:
        return f"By the Pythagorean theorem, $c^2 = {a}^2 + {b}^2 = {a * a + b * b}$."
    if op == 3:
        return f"The number of ways is $\\binom{{{a + 2}}}{{2}} = {(a + 2) * (a + 1) // 2}$."
    return f"Multiplying both sides by ${b}$, we get ${b}y = {b * c}$, hence $y = {c}$."


def _chain(rng: random.Random, latex: bool) -> str:
    steps = [rng.choice(_OPENERS)]
    for _ in range(rng.randint(2, 7)):
        steps.append(_latex_step(rng) if latex else _gsm8k_step(rng))
        if rng.random() < 0.2:
            steps.append(rng.choice(_CHECKS))
    return "\n".join(s for s in steps if s)


def _wrap(rng: random.Random, body: str, answer: str, latex_answer: str) -> str:
    """Put a final answer at the end of a chain of thought in one of the common formats."""
    style = rng.random()
    if style < 0.35:
        return f"{body}\n#### {answer}"
    if style < 0.75:
        return f"{body}\nTherefore, the answer is $\\boxed{{{latex_answer}}}$."
    if style < 0.88:
        return f"{body}\nThe answer is {answer}."
    if style < 0.95:
        return f"{body}\nFinal Answer: The final answer is ${latex_answer}$. I hope it is correct."
    return f"<think>\n{body}\n</think>\n<answer>{answer}</answer>"


# -- numeric answers ---------------------------------------------------------------------------


def _with_commas(n: int, sep: str = ",") -> str:
    return f"{n:,}".replace(",", sep)


def _numeric_group(rng: random.Random, size: int) -> list[MixItem]:
    form = rng.choices(
        [
            "integer",
            "large_integer",
            "negative",
            "fraction",
            "decimal",
            "money",
            "units",
            "percent",
        ],
        weights=[40, 10, 6, 14, 12, 8, 6, 4],
    )[0]
    if form == "fraction":
        while True:
            den = rng.randint(2, 24)
            num = rng.randint(1, 3 * den) * rng.choice([1, 1, 1, -1])
            value = Fraction(num, den)
            if value.denominator > 1:
                break
        reference = rng.choice(
            [f"\\frac{{{value.numerator}}}{{{value.denominator}}}", f"{value}"]
        ).replace("\\frac{-", "-\\frac{")
    elif form == "decimal":
        value = Fraction(rng.randint(1, 9999), rng.choice([10, 100, 4, 20]))
        reference = _decimal(value) if value.denominator > 1 else f"{value}.5"
        value = Fraction(reference)
    elif form == "large_integer":
        value = Fraction(rng.randint(1_000, 2_000_000))
        reference = str(value)
    elif form == "negative":
        value = Fraction(-rng.randint(1, 500))
        reference = str(value)
    else:
        value = Fraction(rng.randint(0, 999))
        reference = str(value)
    items = []
    for _ in range(size):
        correct = rng.random() < 0.5
        v = value if correct else _wrong(rng, value)
        ans, latex = _render_number(rng, v, form)
        body = _chain(rng, latex=rng.random() < 0.5)
        items.append(MixItem("numeric", form, _wrap(rng, body, ans, latex), reference, correct))
    return items


def _decimal(value: Fraction) -> str:
    """A terminating fraction as a plain decimal string (no float rounding)."""
    sign = "-" if value < 0 else ""
    value = abs(value)
    whole, rest = divmod(value.numerator, value.denominator)
    digits = ""
    while rest and len(digits) < 12:
        rest *= 10
        d, rest = divmod(rest, value.denominator)
        digits += str(d)
    return f"{sign}{whole}.{digits}" if digits else f"{sign}{whole}"


def _wrong(rng: random.Random, value: Fraction) -> Fraction:
    while True:
        how = rng.randrange(5)
        if how == 0:
            w = value + rng.choice([-2, -1, 1, 2])
        elif how == 1:
            w = value * rng.choice([2, 10, Fraction(1, 2)])
        elif how == 2:
            w = -value
        elif how == 3:
            w = value + Fraction(rng.choice([-1, 1]), max(2, value.denominator + 1))
        else:
            w = Fraction(rng.randint(0, 3000), rng.choice([1, 1, 2, 3, 4]))
        if w != value:
            return w


def _render_number(rng: random.Random, v: Fraction, form: str) -> tuple[str, str]:
    """(plain answer, LaTeX answer) for value ``v`` in a form a model would write."""
    if v.denominator == 1:
        n = v.numerator
        if abs(n) >= 1000 and rng.random() < 0.5:
            s = ("-" if n < 0 else "") + _with_commas(abs(n))
            latex = ("-" if n < 0 else "") + _with_commas(abs(n), "{,}")
        else:
            s = latex = str(n)
        if form == "money":
            return f"${s}", f"\\${latex}"
        if form == "units":
            unit = rng.choice(["cm", "meters", "km", "kg", "minutes"])
            return f"{s} {unit}", f"{latex} \\text{{ {unit}}}"
        if form == "percent" and rng.random() < 0.6:
            return f"{s}%", f"{latex}\\%"
        return s, latex
    terminating = all(p in (2, 5) for p in _prime_factors(v.denominator))
    if terminating and (form in ("decimal", "money") or rng.random() < 0.3):
        s = _decimal(v)
        if form == "money" and rng.random() < 0.5:
            return f"${s}", f"\\${s}"
        if rng.random() < 0.2 and "." in s and len(s.split(".")[1]) == 1:
            s += "0"  # 2.50
        return s, s
    sign = "-" if v < 0 else ""
    a, b = abs(v.numerator), v.denominator
    style = rng.choice(["frac", "dfrac", "slash"])
    if style == "slash":
        return f"{sign}{a}/{b}", f"{sign}{a}/{b}"
    return f"{sign}{a}/{b}", f"{sign}\\{style}{{{a}}}{{{b}}}"


def _prime_factors(n: int) -> set[int]:
    out, p = set(), 2
    while p * p <= n:
        while n % p == 0:
            out.add(p)
            n //= p
        p += 1
    if n > 1:
        out.add(n)
    return out


# -- symbolic answers --------------------------------------------------------------------------


def _poly(r1: int, r2: int) -> tuple[str, str]:
    """((x - r1)(x - r2), its expansion) in LaTeX."""

    def lin(r: int) -> str:
        return "x" if r == 0 else (f"x - {r}" if r > 0 else f"x + {-r}")

    b, c = -(r1 + r2), r1 * r2
    expanded = "x^2"
    if b:
        expanded += f" {'+' if b > 0 else '-'} {'' if abs(b) == 1 else abs(b)}x"
    if c:
        expanded += f" {'+' if c > 0 else '-'} {abs(c)}"
    return f"({lin(r1)})({lin(r2)})", expanded


def _symbolic_pair(rng: random.Random) -> tuple[str, str, str, str]:
    """(form, reference, an equivalent answer, a wrong answer)."""
    kind = rng.choice(["polynomial", "polynomial", "radical", "radical", "trig", "rational", "pi"])
    if kind == "polynomial":
        r1, r2 = rng.randint(-9, 9), rng.randint(-9, 9)
        factored, expanded = _poly(r1, r2)
        wrong = _poly(r1, r2 + rng.choice([-1, 1]))
        ref, ok, bad = (
            (factored, expanded, wrong[1]) if rng.random() < 0.5 else (expanded, factored, wrong[0])
        )
        return kind, ref, ok, bad
    if kind == "radical":
        a, b = rng.randint(2, 7), rng.choice([2, 3, 5, 6, 7])
        ref = f"{a}\\sqrt{{{b}}}"
        ok = rng.choice([f"\\sqrt{{{a * a * b}}}", f"\\sqrt{{{b}}} \\cdot {a}"])
        bad = rng.choice([f"\\sqrt{{{a * b}}}", f"{a + 1}\\sqrt{{{b}}}", f"{a}\\sqrt{{{b + 1}}}"])
        if rng.random() < 0.3:
            ref, ok, bad = (
                f"\\frac{{\\sqrt{{{b}}}}}{{{b}}}",
                f"\\frac{{1}}{{\\sqrt{{{b}}}}}",
                f"\\frac{{\\sqrt{{{b}}}}}{{{b + 1}}}",
            )
        return kind, ref, ok, bad
    if kind == "trig":
        k = rng.randint(2, 5)
        options = [
            (f"\\sin({2 * k}x)", f"2\\sin({k}x)\\cos({k}x)", f"2\\sin({k}x)"),
            ("\\cos(2x)", "1 - 2\\sin^2 x", "1 - \\sin^2 x"),
            ("\\cos(2x)", "\\cos^2 x - \\sin^2 x", "\\cos^2 x + \\sin^2 x"),
            ("\\tan x", "\\frac{\\sin x}{\\cos x}", "\\frac{\\cos x}{\\sin x}"),
            ("1", "\\sin^2 x + \\cos^2 x", "\\sin^2 x - \\cos^2 x"),
        ]
        ref, ok, bad = rng.choice(options)
        return kind, ref, ok, bad
    if kind == "rational":
        a = rng.randint(1, 9)
        ref = f"\\frac{{1}}{{x + {a}}}"
        ok = f"\\frac{{x - {a}}}{{x^2 - {a * a}}}"
        bad = f"\\frac{{1}}{{x - {a}}}"
        return kind, ref, ok, bad
    n, d = rng.randint(1, 5), rng.choice([2, 3, 4, 6])
    ref = f"\\frac{{{n}\\pi}}{{{d}}}"
    ok = f"\\frac{{{2 * n}\\pi}}{{{2 * d}}}" if rng.random() < 0.5 else f"\\frac{{{n}}}{{{d}}}\\pi"
    bad = f"\\frac{{{n + 1}\\pi}}{{{d}}}"
    return "pi", ref, ok, bad


def _symbolic_group(rng: random.Random, size: int) -> list[MixItem]:
    form, ref, ok, bad = _symbolic_pair(rng)
    items = []
    for _ in range(size):
        correct = rng.random() < 0.5
        ans = ok if correct else bad
        body = _chain(rng, latex=True)
        if rng.random() < 0.8:
            response = f"{body}\nTherefore, the answer is $\\boxed{{{ans}}}$."
        else:
            response = f"{body}\nFinal Answer: The final answer is ${ans}$. I hope it is correct."
        items.append(MixItem("symbolic", form, response, ref, correct))
    return items


# -- hostile rollouts --------------------------------------------------------------------------


def _hostile_answer(rng: random.Random) -> tuple[str, str]:
    kind = rng.randrange(8)
    if kind == 0:
        b = rng.randint(2, 9)
        h = rng.randint(4, 6)
        return "tower", "{".join([f"{b}^"] * (h - 1)) + f"{b}" + "}" * (h - 2)
    if kind == 1:
        return "factorial", f"{rng.choice([100000, 10**6, 10**9])}!"
    if kind == 2:
        return "factorial", f"({rng.randint(7, 9)}!)!"
    if kind == 3:
        d = rng.randint(500, 3000)
        return "nested_braces", "{" * d + "1" + "}" * d
    if kind == 4:
        d = rng.randint(300, 1000)
        return "nested_frac", "\\frac{1}{" * d + "2" + "}" * d
    if kind == 5:
        d = rng.randint(300, 1500)
        return "nested_sqrt", "\\sqrt{" * d + "2" + "}" * d
    if kind == 6:
        return "huge_power", f"{rng.randint(2, 99)}^{{{rng.randint(10**8, 10**9)}}}"
    return "huge_power", f"10^{{10^{{{rng.randint(5, 12)}}}}}"


def _hostile(rng: random.Random, reference: str) -> MixItem:
    form, ans = _hostile_answer(rng)
    body = _chain(rng, latex=True)
    return MixItem(
        "hostile", form, f"{body}\nTherefore, the answer is $\\boxed{{{ans}}}$.", reference, False
    )


# -- the mixes ---------------------------------------------------------------------------------


def realistic_mix(
    n: int = 10_000,
    seed: int = 0,
    group_size: int = 8,
    symbolic_share: float = 0.10,
    hostile_share: float = 0.005,
) -> list[MixItem]:
    """``n`` items in groups of ``group_size`` rollouts per reference (order kept: a trainer
    sends a group together); ``hostile_share`` of the rollouts replaced by hostile ones."""
    rng = random.Random(seed)
    items: list[MixItem] = []
    while len(items) < n:
        size = min(group_size, n - len(items))
        if rng.random() < symbolic_share:
            items.extend(_symbolic_group(rng, size))
        else:
            items.extend(_numeric_group(rng, size))
    for i in rng.sample(range(n), round(n * hostile_share)):
        items[i] = _hostile(rng, items[i].reference)
    return items


def symbolic_mix(n: int = 500, seed: int = 1, group_size: int = 8) -> list[MixItem]:
    """Only symbolic answers (the slow path of both verifiers)."""
    rng = random.Random(seed)
    items: list[MixItem] = []
    while len(items) < n:
        items.extend(_symbolic_group(rng, min(group_size, n - len(items))))
    return items


if __name__ == "__main__":
    import collections

    mix = realistic_mix()
    print(collections.Counter(i.kind for i in mix), collections.Counter(i.form for i in mix))
    print(sum(i.correct for i in mix) / len(mix), "labelled correct")
    for item in random.Random(3).sample(mix, 4):
        print("-" * 60, item.kind, item.form, item.correct, repr(item.reference))
        print(item.response[-300:])
