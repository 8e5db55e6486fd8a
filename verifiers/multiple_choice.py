r"""Multiple-choice answers: which option letter did the response pick?

    >>> from referee.verifiers.multiple_choice import verify_multiple_choice
    >>> verify_multiple_choice("... so the answer is (C).", "C").score
    1.0

The letter is read from the text after the last ``</think>`` (the whole response when that part
gives nothing), at the first of these places that gives one:

1. ``\boxed{...}`` (``\boxed{C}``, ``\boxed{\text{(C)}}``), every box counted;
2. the last ``<answer>...</answer>``;
3. a last line that is only a letter: ``C``, ``(C).``, ``**Option C**``; a one-line response may
   go on after a delimiter: ``C) 42``;
4. the last answer phrase that names a letter: "The answer is (C)", "**Answer:** C) 42",
   "the correct option is C", "I choose B", "I'll go with D";
5. the last "(B) is correct" / "B is the correct answer".

A letter counts only as a word of its own and only if it is one of ``choices``: the article in
"A good approach" and the pronoun in "I think" are not choices, nor is the "i" of "i.e.".
Lower-case letters count when they stand alone ("answer: c."), not before a word ("answer is a
bit ..."). Several different letters at the place that decided ("A or B", "A and C",
``\boxed{A} ... \boxed{B}``) are a hedge: outcome ``"hedged"``, score 0. Among phrases the last
one wins, so "the answer is A. Wait, no: the answer is B" reads B.

Every scan is linear in the response length (bounded look-around per match, no backtracking
patterns), so a hostile 1 MB response costs milliseconds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Final

from referee.verifiers.result import CheckResult
from referee.verifiers.text_scan import find_boxed, last_tag_content

__all__ = ["ChoiceExtraction", "extract_choice", "verify_multiple_choice"]

_THINK_END: Final = "</think>"
_MAX_SKIP: Final = 64  # how far a letter may stand from the phrase that announces it
_MAX_LINE: Final = 200

_ANSWER_PHRASE = re.compile(
    r"\b(?:answer(?:\s+(?:choice|option|letter))?|option|choice)"
    r"(?:\s*(?:is|:|=)|s\s+are|\s+(?:would|should|must|will)\s+be)"
    r"|\bI(?:\s*'ll|\s+will|\s+would|\s*'d|\s+am\s+going\s+to|\s*'m\s+going\s+to)?"
    r"\s+(?:choose|select|pick|go\s+with)\b"
    r"|\bgoing\s+with\b",
    re.IGNORECASE,
)
_IS_CORRECT = re.compile(
    r"\b(?:is|are)\s+(?:the\s+)?(?:(?:correct|right|best)\b|answer\b)", re.IGNORECASE
)

_OPEN_CHARS: Final = frozenset(" \t\r\n({[*_$\"'`“‘:#>")
_CLOSE_CHARS: Final = frozenset(")}]*_$\"'`”’")
_LATEX_WRAPPERS: Final = frozenset(
    (
        "text textbf textit textrm textnormal mathrm mathbf mathit emph mbox bf rm it boxed "
        "fbox left big Big bigl Bigl"
    ).split()
)
_FILLERS: Final = frozenset(
    (
        "option choice letter answer the therefore thus hence so clearly definitely likely "
        "probably most indeed just simply final"
    ).split()
)
# Words that may follow a choice letter "A" or "I" (otherwise read as the article / pronoun).
_CONTINUERS: Final = frozenset(
    (
        "because since as which is was with for but so given due here and or nor only alone "
        "instead then"
    ).split()
)
# A letter after a comma or "and" that is followed by one of these starts a new clause
# ("the answer is C, D is wrong"), it does not extend a list.
_CLAUSE_VERBS: Final = frozenset({"is", "was", "has", "does", "seems", "looks", "can"})
_CONNECTORS: Final = (", and", ", or", ",", "/", "&", "and/or", "or", "and", "nor")


@dataclass(frozen=True, slots=True)
class ChoiceExtraction:
    letter: str | None
    """The chosen letter (upper case), or ``None`` when none was found or several were given."""
    source: str | None
    """Where it was read: boxed, answer_tag, last_line, phrase, is_correct."""
    candidates: tuple[str, ...] = field(default=())
    """Every distinct letter given at that place, in order."""

    @property
    def hedged(self) -> bool:
        return len(self.candidates) > 1


def _is_word(ch: str) -> bool:
    return ch.isalnum()


def _word_at(s: str, i: int) -> str:
    """The run of letters starting at ``i`` (at most 24 of them), lower-cased."""
    j = i
    while j < len(s) and j - i < 24 and s[j].isalpha():
        j += 1
    return s[i:j].lower()


def _skip_open(s: str, i: int) -> int:
    """Skip what may stand before a letter: spaces, brackets, markup, ``\\text{``, fillers."""
    limit = min(len(s), i + _MAX_SKIP)
    while i < limit:
        ch = s[i]
        if ch in _OPEN_CHARS:
            i += 1
        elif ch == "\\":
            j = i + 1
            if j < len(s) and s[j] in "([":
                i = j + 1
                continue
            while j < len(s) and j - i < 16 and s[j].isalpha():
                j += 1
            if s[i + 1 : j] not in _LATEX_WRAPPERS:
                return i
            i = j
        elif ch.isalpha() and len(word := _word_at(s, i)) > 1 and word in _FILLERS:
            if i > 0 and _is_word(s[i - 1]):
                return i
            i += len(word)
        else:
            return i
    return i


def _skip_close(s: str, i: int) -> int:
    limit = min(len(s), i + _MAX_SKIP)
    while i < limit:
        if s[i] in _CLOSE_CHARS:
            i += 1
        elif s[i] == "\\" and i + 1 < len(s) and s[i + 1] in ")]":
            i += 2
        elif s.startswith("\\right", i):
            i += 6
        else:
            break
    return i


@dataclass(frozen=True, slots=True)
class _Letter:
    letter: str  # upper case
    end: int  # index after the letter and its closing brackets
    delimited: bool  # directly followed by ")", "." or ":" ("C) 42", "C. 42")


def _read_letter(s: str, i: int, choices: str, *, clause_check: bool = False) -> _Letter | None:
    """A choice letter standing as a word of its own at ``i`` (after skipping openers)."""
    j = _skip_open(s, i)
    if j >= len(s):
        return None
    ch = s[j]
    if not (ch.isascii() and ch.isalpha()) or ch.upper() not in choices:
        return None
    if j > 0 and _is_word(s[j - 1]):
        return None
    k = j + 1
    if k < len(s):
        nxt = s[k]
        if _is_word(nxt):
            return None
        if nxt in "'’" and k + 1 < len(s) and s[k + 1].isalpha():
            return None  # I'm, I'd, A's
        if nxt == "." and k + 1 < len(s) and s[k + 1].isalpha():
            return None  # i.e., e.g., U.S.
    delimited = k < len(s) and s[k] in ").:"
    end = _skip_close(s, k)
    if not _follower_ok(s, end, ch, clause_check=clause_check):
        return None
    return _Letter(ch.upper(), end, delimited)


def _follower_ok(s: str, k: int, ch: str, *, clause_check: bool) -> bool:
    """Whether what follows a letter lets it be a choice rather than an article or pronoun."""
    m = k
    while m < len(s) and m - k < _MAX_SKIP and s[m] in " \t":
        m += 1
    if m >= len(s) or not s[m].isalpha():
        return True
    word = _word_at(s, m)
    if clause_check and word in _CLAUSE_VERBS:
        return False
    if ch.islower():
        return word in ("or", "and", "nor")
    if ch in "AI" and s[m].islower():
        return word in _CONTINUERS
    return True


def _letter_list(s: str, i: int, choices: str) -> tuple[list[str], int, bool] | None:
    """Letters at ``i``: "C", "(A) or (B)", "A, C and D"; with the end and the first's delimiter."""
    first = _read_letter(s, i, choices)
    if first is None:
        return None
    letters, end = [first.letter], first.end
    for _ in range(len(choices)):
        m = end
        while m < len(s) and m - end < _MAX_SKIP and s[m] in " \t":
            m += 1
        connector = next((c for c in _CONNECTORS if s.startswith(c, m)), None)
        if connector is None:
            break
        after = m + len(connector)
        if connector[-1].isalpha() and after < len(s) and _is_word(s[after]):
            break  # "order", "andante": not a connector
        if connector in ("or", "and") and s.startswith("/or", after):
            after += 3
        nxt = _read_letter(s, after, choices, clause_check=True)
        if nxt is None:
            break
        letters.append(nxt.letter)
        end = nxt.end
    return letters, end, first.delimited


def _distinct(letters: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(letters))


def _content_letters(content: str, choices: str) -> list[str] | None:
    """Letters of a whole answer field (a box, an answer tag): "C", "(C) 42", "A or B"."""
    found = _letter_list(content, 0, choices)
    if found is None:
        return None
    letters, end, delimited = found
    rest = content[end:].strip().rstrip(".!").strip()
    if not rest or (delimited and _word_at(rest, 0) not in _CLAUSE_VERBS):
        return letters
    return None


def _from_boxes(text: str, choices: str) -> list[str] | None:
    letters: list[str] = []
    for content in find_boxed(text):
        got = _content_letters(content, choices)
        if got:
            letters.extend(got)
    return letters or None


def _from_last_line(text: str, choices: str) -> list[str] | None:
    body = text.rstrip()
    cut = body.rfind("\n")
    line = body[cut + 1 :].strip()
    if not line or len(line) > _MAX_LINE:
        return None
    found = _letter_list(line, 0, choices)
    if found is None:
        return None
    letters, end, delimited = found
    rest = line[end:].strip().rstrip(".!").strip()
    if not rest or (cut < 0 and delimited and _word_at(rest, 0) not in _CLAUSE_VERBS):
        return letters
    return None


def _from_phrases(text: str, choices: str) -> list[str] | None:
    starts = [m.end() for m in _ANSWER_PHRASE.finditer(text)]
    for start in reversed(starts):
        found = _letter_list(text, start, choices)
        if found is not None:
            return found[0]
    return None


def _letter_before(text: str, end: int, choices: str) -> str | None:
    """The choice letter just before ``end``: "(B) is correct", "Option B is the answer"."""
    i = end - 1
    limit = max(-1, end - _MAX_SKIP)
    while i > limit and (text[i] in " \t" or text[i] in _CLOSE_CHARS):
        i -= 1
    if i < 0 or not (text[i].isascii() and text[i].isalpha()):
        return None
    ch = text[i]
    if (i > 0 and _is_word(text[i - 1])) or ch.upper() not in choices:
        return None
    if ch.islower() and not (i > 0 and text[i - 1] in "(["):
        return None
    return ch.upper()


def _from_is_correct(text: str, choices: str) -> list[str] | None:
    starts = [m.start() for m in _IS_CORRECT.finditer(text)]
    for start in reversed(starts):
        letter = _letter_before(text, start, choices)
        if letter is not None:
            return [letter]
    return None


def _extract_segment(text: str, choices: str) -> ChoiceExtraction | None:
    found = _from_boxes(text, choices)
    if found:
        return _extraction(found, "boxed")
    tag = last_tag_content(text, "answer")
    if tag is not None:
        found = _content_letters(tag, choices) or _from_phrases(tag, choices)
        found = found or _from_is_correct(tag, choices)
        if found:
            return _extraction(found, "answer_tag")
    for source, reader in (
        ("last_line", _from_last_line),
        ("phrase", _from_phrases),
        ("is_correct", _from_is_correct),
    ):
        found = reader(text, choices)
        if found:
            return _extraction(found, source)
    return None


def _extraction(letters: list[str], source: str) -> ChoiceExtraction:
    candidates = _distinct(letters)
    letter = candidates[0] if len(candidates) == 1 else None
    return ChoiceExtraction(letter, source, candidates)


def _normalize_choices(choices: str) -> str:
    letters = choices.upper()
    if (
        len(letters) < 2
        or not all("A" <= ch <= "Z" for ch in letters)
        or len(set(letters)) != len(letters)
    ):
        raise ValueError(
            f"choices must be 2 to 26 distinct letters A-Z such as 'ABCD', got {choices!r}"
        )
    return letters


def extract_choice(response: str, choices: str = "ABCD") -> ChoiceExtraction:
    """Read the option letter a response chose. See the module docstring for where from.

    Raises :class:`ValueError` when ``choices`` is not 2-26 distinct letters.
    """
    letters = _normalize_choices(choices)
    text = response.replace("\x00", "")
    cut = text.rfind(_THINK_END)
    segments = [text[cut + len(_THINK_END) :], text] if cut >= 0 else [text]
    for segment in segments:
        found = _extract_segment(segment, letters)
        if found is not None:
            return found
    return ChoiceExtraction(None, None)


def _reference_letter(reference: str, choices: str) -> str | None:
    ref = reference.strip().rstrip(".").strip()
    if len(ref) == 3 and ref[0] + ref[2] in ("()", "[]"):
        ref = ref[1]
    elif len(ref) == 2 and ref[1] == ")":
        ref = ref[0]
    ref = ref.upper()
    return ref if len(ref) == 1 and ref in choices else None


def verify_multiple_choice(response: str, reference: str, choices: str = "ABCD") -> CheckResult:
    """Score 1.0 when the response chose the reference letter ("C", "(C)" or "c"), else 0.0.

    A reference that is not one of ``choices`` gives outcome ``"bad_reference"``; a response that
    gives several different letters gives ``"hedged"``. Raises :class:`ValueError` only when
    ``choices`` itself is malformed.
    """
    letters = _normalize_choices(choices)
    ref = _reference_letter(reference, letters)
    if ref is None:
        return CheckResult(
            0.0, "bad_reference", reason=f"reference {reference[:40]!r} is not one of {letters}"
        )
    found = extract_choice(response, letters)
    if found.hedged:
        shown = ", ".join(found.candidates)
        return CheckResult(0.0, "hedged", shown, f"several different choices given: {shown}")
    if found.letter is None:
        return CheckResult(0.0, "no_answer", reason="no choice letter found")
    if found.letter == ref:
        return CheckResult(1.0, "correct", found.letter)
    return CheckResult(0.0, "wrong", found.letter, f"chose {found.letter}, expected {ref}")
