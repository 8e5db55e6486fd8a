"""Tülu 3's verifiable instructions: the 25 constraint functions of allenai/RLVR-IFeval.

Tülu 3's RLVR data (``allenai/RLVR-IFeval`` and the mixes built on it) gives each row's ground
truth as ``{"func_name": "validate_word_constraint", "N": 50, "quantifier": "at least", ...}``
(every argument name present, ``None`` for those the function does not take), and open-instruct
rewards it with the function of that name from ``open_instruct/if_functions.py`` (its
``IFEvalVerifierOld``; checked here against open-instruct at commit e6c3044a, 2026-08-20).
These checks give the same verdicts on the text open-instruct checks: the response after the
last ``</think>``, with ``<|assistant|>``, ``<answer>`` and ``</answer>`` removed, stripped.
The differences, each for untrusted input:

- an empty answer follows nothing (open-instruct's old verifier would pass it for
  ``validate_lowercase`` and the like; its newer IFEvalG verifier gives 0 too);
- options given as one string (``"('My answer is yes.', 'My answer is no.')"``) are read as
  the options that string lists, where ``any(option in text for option in options)`` tests
  each *character*;
- the language is detected with langdetect seeded (a reward never changes between two calls)
  and a text with no language features follows nothing (langdetect raises there);
- every pattern runs in linear time (``\\[(.*?)\\]`` rescans a line of ``[`` from each one).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable, Mapping
from typing import Any, Final

from referee.verifiers.instructions.text_tools import LanguageUnknown, detect_language

__all__ = ["TULU_CHECKS", "answer_text", "count_pairs", "on_answer", "options_of", "pair_spans"]


def answer_text(value: str) -> str:
    """What open-instruct checks: answer tags and the assistant marker removed, stripped."""
    for tag in ("<|assistant|>", "<answer>", "</answer>"):
        value = value.replace(tag, "")
    return value.strip()


def pair_spans(text: str, opening: str, closing: str) -> list[tuple[int, int]]:
    """The spans ``re.finditer(re.escape(opening) + "(.*?)" + re.escape(closing), text)``
    matches, in linear time: an opening matches up to the first closing after it on its line;
    one that has none fails, and so does every later opening of that line."""
    spans: list[tuple[int, int]] = []
    start = 0
    while True:
        found = text.find(opening, start)
        if found == -1:
            return spans
        end = text.find(closing, found + len(opening))
        line_end = text.find("\n", found + len(opening))
        if end != -1 and (line_end == -1 or end < line_end):
            spans.append((found, end + len(closing)))
            start = end + len(closing)
        elif line_end == -1:
            return spans
        else:
            start = line_end + 1


def count_pairs(text: str, opening: str, closing: str) -> int:
    """``len(re.findall(re.escape(opening) + "(.*?)" + re.escape(closing), text))`` in linear
    time (:func:`pair_spans`)."""
    return len(pair_spans(text, opening, closing))


def options_of(options: Any) -> list[str]:
    """The options of ``validate_choice``: a list as it is; a string listing them as a Python or
    JSON list/tuple read as that list; any other string is the one option."""
    if isinstance(options, str):
        try:
            read = ast.literal_eval(options.strip())
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return [options]
        if isinstance(read, list | tuple) and read and all(isinstance(o, str) for o in read):
            return list(read)
        return [options]
    return [str(o) for o in options]


def _quantified(count: int, n: int, quantifier: str, tolerance: int) -> bool:
    if quantifier == "at least":
        return count >= n
    if quantifier == "at most":
        return count <= n
    return abs(count - n) <= tolerance  # "around"


def _tolerance(n: int) -> int:
    return max(round(n * 0.1), 1)


_WORD = re.compile(r"\b\w+\b")
_SENTENCE_BREAK = re.compile(r"(?<!\w\.\w.)(?<![A-Z][a-z]\.)(?<=\.|\?|!)\s")
_CAPITAL_WORD = re.compile(r"\b[A-Z]+\b")


def _keywords(text: str, *, keyword_list: list[str]) -> bool:
    lowered = text.lower()
    return all(k.lower() in lowered for k in keyword_list)


def _keyword_frequency(text: str, *, word: str, N: int) -> bool:
    wanted = word.lower()
    return sum(1 for w in _WORD.findall(text.lower()) if w == wanted) == N


def _forbidden(text: str, *, forbidden_words: list[str]) -> bool:
    lowered = text.lower()
    return not any(w.lower() in lowered for w in forbidden_words)


def _letter_frequency(text: str, *, letter: str, N: int) -> bool:
    return text.count(letter) == N


def _language(text: str, *, language: str) -> bool:
    try:
        return detect_language(text) == language
    except LanguageUnknown:
        return False


def _paragraph_count(text: str, *, N: int) -> bool:
    cleaned = "\n".join(line.strip() for line in text.splitlines()).strip()
    paragraphs = cleaned.split("* * *")
    return all(p.strip() for p in paragraphs) and len(paragraphs) == N


def _word_constraint(text: str, *, N: int, quantifier: str) -> bool:
    return _quantified(len(text.split()), N, quantifier, _tolerance(N))


def _sentence_constraint(text: str, *, N: int, quantifier: str) -> bool:
    return _quantified(len(_SENTENCE_BREAK.split(text)), N, quantifier, 1)


def _paragraphs(text: str, *, N: int, first_word: str, i: int) -> bool:
    paragraphs = text.split("\n\n")
    return len(paragraphs) == N and paragraphs[i - 1].strip().startswith(first_word)


def _postscript(text: str, *, postscript_marker: str) -> bool:
    at = text.find(postscript_marker)
    return at != -1 and len(text[at:].strip()) > len(postscript_marker)


def _placeholders(text: str, *, N: int) -> bool:
    return count_pairs(text, "[", "]") >= N


def _bullet_points(text: str, *, N: int) -> bool:
    return sum(1 for line in text.split("\n") if line.strip().startswith(("*", "-"))) == N


def _title(text: str) -> bool:
    return count_pairs(text, "<<", ">>") > 0


def _choice(text: str, *, options: Any) -> bool:
    return any(option in text for option in options_of(options))


def _highlighted(text: str, *, N: int) -> bool:
    return count_pairs(text, "*", "*") >= N


def _sections(text: str, *, N: int, section_splitter: str) -> bool:
    sections = text.split(section_splitter)
    return len(sections) - (sections[0] == "") == N


def _json_format(text: str) -> bool:
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


def _repeat_prompt(text: str, *, original_prompt: str) -> bool:
    return text.startswith(original_prompt)


def _two_responses(text: str) -> bool:
    if text.count("******") != 1:
        return False
    first, second = text.split("******")
    return first.strip() != second.strip()


def _uppercase(text: str) -> bool:
    return text == text.upper()


def _lowercase(text: str) -> bool:
    return text == text.lower()


def _capital_words(text: str, *, N: int, quantifier: str) -> bool:
    return _quantified(len(_CAPITAL_WORD.findall(text)), N, quantifier, _tolerance(N))


def _end(text: str, *, end_phrase: str) -> bool:
    return text.endswith(end_phrase)


def _quotation(text: str) -> bool:
    return text.startswith('"') and text.endswith('"')


def _no_commas(text: str) -> bool:
    return "," not in text


def on_answer(check: Callable[..., bool]) -> Callable[..., bool]:
    """``check`` on the text open-instruct checks (:func:`answer_text`); an empty one follows
    nothing."""

    def checked(value: str, **kwargs: Any) -> bool:
        text = answer_text(value)
        return bool(text) and check(text, **kwargs)

    checked.__name__ = check.__name__
    return checked


_FUNCTIONS: Final[dict[str, Callable[..., bool]]] = {
    "verify_keywords": _keywords,
    "verify_keyword_frequency": _keyword_frequency,
    "validate_forbidden_words": _forbidden,
    "verify_letter_frequency": _letter_frequency,
    "validate_response_language": _language,
    "verify_paragraph_count": _paragraph_count,
    "validate_word_constraint": _word_constraint,
    "verify_sentence_constraint": _sentence_constraint,
    "validate_paragraphs": _paragraphs,
    "verify_postscript": _postscript,
    "validate_placeholders": _placeholders,
    "verify_bullet_points": _bullet_points,
    "validate_title": _title,
    "validate_choice": _choice,
    "validate_highlighted_sections": _highlighted,
    "validate_sections": _sections,
    "validate_json_format": _json_format,
    "validate_repeat_prompt": _repeat_prompt,
    "validate_two_responses": _two_responses,
    "validate_uppercase": _uppercase,
    "validate_lowercase": _lowercase,
    "validate_frequency_capital_words": _capital_words,
    "validate_end": _end,
    "validate_quotation": _quotation,
    "validate_no_commas": _no_commas,
}
TULU_CHECKS: Final[Mapping[str, Callable[..., bool]]] = {
    name: on_answer(check) for name, check in _FUNCTIONS.items()
}
