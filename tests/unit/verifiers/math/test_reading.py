"""How answers and references are read: extraction order, references, special tokens, prose,
several boxes, the policy options, and the cost bounds that keep sympy from running away."""

from __future__ import annotations

import pydantic
import pytest
import sympy

from referee.client.models import MathGrader
from referee.verifiers.math import MathConfig, Outcome, Rejected, extract_answer, parse, verify
from referee.verifiers.math.guards import expansion_terms, polynomial_degree
from referee.verifiers.math.prose import prose_words
from referee.verifiers.math.reference import read_reference
from referee.verifiers.math.segments import math_segments, strip_special_tokens
from referee.verifiers.registry import math_config, score_item


@pytest.mark.parametrize(
    ("response", "answer", "source"),
    [
        ("so \\boxed{\\frac{\\sqrt{2}}{2}} done", "\\frac{\\sqrt{2}}{2}", "boxed"),
        ("\\fbox{42}", "42", "boxed"),
        ("\\boxed 5 is it", "5", "boxed"),
        ("<think>maybe \\boxed{3}</think>The final answer is 4.", "4", "final_answer"),
        ("<think>x</think><answer> 12 </answer>", "12", "answer_tag"),
        ("The final answer is $\\frac{1}{2}$. I hope", "\\frac{1}{2}", "final_answer"),
        ("Answer: 3.5", "3.5", "final_answer"),
        ("blah\n#### 1,234", "1,234", "gsm8k"),
        ("so she has 12 apples left.", "12", "last_number"),
        ("Therefore the answer is 12. I checked it 3 ways.", "12", "final_answer"),
        ("12 apples", "12 apples", "whole"),
        ("no solution", "no solution", "whole"),
        ("I think it is 5", "5", "last_number"),
        ("so \\boxed{5}. The answer is 5.", "5", "final_answer"),
        ("\\boxed{5}. The answer is correct.", "5", "boxed"),
        ("<answer>The answer is 7</answer>", "7", "answer_tag"),
        ("Answer \\[ 9 \\]", "9", "final_answer"),
        ("Answer $$\n9\n$$", "9", "final_answer"),
        ("The answer is:\n\n$$42$$", "42", "final_answer"),
        ("Final Answer: The largest $n$ is 34.", "34", "final_answer"),
        ("Final Answer: Jane started growing Sphere 3 hours ago.", "3", "final_answer"),
        ("Final Answer: The answer is not 5.", "not 5", "final_answer"),
        ("work\n#### 72", "72", "gsm8k"),
        ("x \\in [2, \\infty)", "x \\in [2, \\infty)", "whole"),
        ("We get\n$$x = 4$$\nwhich we check.", "x = 4", "display_math"),
        ("We get\n$$x = 4$$\nso 5 of them.", "5", "last_number"),
        (
            "Hence $a = 1$ and so on. Therefore $x \\geq 5$ is the solution.",
            "x \\geq 5",
            "inline_math",
        ),
        ("Then $x = 2$ and the total is 12.", "12", "last_number"),
        ("He paid $5 and then $7 more, 12 in all", "12", "last_number"),
        ("It costs 12 dollars.", "12", "last_number"),
        ("Thus x = 5. $\\blacksquare$", "5", "last_number"),
        ("We find that $x \\lt 3$. $\\square$", "x \\lt 3", "inline_math"),
        ("$\\boxed{A}$. The answer is A because 3 > 2", "A", "boxed"),
    ],
)
def test_extraction_order(response: str, answer: str, source: str) -> None:
    found = extract_answer(response)
    assert (found.answer, found.source) == (answer, source)


def test_a_cue_then_math_that_does_not_close_is_no_answer() -> None:
    for response in ("Answer $ \n 9 \n $", "Answer \\( \n 9 \n \\)"):
        verdict = verify(response, "9")
        assert verdict.outcome is Outcome.NO_ANSWER, verdict
    assert verify("The answer is $376.", "376").score == 1.0  # a dollar sign, not math


def test_math_segments() -> None:
    segs = math_segments("a $x$ b $$y$$ c \\(z\\) d \\[w\\] e \\$5 f $5 and $6 g")
    assert [(s.inner, s.display) for s in segs] == [
        ("x", False),
        ("y", True),
        ("z", False),
        ("w", True),
    ]
    assert math_segments("$a\nb$") == []  # an inline segment ends on its line


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("The final answer is 0.75<|im_end|>", "The final answer is 0.75\n"),
        ("#### 72<|endoftext|>", "#### 72\n"),
        ("\\boxed{5}</s>", "\\boxed{5}\n"),
        ("5<|eot_id|>", "5\n"),
        ("5<|end_of_text|>", "5\n"),
        ("5<｜end▁of▁sentence｜>", "5\n"),
        ("<|im_start|>assistant\nIt is 5<|im_end|>", "\nIt is 5\n"),
        ("It is 5<|im_end|>\n<|im_start|>user\nNow 4?", "It is 5\n\n"),
        ("#### 72<end_of_turn><eos>", "#### 72\n\n"),
        ("#### 72</s><pad><pad>", "#### 72\n\n\n"),
        ("#### 72<|end|><|endoftext|>", "#### 72\n\n"),
        ("It is<|im_end|> 5", "It is\n 5"),  # anywhere, not only at the end
        ("no tokens at all", "no tokens at all"),
    ],
)
def test_special_tokens(raw: str, clean: str) -> None:
    assert strip_special_tokens(raw) == clean


# a reference -> the answer read from it and how it was found
REFERENCES = {
    "\\frac{1}{2}": ("\\frac{1}{2}", "whole"),
    "$\\frac{1}{2}$": ("$\\frac{1}{2}$", "whole"),
    "so $x = \\boxed{2}$.": ("2", "boxed"),
    "$\\boxed{1}\\boxed{2}$": ("1, 2", "boxes"),
    "\\boxed{1} no no no no no \\boxed{2}": ("2", "boxed"),
    "\\boxed{W(n) = 1": ("W(n) = 1", "boxed"),
    "answer is 0.6666667": ("0.6666667", "final_answer"),
    "It sells 9 eggs.\n#### 18": ("18", "gsm8k"),
}


@pytest.mark.parametrize("reference", REFERENCES)
def test_read_reference(reference: str) -> None:
    assert read_reference(reference) == REFERENCES[reference]


def test_the_reference_used_is_shown_and_an_unreadable_one_is_bad_reference() -> None:
    solution = "Since $x^2 = 4$ and $x > 0$, $x = \\boxed{2}$."
    verdict = verify("The answer is 2.", solution)
    assert verdict.correct and verdict.parsed_reference == "2"
    for bad in (
        "",
        "Let x be the number; we solve for it.",
        "\\frac{1}{2} \\text{ (a long remark)}",
    ):
        verdict = verify("The answer is \\boxed{3}", bad)
        assert verdict.outcome is Outcome.BAD_REFERENCE and verdict.score == 0.0, bad
        assert verdict.reason and verdict.reason.startswith("reference:")


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("2x = 8, so x = 4", ["so"]),
        ("The volume of ABCDEFGH is 120", ["The", "volume", "of", "is"]),
        ("Jane started 3", ["Jane", "started"]),
        ("2ab + 3bc", []),
        ("AB + CD", []),
        ("\\frac{NO}{BO}", []),
        ("S_{MBCN}:S", []),
        ("\\sin x + \\log_2 8", []),
        ("\\begin{pmatrix} 1 & 0 \\end{pmatrix}", []),
        ("a + b", []),
        ("a circle of radius 2", ["a", "circle", "of", "radius"]),
    ],
)
def test_prose_words(text: str, words: list[str]) -> None:
    assert prose_words(text) == words


def test_prose_is_never_a_product_of_letters() -> None:
    for answer in ("2x = 8, so x = 4", "Jane started growing Sphere 3", "the value 5"):
        with pytest.raises(ValueError, match="prose"):
            parse(answer)
    verdict = verify("2x = 8, so x = 4", "4")
    assert verdict.outcome is Outcome.UNPARSEABLE and verdict.parsed_response is None


@pytest.mark.parametrize(
    ("response", "reference", "outcome"),
    [
        ("\\boxed{1}, \\boxed{2}, \\boxed{3}", "\\{1, 2, 3\\}", Outcome.CORRECT),
        ("\\boxed{3}, \\boxed{2}, \\boxed{1}", "1, 2, 3", Outcome.CORRECT),
        ("\\boxed{1}, \\boxed{2}", "1, 2, 3", Outcome.WRONG),
        (
            "\\boxed{(2, 2)} \\quad \\text{and} \\quad \\boxed{(6, 2)}",
            "(2, 2), (6, 2)",
            Outcome.CORRECT,
        ),
        ("\\boxed{2}, \\boxed{3}", "(2, 3)", Outcome.CORRECT),
        ("\\boxed{3}, \\boxed{2}", "(2, 3)", Outcome.WRONG),
        ("\\boxed{7} or \\boxed{8}", "7", Outcome.HEDGED),
        ("\\boxed{7} ... \\boxed{7}", "7", Outcome.CORRECT),
    ],
)
def test_several_boxes_are_one_answer_only_for_a_list_reference(
    response: str, reference: str, outcome: Outcome
) -> None:
    assert verify(response, reference).outcome is outcome


def test_decimal_comma() -> None:
    on = MathConfig(decimal_comma=True)
    assert verify("\\boxed{1,22}", "1.22").score == 0.0
    assert verify("\\boxed{1,22}", "1.22", on).score == 1.0
    assert verify("\\boxed{1,000}", "1000").score == 1.0
    assert verify("\\boxed{1,000}", "1000", on).score == 0.0  # the clash, documented
    assert verify("Total : 2,74 €", "2.74", on).score == 1.0
    assert verify("\\boxed{1, 2}", "1, 2", on).score == 1.0  # a comma and a space: a list


def test_list_order() -> None:
    ordered = MathConfig(ordered_lists=True)
    assert verify("\\boxed{-2, 1}", "1, -2").score == 1.0
    assert verify("\\boxed{-2, 1}", "1, -2", ordered).score == 0.0
    assert verify("\\boxed{1, -2}", "1, -2", ordered).score == 1.0
    assert verify("\\boxed{\\{-2, 1\\}}", "\\{1, -2\\}", ordered).score == 1.0  # sets: never
    assert verify("\\boxed{(2, 1)}", "(1, 2)").score == 0.0  # tuples: always


def test_numeric_tolerance() -> None:
    loose = MathConfig(abs_tol=0.01)
    assert verify("\\boxed{0.33}", "\\frac{1}{3}").score == 0.0
    assert verify("\\boxed{0.33}", "\\frac{1}{3}", loose).score == 1.0
    assert verify("\\boxed{0.32}", "\\frac{1}{3}", loose).score == 0.0
    assert verify("\\boxed{3.14}", "\\pi", loose).score == 1.0
    matrix = "\\begin{pmatrix}0.33\\\\0.2\\end{pmatrix}"
    assert verify(f"\\boxed{{{matrix}}}", "(\\frac{1}{3}, \\frac{1}{5})", loose).score == 1.0


def test_the_options_travel_on_the_wire() -> None:
    spec = MathGrader(reference="1.22", decimal_comma=True, ordered_lists=True, abs_tol=0.5)
    config = math_config(spec.model_dump())
    assert (config.decimal_comma, config.ordered_lists, config.abs_tol) == (True, True, 0.5)
    defaults = math_config(MathGrader(reference="1").model_dump())
    assert (defaults.decimal_comma, defaults.ordered_lists, defaults.abs_tol) == (
        False,
        False,
        0.0,
    )
    score, details = score_item(spec.model_dump(), "\\boxed{1,22}")
    assert score == 1.0 and details["outcome"] == "correct"
    with pytest.raises(pydantic.ValidationError):
        MathGrader(reference="1", abs_tol=-1)


def test_cost_bounds() -> None:
    x, y, z, w = sympy.symbols("x y z w")
    big = sympy.Pow(x + y + z + w, 40, evaluate=False)
    assert round(expansion_terms(big)) == 12341  # C(43, 3), computed without expanding
    assert expansion_terms(sympy.sin(big)) >= 12341
    assert expansion_terms(x + 1) == 2
    assert polynomial_degree(sympy.Pow(sympy.Pow(x, 100) + 1, 100, evaluate=False)) == 10_000
    with pytest.raises(Rejected, match="degree"):
        parse("(x^{100}+1)^{100}")
    assert parse("10^{\\frac{-5+\\sqrt{13}}{6}}")  # a small exponent is no power tower


def _symbol_matrix(n: int, name: str = "x") -> str:
    rows = ("&".join(f"{name}_{{{i}{j}}}" for j in range(n)) for i in range(n))
    return "\\begin{pmatrix}" + "\\\\".join(rows) + "\\end{pmatrix}"


def test_a_large_matrix_of_symbols_is_not_inverted() -> None:
    """sympy inverts a 5x5 matrix of distinct symbols in under a second and a 6x6 in minutes:
    from 6 rows on, a power or inverse of a symbolic matrix is refused before it is evaluated
    (the check's deadline was the only stop, a worker held for each such answer)."""
    for n, exponent in ((6, "^{-1}"), (7, "^{-1}"), (6, "^{3}")):
        with pytest.raises(Rejected, match=f"{n}x{n} matrix of symbols"):
            parse(_symbol_matrix(n) + exponent)
        result = verify(f"\\boxed{{{_symbol_matrix(n)}{exponent}}}", "0")
        assert result.outcome is Outcome.REJECTED and result.score == 0.0
    parse(_symbol_matrix(6))  # a matrix itself, not raised to anything, is read
    parse(_symbol_matrix(2) + "^{-1}")  # a small one is still inverted


def test_a_determinant_of_a_large_matrix_of_symbols_is_refused_before_parsing() -> None:
    """The LaTeX parser expands ``\\det`` of a written-out matrix while it reads it, so the tree
    guards never saw a 6x6 of symbols (it ran to the check's deadline); a text guard refuses it,
    in each spelling the parser expands, and leaves numbers and small matrices alone."""
    big = _symbol_matrix(6)
    for text in (
        "\\det" + big,
        "\\det\\left(" + big + "\\right)",
        "2\\det " + big.replace("pmatrix", "bmatrix"),
        big.replace("pmatrix", "vmatrix"),
        "\\det" + _symbol_matrix(7, "\\alpha"),
    ):
        with pytest.raises(Rejected, match=r"determinant of a [67]-row matrix of symbols"):
            parse(text)
        assert verify(f"\\boxed{{{text}}}", "0").outcome is Outcome.REJECTED
    numbers = "\\\\".join("&".join(str((i * j) % 7 + (i == j)) for j in range(6)) for i in range(6))
    assert parse("\\det\\begin{pmatrix}" + numbers + "\\end{pmatrix}")
    halves = numbers.replace("1", "\\frac{1}{2}").replace("3", "\\sqrt{3}")
    assert parse("\\det\\begin{pmatrix}" + halves + "\\end{pmatrix}")
    assert verify("\\boxed{\\det" + _symbol_matrix(3) + "}", "0").outcome is Outcome.WRONG
    assert verify("\\boxed{\\begin{vmatrix}x&y\\\\z&w\\end{vmatrix}}", "w*x-y*z").score == 1.0
    parse(big.replace("pmatrix", "bmatrix"))  # a matrix with no determinant is still read


def test_what_the_latex_parser_or_sympy_would_compute_for_minutes_is_refused_or_left() -> None:
    """A binomial of huge numbers was computed while parsing (before the guards), a 2x2 matrix of
    symbols to the 200th power expanded for minutes, and an integral with no elementary form ran
    sympy's Risch and Meijer-G searches: each held a worker to its deadline."""
    for text, refusal in (
        ("\\binom{1000000}{500000}", "binomial of a huge number"),
        ("\\binom{10^{6}}{5 \\cdot 10^{5}}", "binomial of a huge number"),
        ("\\begin{pmatrix}x&y\\\\z&w\\end{pmatrix}^{200}", "power 200 of a 2x2 matrix of symbols"),
        ("\\begin{pmatrix}a&b&c\\\\d&f&g\\\\h&j&k\\end{pmatrix}^{10}", "power 10 of a 3x3"),
    ):
        with pytest.raises(Rejected, match=refusal):
            parse(text)
    hard = verify("\\boxed{\\int_0^1 e^{-x^2}\\sin(x^{7})\\, dx}", "x+1")
    assert hard.outcome is Outcome.WRONG  # compared, not held to the deadline
    for integral, value in (
        ("\\int_0^1 x^2 dx", "\\frac13"),
        ("\\int_0^{\\pi} \\sin^2 x dx", "\\frac{\\pi}{2}"),
        ("\\int_0^\\infty e^{-x} dx", "1"),
        ("\\int_0^1 \\frac{1}{1+x^2} dx", "\\frac{\\pi}{4}"),
    ):
        assert verify(f"\\boxed{{{integral}}}", value).outcome is Outcome.CORRECT, integral
    assert verify("\\boxed{\\binom{10}{3}}", "120").outcome is Outcome.CORRECT
    square = "\\begin{pmatrix}x&1\\\\0&x\\end{pmatrix}^{100}"  # two symbols: still computed
    assert (
        verify(
            f"\\boxed{{{square}}}", "\\begin{pmatrix}x^{100}&100x^{99}\\\\0&x^{100}\\end{pmatrix}"
        ).score
        == 1.0
    )


def test_a_word_shaped_reference_is_read_as_algebra_against_a_math_answer() -> None:
    """``xw-yz`` and ``a b - c d`` are letters, spaces and a minus, the shape of a word answer,
    and were compared as words only: a determinant or a product equal to them was wrong, and
    ``p-q`` against ``p - q`` too. They are read as algebra against a math answer, and against
    each other when a space or a minus shows it; words and plain names stay as written."""
    vm = "\\boxed{\\begin{vmatrix}x&y\\\\z&w\\end{vmatrix}}"
    for reference in ("xw-yz", "$xw - yz$", "x w - y z"):
        assert verify(vm, reference).outcome is Outcome.CORRECT, reference
    assert verify("\\boxed{a \\cdot b - c \\cdot d}", "ab-cd").outcome is Outcome.CORRECT
    assert verify("\\boxed{2ab}", "ab").outcome is Outcome.WRONG
    assert verify("\\boxed{x+y}", "xy").outcome is Outcome.WRONG
    assert verify("\\boxed{east}", "tase").outcome is Outcome.WRONG  # words stay words
    assert verify("\\boxed{p-q}", "p - q").outcome is Outcome.CORRECT  # spacing is not a word
    assert verify("\\boxed{x y}", "yx").outcome is Outcome.CORRECT
    assert verify("\\boxed{ABD}", "ADB").outcome is Outcome.WRONG  # two plain runs stay names
    assert verify("\\boxed{no}", "o n").outcome is Outcome.WRONG  # a function word stays a word
    assert verify("\\boxed{\\text{East}}", "east").outcome is Outcome.CORRECT
    assert verify("\\boxed{y}", "yes").outcome is Outcome.WRONG


def _boxed(answer: str) -> str:
    return f"\\boxed{{{answer}}}"


@pytest.mark.parametrize(
    ("response", "reference", "outcome"),
    [
        # set-builder notation is the set it describes (it was unparseable)
        (_boxed("\\{x | x > 0\\}"), "(0,\\infty)", Outcome.CORRECT),
        (_boxed("\\{x \\mid x \\le 3\\}"), "(-\\infty, 3]", Outcome.CORRECT),
        (
            _boxed("\\left\\{ x \\in \\mathbb{R} : x \\neq 2 \\right\\}"),
            "(-\\infty,2)\\cup(2,\\infty)",
            Outcome.CORRECT,
        ),
        (_boxed("\\{x | x^2 < 4\\}"), "(-2, 2)", Outcome.CORRECT),
        (_boxed("\\{x | x > 0\\}"), "[0,\\infty)", Outcome.WRONG),
        (_boxed("\\{x | x^2 < 4\\}"), "(-2, 3)", Outcome.WRONG),
        (_boxed("\\{1, 2\\}"), "\\{2, 1\\}", Outcome.CORRECT),  # a plain set is still a set
        # an angle in degrees inside a trigonometric function is its radians (sin 15° was sin(15))
        (_boxed("\\frac{\\sqrt{6}-\\sqrt{2}}{4}"), "\\sin 15^\\circ", Outcome.CORRECT),
        (_boxed("\\frac12"), "\\cos(60^\\circ)", Outcome.CORRECT),
        (_boxed("1"), "\\tan{45^{\\circ}}", Outcome.CORRECT),
        (_boxed("2\\sin 30°"), "1", Outcome.CORRECT),
        (_boxed("\\cos 60^\\circ"), "\\frac{\\sqrt3}{2}", Outcome.WRONG),
        (_boxed("20^\\circ"), "20", Outcome.CORRECT),  # a bare angle keeps its degrees
        # a choice with its value answers the letter or the value (it was the product 12*B)
        ("The answer is (B) 12.", "B", Outcome.CORRECT),
        ("The answer is (B) 12.", "12", Outcome.CORRECT),
        ("The answer is (B) 7.", "7", Outcome.CORRECT),  # a one-digit value is no letter
        (_boxed("\\textbf{(D)}\\ \\frac12"), "D", Outcome.CORRECT),
        (_boxed("\\text{(A)}\\ 5"), "\\text{(A)}", Outcome.CORRECT),
        (_boxed("\\textbf{(D)}\\ \\frac12"), "0.5", Outcome.CORRECT),
        ("The answer is (C) 12.", "B", Outcome.WRONG),
        ("The answer is (C) 13.", "12", Outcome.WRONG),
        (_boxed("(a) 3, (b) 5"), "A", Outcome.WRONG),  # two labelled parts, not an option
        ("D", "D. y = 7", Outcome.CORRECT),  # a reference that gives the option and its text
        (_boxed("A. 5"), "5", Outcome.CORRECT),
        ("A. 1, B. 2", "A", Outcome.UNPARSEABLE),
        # a solution set and the list of its members, a segment's overline, the words for the
        # real line, a leading article, a modulus
        (_boxed("x \\in \\{1, 2\\}"), "1, 2", Outcome.CORRECT),
        (_boxed("1, 2"), "x \\in \\{2, 1\\}", Outcome.CORRECT),
        (_boxed("x \\in \\{1, 2\\}"), "1, 3", Outcome.WRONG),
        (_boxed("\\overline{AB}"), "AB", Outcome.CORRECT),
        (_boxed("0.\\overline{3}"), "\\frac13", Outcome.CORRECT),  # still a repeating decimal
        (_boxed("(-\\infty,\\infty)"), "\\text{all real numbers}", Outcome.CORRECT),
        (_boxed("\\text{all reals}"), "\\mathbb{R}", Outcome.CORRECT),
        (_boxed("\\text{the circle}"), "\\text{circle}", Outcome.CORRECT),
        (_boxed("\\text{a parabola}"), "\\text{circle}", Outcome.WRONG),
        (_boxed("5 \\pmod{7}"), "5", Outcome.CORRECT),
        (_boxed("5 \\pmod 7"), "6", Outcome.WRONG),
    ],
)
def test_answers_are_read_as_they_are_written(
    response: str, reference: str, outcome: Outcome
) -> None:
    """Forms that were wrong or unparseable against their own value."""
    assert verify(response, reference).outcome is outcome


def test_a_bare_matrix_response_is_the_answer_not_its_last_entry() -> None:
    """A response that is only a matrix was read by its last number (the markup's environment
    names counted as prose words); an answer ending in a stray backslash was unparseable."""
    response = "\\begin{bmatrix} 2 & 0 \\\\ 0 & 3 \\end{bmatrix}"
    assert verify(response, "\\begin{pmatrix}2&0\\\\0&3\\end{pmatrix}").outcome is Outcome.CORRECT
    assert verify(response, "3").outcome is Outcome.WRONG
    assert verify("Answer: 207\\", "207").outcome is Outcome.CORRECT  # a stray backslash


def test_a_literal_matrix_raised_to_a_power_is_read_as_its_value() -> None:
    """``M^{-1}`` and ``M^{3}`` of a written-out matrix are the matrices they equal (they were
    left as an unevaluated power and compared as a scalar: wrong against their own value)."""
    inverse = "\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}^{-1}"
    value = "\\begin{pmatrix}-2&1\\\\1.5&-0.5\\end{pmatrix}"
    assert verify(f"\\boxed{{{inverse}}}", value).outcome is Outcome.CORRECT
    assert verify(f"\\boxed{{{value}}}", inverse).outcome is Outcome.CORRECT
    cube = "\\begin{pmatrix}1&1\\\\0&1\\end{pmatrix}^{3}"
    assert verify(f"\\boxed{{{cube}}}", "\\begin{pmatrix}1&3\\\\0&1\\end{pmatrix}").score == 1.0
    assert verify(f"\\boxed{{{inverse}}}", inverse[: -len("^{-1}")]).outcome is Outcome.WRONG
    singular = "\\begin{pmatrix}1&2\\\\2&4\\end{pmatrix}^{-1}"  # no inverse: never correct
    assert verify(f"\\boxed{{{singular}}}", "\\begin{pmatrix}1&0\\\\0&1\\end{pmatrix}").score == 0.0


def test_the_new_scans_are_linear_on_hostile_text() -> None:
    for text in (
        "$" * 200_000,
        "answer $" * 30_000,
        "\\(" * 100_000,
        "<|im_start|>" * 50_000,
        "\\boxed{1} and " * 10_000,
        "The final answer is " + "x is " * 20_000,
        "$x$. " * 40_000,
        "answer" + " " * 500_000 + "is 5",
    ):
        verify(text, "1")  # returns at all: no quadratic scan
