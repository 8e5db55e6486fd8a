"""Tables for the pieces: extraction modes (the cases are in test_reading.py), fast numbers,
normalization, comparison policies."""

from __future__ import annotations

from fractions import Fraction

import pytest

from referee.verifiers.math import MathConfig, Outcome, extract_answer, parse, verify
from referee.verifiers.math.fast_numbers import TooLarge, parse_fast_number
from referee.verifiers.math.normalization import normalize


def test_extraction_modes_and_fallback() -> None:
    assert extract_answer("it is 12", MathConfig(last_number_fallback=False)).answer is None
    assert extract_answer("#### 5\n\\boxed{6}", MathConfig(extract="gsm8k")).answer == "5"
    assert extract_answer("x = 3", MathConfig(extract="none")).answer == "x = 3"
    assert extract_answer("\\boxed{1} and \\boxed{2}").candidates == ("1", "2")


def test_extraction_is_linear_on_hostile_text() -> None:
    for text in ("<answer>" * 50_000, "\\boxed{" * 50_000, "{" * 200_000, "answer is " * 30_000):
        extract_answer(text)  # returns at all: no quadratic scan


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("42", Fraction(42)),
        ("-0.5", Fraction(-1, 2)),
        ("+3", Fraction(3)),
        ("\\frac{3}{4}", Fraction(3, 4)),
        ("\\frac12", Fraction(1, 2)),
        ("-1/2", Fraction(-1, 2)),
        ("2\\frac{1}{2}", Fraction(5, 2)),
        ("2 1/2", Fraction(5, 2)),
        ("1.2e3", Fraction(1200)),
        ("3\\times 10^{-5}", Fraction(3, 100000)),
        ("0.\\overline{3}", Fraction(1, 3)),
        ("0.1\\overline{6}", Fraction(1, 6)),
        ("0.(142857)", Fraction(1, 7)),
        ("0.142857142857...", Fraction(1, 7)),
        ("10^{5}", Fraction(100000)),
    ],
)
def test_fast_numbers(text: str, value: Fraction) -> None:
    parsed = parse_fast_number(text)
    assert parsed is not None and parsed.value == value


def test_fast_numbers_refuse_huge_literals() -> None:
    with pytest.raises(TooLarge):
        parse_fast_number("1e999999999")
    with pytest.raises(TooLarge):
        parse_fast_number("9" * 5000)
    assert parse_fast_number("x+1") is None


@pytest.mark.parametrize(
    ("raw", "text", "percent"),
    [
        ("1\\,000", "1000", False),
        ("1{,}000", "1000", False),
        ("1,000,000", "1000000", False),
        ("50\\%", "50", True),
        ("\\$18", "18", False),
        ("5 \\text{ cm}^2", "5", False),
        ("−5", "-5", False),
        ("√2", "\\sqrt{2}", False),
        ("(1,234)", "(1,234)", False),
    ],
)
def test_normalization(raw: str, text: str, percent: bool) -> None:
    norm = normalize(raw)
    assert (norm.text, norm.percent) == (text, percent)


def test_exact_arithmetic_not_float_rounding() -> None:
    assert verify("\\boxed{\\frac{1}{2^{98}}}", "\\frac{1}{2^{99}}").score == 0.0
    assert verify("\\boxed{2^{-98}}", "\\frac{1}{2^{98}}").score == 1.0
    assert verify("\\boxed{0.1000001}", "0.1").score == 0.0
    assert verify("\\boxed{10^{400}}", "10^{401}").score == 0.0


@pytest.mark.parametrize(
    ("policy", "answer", "reference", "score"),
    [
        ("either", "50\\%", "0.5", 1.0),
        ("either", "50\\%", "50", 1.0),
        ("fraction", "50\\%", "50", 0.0),
        ("fraction", "50\\%", "0.5", 1.0),
        ("number", "50\\%", "0.5", 0.0),
        ("number", "50\\%", "50", 1.0),
    ],
)
def test_percent_policy(policy: str, answer: str, reference: str, score: float) -> None:
    config = MathConfig(percent=policy)  # type: ignore[arg-type]
    assert verify(f"\\boxed{{{answer}}}", reference, config).score == score


def test_approximation_policy() -> None:
    assert verify("\\boxed{3.1416}", "\\pi").method == "approx_decimal"
    assert verify("\\boxed{3.14}", "\\pi").score == 0.0
    assert verify("\\boxed{3.1416}", "\\pi", MathConfig(approx_min_sig_digits=0)).score == 0.0


def test_verdict_is_structured() -> None:
    v = verify("so \\boxed{x^2+2x+1}", "(x+1)^2")
    assert v.outcome is Outcome.CORRECT and v.score == 1.0 and v.correct
    assert v.extracted == "x^2+2x+1" and v.extraction == "boxed"
    assert v.method in {"symbolic", "symbolic_numeric"}
    assert v.parsed_reference == "(x + 1)**2"
    bad = verify("\\boxed{1}", "\\frac{1}{")
    assert bad.outcome is Outcome.BAD_REFERENCE and bad.reason
    assert verify("", "1").outcome is Outcome.NO_ANSWER
    assert verify("\\boxed{(10^{10})!}", "1").outcome is Outcome.REJECTED


def test_parse_public_api() -> None:
    assert str(parse("\\{1, 2\\}")) == "{1, 2}"
    assert str(parse("x \\ge 2")) == "Interval(2, oo)"


@pytest.mark.parametrize(
    ("response", "reference", "score"),
    [
        # an escaped dollar inside $...$ (Minerva's "Final Answer: The final answer is $\$103$.")
        ("Final Answer: The final answer is $\\$103$. I hope it is correct.", "103", 1.0),
        # a terminating decimal must be written exactly: no tolerance around a decimal reference
        ("\\boxed{251.61}", "251.7", 0.0),
        ("\\boxed{27677/110}", "251.7", 0.0),
        # a decimal reference is the rounding of the exact answer, not its truncation
        ("\\boxed{686597/10100}", "67.97", 0.0),
        ("\\boxed{686597/10100}", "67.980", 1.0),
        ("\\boxed{0.66667}", "\\frac{2}{3}", 1.0),
        # truncated by the model: accepted
        ("\\boxed{0.66666}", "\\frac{2}{3}", 1.0),
        ("\\boxed{0.66668}", "\\frac{2}{3}", 0.0),
        # 4 significant digits are too few
        ("\\boxed{0.6667}", "\\frac{2}{3}", 0.0),
        ("\\boxed{-1.41421}", "-\\sqrt{2}", 1.0),
        ("\\boxed{-1.41423}", "-\\sqrt{2}", 0.0),
        ("\\boxed{\\pi}", "3.1416", 1.0),
        # a reference must be a rounding, not a truncation
        ("\\boxed{\\pi}", "3.1415", 0.0),
        ("\\boxed{\\langle 4,5,-1\\rangle}", "(4, 5, -1)", 1.0),
        ("\\boxed{x=-2 \\text{ or } x=3}", "-2, 3", 1.0),
        ("\\boxed{x=-2 \\text{ or } x=3}", "3", 0.0),
        ("\\boxed{\\text{(D) Ellipse}}", "\\text{(D)}", 1.0),
        ("**Answer:** 2/3", "\\frac{2}{3}", 1.0),
        ("\\boxed{α = 30°}", "30", 1.0),
    ],
)
def test_regressions_found_by_the_benchmark_and_holdout(
    response: str, reference: str, score: float
) -> None:
    assert verify(response, reference).score == score
