"""Multiple-choice extraction and scoring on the shapes real model outputs have."""

from __future__ import annotations

import pytest

from referee.verifiers.multiple_choice import extract_choice, verify_multiple_choice

TEN = "ABCDEFGHIJ"

# (response, choices, expected letter or None)
EXTRACT_CASES: list[tuple[str, str, str | None]] = [
    # boxed
    (r"So the final answer is $\boxed{C}$.", "ABCD", "C"),
    (r"Therefore \boxed{\text{(C)}}", "ABCD", "C"),
    (r"\boxed{\textbf{B}}", "ABCD", "B"),
    (r"$\boxed{(D)}$", "ABCD", "D"),
    (r"The answer: \boxed{C) 42}", "ABCD", "C"),
    (r"\boxed{\text{Option A}}", "ABCD", "A"),
    (r"\boxed{b}", "ABCD", "B"),
    (r"\boxed{C} and to double check, \boxed{C}", "ABCD", "C"),
    (r"The value is \boxed{42}. Looking at the options, the answer is (B).", "ABCD", "B"),
    # answer tags
    ("<answer>C</answer>", "ABCD", "C"),
    ("<think>Let me compare A and B.</think>\n<answer>(B)</answer>", "ABCD", "B"),
    ("<answer>The answer is D</answer>", "ABCD", "D"),
    ("<answer> A) 3/4 </answer>", "ABCD", "A"),
    # answer phrases
    ("The answer is (C).", "ABCD", "C"),
    ("The answer is C because the others contradict the premise.", "ABCD", "C"),
    ("Answer: C", "ABCD", "C"),
    ("**Answer:** C) 42", "ABCD", "C"),
    ("Working...\n\n**Final Answer:** (B)\n\nThis is because ...", "ABCD", "B"),
    ("After checking each option, the correct option is C.", "ABCD", "C"),
    ("Comparing the two, I choose B.", "ABCD", "B"),
    ("Both look plausible but I'll go with D.", "ABCD", "D"),
    ("The correct answer is therefore option A, since x > 0.", "ABCD", "A"),
    ("The answer is: **D**", "ABCD", "D"),
    ("Thus the answer is c.", "ABCD", "C"),
    ("The answer is A. Wait, that ignores friction. The answer is B.", "ABCD", "B"),
    ("The answer is A because of symmetry.", "ABCD", "A"),
    (r"The answer is \(\text{B}\).", "ABCD", "B"),
    ("Final answer: J", TEN, "J"),
    ("The answer is (H).", TEN, "H"),
    # "X is correct"
    ("(B) is correct.", "ABCD", "B"),
    ("Going through them, B is the correct answer here, as shown.", "ABCD", "B"),
    ("After elimination, Option D is correct for this reaction.", "ABCD", "D"),
    # bare letters
    ("C", "ABCD", "C"),
    ("C.", "ABCD", "C"),
    ("(C)", "ABCD", "C"),
    ("  **C**  ", "ABCD", "C"),
    ("Option C", "ABCD", "C"),
    ("C) 42", "ABCD", "C"),
    ("Long reasoning here about the options.\n\nB", "ABCD", "B"),
    ("<think>It could be A, or maybe C.</think>\nD", "ABCD", "D"),
    ("<think>\nthe answer is A\n</think>\n\nThe answer is B.", "ABCD", "B"),
    # letters inside words and as articles / pronouns
    ("A good approach is to compute the energy. Hence the answer is D.", "ABCD", "D"),
    ("I think the answer is B.", TEN, "B"),
    ("I think about it: I believe the answer is (E).", TEN, "E"),
    ("Answer: I think it is not obvious.", TEN, None),
    ("The answer is a bit subtle; I'd say more work is needed.", "ABCD", None),
    ("i.e. the answer is i.e. unclear", TEN, None),
    ("Because ABCD are all vectors, nothing follows.", "ABCD", None),
    ("I am not sure.", TEN, None),
    ("The answer is E.", "ABCD", None),
    ("", "ABCD", None),
    ("no answer given here", "ABCD", None),
    ("(A) is incorrect", "ABCD", None),
]

HEDGED_CASES: list[tuple[str, tuple[str, ...]]] = [
    ("The answer is A or B.", ("A", "B")),
    (r"So \boxed{A} ... actually \boxed{B}", ("A", "B")),
    ("A and C", ("A", "C")),
    ("The answer is (A) or (B)", ("A", "B")),
    (r"\boxed{A, C}", ("A", "C")),
    ("Answer: B/D", ("B", "D")),
    ("<answer>A or D</answer>", ("A", "D")),
    ("The correct answers are A, B, and C.", ("A", "B", "C")),
]


@pytest.mark.parametrize(("response", "choices", "expected"), EXTRACT_CASES)
def test_extract_choice(response: str, choices: str, expected: str | None) -> None:
    found = extract_choice(response, choices)
    assert found.letter == expected, found
    assert not found.hedged


@pytest.mark.parametrize(("response", "candidates"), HEDGED_CASES)
def test_hedged(response: str, candidates: tuple[str, ...]) -> None:
    found = extract_choice(response, "ABCD")
    assert found.letter is None
    assert found.hedged
    assert found.candidates == candidates
    result = verify_multiple_choice(response, candidates[0])
    assert (result.score, result.outcome) == (0.0, "hedged")


def test_not_hedged_by_a_new_clause() -> None:
    assert extract_choice("The answer is C, D is wrong because ...").letter == "C"


@pytest.mark.parametrize(
    ("response", "reference", "score", "outcome"),
    [
        ("The answer is (C).", "C", 1.0, "correct"),
        ("The answer is (C).", "(C)", 1.0, "correct"),
        ("The answer is (C).", "c", 1.0, "correct"),
        ("The answer is (C).", " C. ", 1.0, "correct"),
        ("The answer is (C).", "B", 0.0, "wrong"),
        ("Nothing to see", "B", 0.0, "no_answer"),
        ("The answer is (C).", "E", 0.0, "bad_reference"),
        ("The answer is (C).", "", 0.0, "bad_reference"),
        ("The answer is (C).", "42", 0.0, "bad_reference"),
    ],
)
def test_verify(response: str, reference: str, score: float, outcome: str) -> None:
    result = verify_multiple_choice(response, reference)
    assert (result.score, result.outcome) == (score, outcome)


def test_verify_ten_choices_and_details() -> None:
    result = verify_multiple_choice("Answer: (I)", "I", TEN)
    assert result.to_dict() == {
        "score": 1.0,
        "outcome": "correct",
        "extracted": "I",
        "reason": None,
    }
    wrong = verify_multiple_choice("Answer: (G)", "I", TEN)
    assert (wrong.extracted, wrong.reason) == ("G", "chose G, expected I")
    assert verify_multiple_choice("Answer: (I)", "I").outcome == "bad_reference"


@pytest.mark.parametrize("choices", ["", "A", "AAB", "AB1", "ÄB"])
def test_bad_choices_raise(choices: str) -> None:
    with pytest.raises(ValueError, match="choices"):
        extract_choice("C", choices)


@pytest.mark.slow  # about 1 s: large hostile inputs
@pytest.mark.parametrize(
    "hostile",
    [
        "(" * 1_000_000,
        "\\boxed{" * 150_000,
        "<think>" * 150_000,
        "answer is " * 100_000,
        "A or " * 200_000,
        "\x00" * 1_000_000,
        "the answer is (" + "(" * 1_000_000 + "C",
        "<answer>" * 120_000 + "</answer>",
        "I choose " * 100_000,
        "is correct " * 90_000,
        "\\boxed " * 150_000,
    ],
)
def test_hostile_inputs_finish(hostile: str) -> None:
    # None names a choice the way the rules read one (the "(C)" stands more than 64 characters
    # after its phrase; "A or A" is not an answer phrase, "I" is not a choice): no answer.
    result = verify_multiple_choice(hostile, "C")
    assert (result.outcome, result.score, result.extracted) == ("no_answer", 0.0, None)
    assert result.reason == "no choice letter found"


def test_nul_bytes_are_ignored() -> None:
    assert extract_choice("The answer is \x00(C)\x00.").letter == "C"
