"""Token soup of LaTeX pieces (seeded): no check may raise out of verify or kill its worker."""

from __future__ import annotations

import random

import pytest

from referee.verifiers import CheckPool, WorkerFailed
from referee.verifiers.math import MathVerdict, verify

TOKENS = [
    "x",
    "y",
    "2",
    "10",
    "0.5",
    "-",
    "+",
    "*",
    "/",
    "^",
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    "\\frac",
    "\\sqrt",
    "\\pi",
    "\\infty",
    "\\{",
    "\\}",
    ",",
    "=",
    "<",
    "\\le",
    "\\cup",
    "\\in",
    "\\pm",
    "\\text{cm}",
    "\\%",
    "!",
    "|",
    "\\sin",
    "\\log",
    "_",
    "e",
    "i",
    "\\begin{pmatrix}",
    "&",
    "\\\\",
    "\\end{pmatrix}",
    "\\cdot",
    "°",
    "√",
    "∞",
    " ",
    "or",
    "\\boxed{",
    "<answer>",
    "</answer>",
    "\\int",
    "\\sum",
    "dx",
    "\\lim",
    "\\to",
    "\\overline{3}",
    "0.",
    "$",
    "\\left(",
    "\\right)",
    "\x00",
    "\\text{",
    "####",
]
REFERENCES = [
    "2",
    "x+1",
    "(1,2)",
    "\\{1,2\\}",
    "[0,\\infty)",
    "\\frac{1}{2}",
    "x=3",
    "\\sqrt{2}",
    "\\pi",
    "(x+1)^2",
    "\\begin{pmatrix}1\\\\2\\end{pmatrix}",
    "\\text{yes}",
    "50\\%",
    "x>2",
    "\\sin^2 x",
]


@pytest.mark.slow  # about 1 s: thousands of generated answers
def test_token_soup_never_escapes() -> None:
    rng = random.Random(20261201)
    pairs = []
    for _ in range(1500):
        soup = "".join(rng.choice(TOKENS) for _ in range(rng.randint(1, 30)))
        pairs.append(("\\boxed{" + soup + "}", rng.choice(REFERENCES)))
    with CheckPool(workers=2, timeout_s=5.0) as pool:
        results = [f.result() for f in pool.map(verify, pairs)]
    failed = [(p, r) for p, r in zip(pairs, results, strict=True) if isinstance(r, WorkerFailed)]
    assert not failed, failed[:5]
    verdicts = [r for r in results if isinstance(r, MathVerdict)]
    assert len(verdicts) >= 1490
    assert {v.outcome.value for v in verdicts} >= {"unparseable", "wrong"}
