"""IFEval's verifiable instructions, one check function per instruction id.

Each check is ``check(response, **kwargs) -> bool`` with IFEval's kwargs (the ids and names of
google/IFEval and lm-eval's ``instructions_registry.INSTRUCTION_DICT``); the logic follows
``lm_eval/tasks/ifeval/instructions.py`` (Apache-2.0, the Google Research original), so the
verdicts are IFEval's. Two deliberate differences, both for untrusted kwargs:

- kwargs are validated (:func:`validate`): a missing or ill-typed one is an error, where IFEval
  would draw a random value;
- keywords, forbidden words, section splitters and postscript markers are literal text
  (``re.escape``), where IFEval passes them to ``re`` as patterns (a caller's pattern could take
  exponential time). For IFEval's own data, plain words and markers, the verdicts are the same.

Tülu 3's constraints (open-instruct's functions, ``func_name`` rows) are checks here too, by
their function names: :mod:`referee.verifiers.instructions.tulu`; so are the ids open-instruct's
IFEvalG adds: :mod:`referee.verifiers.instructions.ifevalg`.
"""

from __future__ import annotations

import collections
import json
import re
from collections.abc import Callable, Mapping
from typing import Final

from referee.client.instruction_specs import INSTRUCTION_IDS, KWARGS, RELATIONS
from referee.client.instruction_specs import validate_kwargs as validate
from referee.verifiers.instructions.ifevalg import IFEVALG_CHECKS
from referee.verifiers.instructions.text_tools import (
    LanguageUnknown,
    count_sentences,
    count_words,
    detect_language,
    divided_paragraphs,
    word_tokenize,
)
from referee.verifiers.instructions.tulu import TULU_CHECKS, on_answer

__all__ = [
    "CHECKS",
    "INSTRUCTION_IDS",
    "KWARGS",
    "RELATIONS",
    "count_line_items",
    "count_placeholders",
    "titles",
    "validate",
]

_CONSTRAINED_RESPONSES: Final = ("My answer is yes.", "My answer is no.", "My answer is maybe.")


def _compare(count: int, relation: str, threshold: int) -> bool:
    return count < threshold if relation == "less than" else count >= threshold


def _language(value: str, *, language: str) -> bool:
    try:
        return detect_language(value) == language
    except LanguageUnknown:  # IFEval: "Count as instruction is followed."
        return True


def _number_sentences(value: str, *, num_sentences: int, relation: str) -> bool:
    return _compare(count_sentences(value), relation, num_sentences)


def count_placeholders(text: str) -> int:
    """``len(re.findall(r"\\[.*?\\]", text))`` in linear time (the pattern rescans the line
    from every ``[`` that has no ``]`` after it on its line: a line of 50,000 ``[`` takes
    seconds). A ``[`` matches up to the first ``]`` after it on its line; one that has none
    fails, and so does every later ``[`` of that line."""
    count, start = 0, 0
    while True:
        opening = text.find("[", start)
        if opening == -1:
            return count
        closing = text.find("]", opening + 1)
        line_end = text.find("\n", opening + 1)
        if closing != -1 and (line_end == -1 or closing < line_end):
            count += 1
            start = closing + 1
        elif line_end == -1:
            return count
        else:
            start = line_end + 1


def titles(text: str) -> list[str]:
    """``re.findall(r"<<[^\\n]+>>", text)`` in linear time (the greedy pattern backtracks over
    the rest of the line from every ``<<``). A ``<<`` matches up to the last ``>>`` of its line
    that leaves at least one character between; one that has none fails, and so does every later
    ``<<`` of that line."""
    found: list[str] = []
    start, n = 0, len(text)
    while True:
        opening = text.find("<<", start)
        if opening == -1:
            return found
        line_end = text.find("\n", opening)
        stop = n if line_end == -1 else line_end
        closing = text.rfind(">>", opening + 3, stop)
        if closing != -1:
            found.append(text[opening : closing + 2])
            start = closing + 2
        elif line_end == -1:
            return found
        else:
            start = line_end + 1


def _number_placeholders(value: str, *, num_placeholders: int) -> bool:
    return count_placeholders(value) >= num_placeholders


_NON_SPACE = re.compile(r"\S")


def count_line_items(text: str, marker: str, then_other: bool) -> int:
    """``len(re.findall(r"^\\s*M.*$", text, re.MULTILINE))`` for the marker ``M`` (``then_other``:
    ``M[^M]``), IFEval's bullet patterns, counted in linear time: the pattern backtracks over
    every line start of a run of blank lines (quadratic: 60,000 newlines, a degenerate RL
    output, take seconds). A line start matches when the first non-space character at or after
    it (``\\s`` spans newlines) is the marker (followed by another character that is not the
    marker); the match then runs to the end of that line, and the search goes on after it."""
    n, count, start = len(text), 0, 0
    while start <= n:
        found = _NON_SPACE.search(text, start)
        if found is None:
            break
        first = found.start()
        if text[first] == marker and (
            not then_other or (first + 1 < n and text[first + 1] != marker)
        ):
            count += 1
            end = text.find("\n", first + (2 if then_other else 1))
        else:  # every line start up to ``first`` fails alike
            end = text.find("\n", first)
        if end == -1:
            break
        start = end + 1
    return count


def _number_bullet_lists(value: str, *, num_bullets: int) -> bool:
    stars = count_line_items(value, "*", then_other=True)
    dashes = count_line_items(value, "-", then_other=False)
    return stars + dashes == num_bullets


def _constrained_response(value: str) -> bool:
    value = value.strip()
    return any(option in value for option in _CONSTRAINED_RESPONSES)


def _number_highlighted_sections(value: str, *, num_highlights: int) -> bool:
    found = sum(1 for h in re.findall(r"\*[^\n\*]*\*", value) if h.strip("*").strip())
    found += sum(
        1
        for h in re.findall(r"\*\*[^\n\*]*\*\*", value)
        if h.removeprefix("**").removesuffix("**").strip()
    )
    return found >= num_highlights


def _multiple_sections(value: str, *, section_spliter: str, num_sections: int) -> bool:
    pattern = r"\s?" + re.escape(section_spliter.strip()) + r"\s?\d+\s?"
    return len(re.split(pattern, value)) - 1 >= num_sections


def _number_paragraphs(value: str, *, num_paragraphs: int) -> bool:
    return divided_paragraphs(re.split(r"\s?\*\*\*\s?", value)) == num_paragraphs


def _postscript(value: str, *, postscript_marker: str) -> bool:
    marker = postscript_marker.strip()
    value = value.lower()
    if marker == "P.P.S":
        pattern = r"\s*p\.\s?p\.\s?s.*$"
    elif marker == "P.S.":
        pattern = r"\s*p\.\s?s\..*$"
    else:
        pattern = r"\s*" + re.escape(marker.lower()) + r".*$"
    return bool(re.findall(pattern, value, flags=re.MULTILINE))


def _keywords_exist(value: str, *, keywords: list[str]) -> bool:
    return all(re.search(re.escape(k), value, flags=re.IGNORECASE) for k in keywords)


def _keyword_frequency(value: str, *, keyword: str, frequency: int, relation: str) -> bool:
    found = len(re.findall(re.escape(keyword.strip()), value, flags=re.IGNORECASE))
    return _compare(found, relation, frequency)


def _number_words(value: str, *, num_words: int, relation: str) -> bool:
    return _compare(count_words(value), relation, num_words)


def _json_format(value: str) -> bool:
    value = (
        value.strip()
        .removeprefix("```json")
        .removeprefix("```Json")
        .removeprefix("```JSON")
        .removeprefix("```")
        .removesuffix("```")
        .strip()
    )
    try:
        json.loads(value)
    except ValueError:
        return False
    except RecursionError:  # nested deeper than the parser goes: not a usable JSON answer
        return False
    return True


def _nth_paragraph_first_word(
    value: str, *, num_paragraphs: int, nth_paragraph: int, first_word: str
) -> bool:
    paragraphs = re.split(r"\n\n", value)
    count = len(paragraphs) - sum(1 for p in paragraphs if not p.strip())
    if nth_paragraph > count:
        return False
    paragraph = paragraphs[nth_paragraph - 1].strip()
    if not paragraph:
        return False
    word = paragraph.split()[0].strip().lstrip("'").lstrip('"')
    first = ""
    for letter in word:
        if letter in {".", ",", "?", "!", "'", '"'}:
            break
        first += letter.lower()
    return count == num_paragraphs and first == first_word.lower()


def _forbidden_words(value: str, *, forbidden_words: list[str]) -> bool:
    return not any(
        re.search(r"\b" + re.escape(w) + r"\b", value, flags=re.IGNORECASE) for w in forbidden_words
    )


def _two_responses(value: str) -> bool:
    valid = []
    parts = value.split("******")
    for index, part in enumerate(parts):
        if not part.strip():
            if index not in (0, len(parts) - 1):
                return False
        else:
            valid.append(part)
    return len(valid) == 2 and valid[0].strip() != valid[1].strip()


def _repeat_prompt(value: str, *, prompt_to_repeat: str) -> bool:
    return value.strip().lower().startswith(prompt_to_repeat.strip().lower())


def _end_checker(value: str, *, end_phrase: str) -> bool:
    return value.strip().strip('"').lower().endswith(end_phrase.strip().lower())


def _title(value: str) -> bool:
    return any(t.lstrip("<").rstrip(">").strip() for t in titles(value))


def _letter_frequency(value: str, *, letter: str, let_frequency: int, let_relation: str) -> bool:
    found = collections.Counter(value.lower())[letter.strip().lower()]
    return _compare(found, let_relation, let_frequency)


def _english_capital(value: str) -> bool:
    try:
        return value.isupper() and detect_language(value) == "en"
    except LanguageUnknown:
        return True


def _english_lowercase(value: str) -> bool:
    try:
        return value.islower() and detect_language(value) == "en"
    except LanguageUnknown:
        return True


def _no_comma(value: str) -> bool:
    return "," not in value


def _capital_word_frequency(value: str, *, capital_frequency: int, capital_relation: str) -> bool:
    found = sum(1 for word in word_tokenize(value) if word.isupper())
    return _compare(found, capital_relation, capital_frequency)


def _quotation(value: str) -> bool:
    value = value.strip()
    return len(value) > 1 and value[0] == '"' and value[-1] == '"'


CHECKS: Final[Mapping[str, Callable[..., bool]]] = {
    "keywords:existence": _keywords_exist,
    "keywords:frequency": _keyword_frequency,
    "keywords:forbidden_words": _forbidden_words,
    "keywords:letter_frequency": _letter_frequency,
    "language:response_language": _language,
    "length_constraints:number_sentences": _number_sentences,
    "length_constraints:number_paragraphs": _number_paragraphs,
    "length_constraints:number_words": _number_words,
    "length_constraints:nth_paragraph_first_word": _nth_paragraph_first_word,
    "detectable_content:number_placeholders": _number_placeholders,
    "detectable_content:postscript": _postscript,
    "detectable_format:number_bullet_lists": _number_bullet_lists,
    "detectable_format:constrained_response": _constrained_response,
    "detectable_format:number_highlighted_sections": _number_highlighted_sections,
    "detectable_format:multiple_sections": _multiple_sections,
    "detectable_format:json_format": _json_format,
    "detectable_format:title": _title,
    "combination:two_responses": _two_responses,
    "combination:repeat_prompt": _repeat_prompt,
    "startend:end_checker": _end_checker,
    "change_case:capital_word_frequency": _capital_word_frequency,
    "change_case:english_capital": _english_capital,
    "change_case:english_lowercase": _english_lowercase,
    "punctuation:no_comma": _no_comma,
    "startend:quotation": _quotation,
    **TULU_CHECKS,
    **IFEVALG_CHECKS,
    "letters:letter_counting2": on_answer(_letter_frequency),
}
