"""IFEval's instruction ids and the kwargs each takes: the wire contract of the
``instruction_following`` grader, checked when a request is read (pure, stdlib only).

The ids and kwarg names are google/IFEval's (lm-eval's ``instructions_registry``). IFEval rows
carry every kwarg name with ``None`` for those an instruction does not use; :func:`validate_kwargs`
drops them. A missing or ill-typed kwarg is an error (IFEval would draw a random value).

open-instruct's IFEvalG (the IF data of OLMo 2 and later) adds 29 ids (``IFEVALG_IDS``).
Tülu 3's RLVR data (allenai/RLVR-IFeval) names its constraints by open-instruct's function names
(``TULU_FUNCTIONS``: ``validate_word_constraint``, ``verify_keywords``, ...) with that function's
arguments (``N``, ``quantifier``, ``keyword_list``, ...): these are ids too, beside IFEval's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

__all__ = [
    "IFEVALG_IDS",
    "INSTRUCTION_IDS",
    "KWARGS",
    "QUANTIFIERS",
    "RELATIONS",
    "TULU_FUNCTIONS",
    "validate_kwargs",
]

RELATIONS: Final = ("less than", "at least")
QUANTIFIERS: Final = ("at least", "around", "at most")
INSTRUCTION_IDS: Final = (
    "keywords:existence",
    "keywords:frequency",
    "keywords:forbidden_words",
    "keywords:letter_frequency",
    "language:response_language",
    "length_constraints:number_sentences",
    "length_constraints:number_paragraphs",
    "length_constraints:number_words",
    "length_constraints:nth_paragraph_first_word",
    "detectable_content:number_placeholders",
    "detectable_content:postscript",
    "detectable_format:number_bullet_lists",
    "detectable_format:constrained_response",
    "detectable_format:number_highlighted_sections",
    "detectable_format:multiple_sections",
    "detectable_format:json_format",
    "detectable_format:title",
    "combination:two_responses",
    "combination:repeat_prompt",
    "startend:end_checker",
    "change_case:capital_word_frequency",
    "change_case:english_capital",
    "change_case:english_lowercase",
    "punctuation:no_comma",
    "startend:quotation",
)
_LETTER_FREQUENCY: Final = {
    "letter": "letter",
    "let_frequency": "count",
    "let_relation": "relation",
}
# open-instruct's ``IF_FUNCTIONS_MAP`` (Tülu 3's ``func_name``), each with its arguments
_TULU_KWARGS: Final[Mapping[str, Mapping[str, str]]] = {
    "verify_keywords": {"keyword_list": "words"},
    "verify_keyword_frequency": {"word": "text", "N": "number"},
    "validate_forbidden_words": {"forbidden_words": "words"},
    "verify_letter_frequency": {"letter": "character", "N": "number"},
    "validate_response_language": {"language": "language"},
    "verify_paragraph_count": {"N": "number"},
    "validate_word_constraint": {"N": "number", "quantifier": "quantifier"},
    "verify_sentence_constraint": {"N": "number", "quantifier": "quantifier"},
    "validate_paragraphs": {"N": "count", "first_word": "text", "i": "count"},
    "verify_postscript": {"postscript_marker": "text"},
    "validate_placeholders": {"N": "number"},
    "verify_bullet_points": {"N": "number"},
    "validate_title": {},
    "validate_choice": {"options": "options"},
    "validate_highlighted_sections": {"N": "number"},
    "validate_sections": {"N": "number", "section_splitter": "text"},
    "validate_json_format": {},
    "validate_repeat_prompt": {"original_prompt": "text"},
    "validate_two_responses": {},
    "validate_uppercase": {},
    "validate_lowercase": {},
    "validate_frequency_capital_words": {"N": "number", "quantifier": "quantifier"},
    "validate_end": {"end_phrase": "text"},
    "validate_quotation": {},
    "validate_no_commas": {},
}
TULU_FUNCTIONS: Final = tuple(_TULU_KWARGS)
# open-instruct's IFEvalG ids beyond IFEval's 25 (its instructions_registry), each with its kwargs
_IFEVALG_KWARGS: Final[Mapping[str, Mapping[str, str]]] = {
    "copy:repeat_phrase": {"phrase": "text", "small_n": "count"},
    "copy:copy": {"prompt_to_repeat": "text"},
    "new:copy_span_idx": {"prompt_to_repeat": "text", "n_start": "number", "n_end": "count"},
    "detectable_format:sentence_hyphens": {},
    "keywords:no_adjacent_consecutive": {},
    "detectable_format:square_brackets": {},
    "keywords:word_once": {"keyword": "text"},
    "keywords:word_count_different_numbers": {
        "keyword": "text",
        "frequency": "number",
        "relation": "relation",
    },
    "keywords:exclude_word_harder": {"keyword": "text"},
    "paragraphs:paragraphs": {},
    "paragraphs:paragraphs2": {},
    "first_word:first_word_sent": {"first_word": "first of"},
    "first_word:first_word_answer": {"first_word": "text"},
    "last_word:last_word_sent": {"last_word": "first of"},
    "last_word:last_word_answer": {"last_word": "text"},
    "detectable_format:bigram_wrapping": {},
    "copy:copying_simple": {"prompt_to_repeat": "text"},
    "copy:copying_multiple": {"prompt_to_repeat": "text", "N": "count"},
    "punctuation:punctuation_dot": {},
    "punctuation:punctuation_exclamation": {},
    "count:lowercase_counting": {"N": "count"},
    "letters:letter_counting": {"N": "count", "relation": "relation"},
    "letters:letter_counting2": _LETTER_FREQUENCY,  # IFEval's keywords:letter_frequency
    "count:counting_composition": {"n_sent": "count", "n_words": "count"},
    "count:count_unique": {},
    "count:count_increment_word": {"keyword1": "text", "keyword2": "text"},
    "keywords:palindrome": {},
    "keywords:keyword_specific_position": {"keyword": "first of", "n": "count", "m": "count"},
    "keywords:start_end": {},
}
IFEVALG_IDS: Final = tuple(_IFEVALG_KWARGS)

# The kwargs each instruction takes: name -> kind ("count": an int >= 1, "number": an int >= 0,
# "relation": one of RELATIONS, "quantifier": one of QUANTIFIERS, "text": a non-empty string,
# "words": a non-empty list of non-empty strings, "letter": one ASCII letter, "character": one
# character, "options": a non-empty list of strings or one string listing them, "first of": a
# non-empty string, or a list whose first item is one (IFEvalG takes that item), "language": a
# langdetect code such as "en" or "zh-cn").
KWARGS: Final[Mapping[str, Mapping[str, str]]] = {
    "keywords:existence": {"keywords": "words"},
    "keywords:frequency": {"keyword": "text", "frequency": "count", "relation": "relation"},
    "keywords:forbidden_words": {"forbidden_words": "words"},
    "keywords:letter_frequency": _LETTER_FREQUENCY,
    "language:response_language": {"language": "language"},
    "length_constraints:number_sentences": {"num_sentences": "count", "relation": "relation"},
    "length_constraints:number_paragraphs": {"num_paragraphs": "count"},
    "length_constraints:number_words": {"num_words": "count", "relation": "relation"},
    "length_constraints:nth_paragraph_first_word": {
        "num_paragraphs": "count",
        "nth_paragraph": "count",
        "first_word": "text",
    },
    "detectable_content:number_placeholders": {"num_placeholders": "count"},
    "detectable_content:postscript": {"postscript_marker": "text"},
    "detectable_format:number_bullet_lists": {"num_bullets": "count"},
    "detectable_format:number_highlighted_sections": {"num_highlights": "count"},
    "detectable_format:multiple_sections": {"section_spliter": "text", "num_sections": "count"},
    "combination:repeat_prompt": {"prompt_to_repeat": "text"},
    "startend:end_checker": {"end_phrase": "text"},
    "change_case:capital_word_frequency": {
        "capital_frequency": "count",
        "capital_relation": "relation",
    },
    **_TULU_KWARGS,
    **_IFEVALG_KWARGS,
}
_LANGUAGE_CODE = re.compile(r"[a-z]{2,3}(-[a-z]{2})?")
MAX_TEXT = 10_000
MAX_WORDS = 100


def _check_value(name: str, kind: str, value: Any) -> str | None:
    """What is wrong with one kwarg, or None."""
    if kind in ("count", "number"):
        low = 1 if kind == "count" else 0
        ok = isinstance(value, int) and not isinstance(value, bool) and low <= value <= 10_000_000
        return None if ok else f"an integer from {low}"
    if kind == "relation":
        return None if value in RELATIONS else f"one of {list(RELATIONS)}"
    if kind == "quantifier":
        return None if value in QUANTIFIERS else f"one of {list(QUANTIFIERS)}"
    if kind == "character":
        return None if isinstance(value, str) and len(value) == 1 else "one character"
    if kind == "options":
        if isinstance(value, str):
            ok = bool(value.strip()) and len(value) <= MAX_TEXT
        else:
            ok = (
                isinstance(value, list)
                and 0 < len(value) <= MAX_WORDS
                and all(isinstance(o, str) and o and len(o) <= 1_000 for o in value)
            )
        return None if ok else f"a list of 1 to {MAX_WORDS} non-empty strings, or one string"
    if kind == "first of":
        if isinstance(value, list) and value:
            value = value[0]
        ok = isinstance(value, str) and bool(value.strip()) and len(value) <= MAX_TEXT
        return None if ok else "a non-empty string (or a list whose first item is one)"
    if kind == "text":
        ok = isinstance(value, str) and bool(value.strip()) and len(value) <= MAX_TEXT
        return None if ok else f"a non-empty string of at most {MAX_TEXT} characters"
    if kind == "words":
        ok = (
            isinstance(value, list)
            and 0 < len(value) <= MAX_WORDS
            and all(isinstance(w, str) and w.strip() and len(w) <= 200 for w in value)
        )
        return None if ok else f"a list of 1 to {MAX_WORDS} non-empty strings"
    if kind == "letter":
        ok = isinstance(value, str) and len(value) == 1 and "a" <= value.lower() <= "z"
        return None if ok else "one ASCII letter"
    if kind == "language":
        ok = isinstance(value, str) and bool(_LANGUAGE_CODE.fullmatch(value))
        return None if ok else "a language code as langdetect gives it, e.g. 'en', 'zh-cn'"
    raise AssertionError(kind)


def validate_kwargs(instruction_id: str, kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The instruction's kwargs, checked (``None`` values dropped, as IFEval rows carry every
    kwarg name with ``None`` for the unused ones). Raises :class:`ValueError` saying what is
    wrong."""
    if instruction_id not in KWARGS and instruction_id not in INSTRUCTION_IDS:
        raise ValueError(
            f"unknown instruction id {instruction_id[:100]!r}; IFEval's ids are "
            f"{list(INSTRUCTION_IDS)}, open-instruct's IFEvalG adds {list(IFEVALG_IDS)} and "
            f"Tülu 3's (open-instruct's functions) are {list(TULU_FUNCTIONS)}"
        )
    wanted = KWARGS.get(instruction_id, {})
    given = {k: v for k, v in kwargs.items() if v is not None}
    extra = sorted(set(given) - set(wanted))
    if extra:
        takes = sorted(wanted) or "no kwargs"
        raise ValueError(f"{instruction_id} takes {takes}, not {extra[:10]}")
    for name, kind in wanted.items():
        if name not in given:
            raise ValueError(f"{instruction_id} needs the kwarg {name!r}")
        problem = _check_value(name, kind, given[name])
        if problem is not None:
            shown = repr(given[name])
            shown = shown if len(shown) <= 120 else shown[:120] + "..."
            raise ValueError(f"{instruction_id}: {name} must be {problem}, not {shown}")
    if instruction_id == "length_constraints:nth_paragraph_first_word":
        if given["nth_paragraph"] > given["num_paragraphs"]:
            raise ValueError(f"{instruction_id}: nth_paragraph is more than num_paragraphs")
    if instruction_id == "validate_paragraphs" and given["i"] > given["N"]:
        raise ValueError(f"{instruction_id}: i is more than N")
    for name, kind in wanted.items():
        if kind == "first of" and isinstance(given[name], list):
            given[name] = given[name][0]
    return given
