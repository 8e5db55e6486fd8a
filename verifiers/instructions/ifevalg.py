"""The instructions open-instruct's IFEvalG adds to IFEval's 25 (AllenAI's IF training data).

open-instruct's newer IFEval rows (``[{"instruction_id": [...], "kwargs": [...]}]``, the RLVR
instruction data of OLMo 2 and later, e.g. ``allenai/IF_multi_constraints_upto5``) use IFEval's
ids and 29 more (``open_instruct/IFEvalG/instructions.py``, registered in its
``instructions_registry``): ``copy:repeat_phrase``, ``keywords:word_once``,
``count:counting_composition``, ``first_word:first_word_sent``... Each check here gives the
verdict of IFEvalG's ``check_following`` at open-instruct's commit e6c3044a (2026-08-20), with
the same tokenizers (IFEval's regex sentence splitter, :func:`split_into_sentences`, written
after Google's IFEval as lm-eval ships it; nltk's ``word_tokenize``). The differences, each for
untrusted kwargs:

- kwargs are validated: a missing one is an error where IFEvalG draws a random value (also for
  a zero ``n_start`` or ``N``, which it takes as missing);
- keywords and phrases are literal text (``re.escape``), where IFEvalG passes them to ``re``
  as patterns;
- ``copy:repeat_phrase`` finds its phrases in linear time (the pattern ``first .*? last``
  rescans the line from every first word).

The text checked is what open-instruct's ``IFEvalVerifier`` checks: the response after the last
``</think>``, answer tags removed, stripped (IFEval's own ids keep IFEval's reading).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Mapping
from typing import Final

from referee.verifiers.instructions.text_tools import divided_paragraphs, word_tokenize
from referee.verifiers.instructions.tulu import on_answer, pair_spans

__all__ = ["IFEVALG_CHECKS", "split_into_sentences"]

_ALPHABETS = "([A-Za-z])"
_PREFIXES = "(Mr|St|Mrs|Ms|Dr)[.]"
_SUFFIXES = "(Inc|Ltd|Jr|Sr|Co)"
_STARTERS = (
    r"(Mr|Mrs|Ms|Dr|Prof|Capt|Cpt|Lt|He\s|She\s|It\s|They\s|Their\s|Our\s|We\s|But\s|However\s"
    r"|That\s|This\s|Wherever)"
)
_ACRONYMS = "([A-Z][.][A-Z][.](?:[A-Z][.])?)"
_WEBSITES = "[.](com|net|org|io|gov|edu|me)"
_DIGITS = "([0-9])"
_MULTIPLE_DOTS = re.compile(r"\.{2,}")


def split_into_sentences(text: str) -> list[str]:
    """IFEval's regex sentence splitter (``instructions_util.split_into_sentences``): known
    abbreviations, initials, decimals, websites and ellipses keep their dots; a sentence ends
    at ``.``, ``?`` or ``!``."""
    text = " " + text + "  "
    text = text.replace("\n", " ")
    text = re.sub(_PREFIXES, "\\1<prd>", text)
    text = re.sub(_WEBSITES, "<prd>\\1", text)
    text = re.sub(_DIGITS + "[.]" + _DIGITS, "\\1<prd>\\2", text)
    text = _MULTIPLE_DOTS.sub(lambda m: "<prd>" * len(m.group(0)) + "<stop>", text)
    if "Ph.D" in text:
        text = text.replace("Ph.D.", "Ph<prd>D<prd>")
    text = re.sub(r"\s" + _ALPHABETS + "[.] ", " \\1<prd> ", text)
    text = re.sub(_ACRONYMS + " " + _STARTERS, "\\1<stop> \\2", text)
    text = re.sub(
        _ALPHABETS + "[.]" + _ALPHABETS + "[.]" + _ALPHABETS + "[.]",
        "\\1<prd>\\2<prd>\\3<prd>",
        text,
    )
    text = re.sub(_ALPHABETS + "[.]" + _ALPHABETS + "[.]", "\\1<prd>\\2<prd>", text)
    text = re.sub(" " + _SUFFIXES + "[.] " + _STARTERS, " \\1<stop> \\2", text)
    text = re.sub(" " + _SUFFIXES + "[.]", " \\1<prd>", text)
    text = re.sub(" " + _ALPHABETS + "[.]", " \\1<prd>", text)
    text = text.replace(".”", "”.").replace('."', '".').replace('!"', '"!').replace('?"', '"?')
    text = text.replace(".", ".<stop>").replace("?", "?<stop>").replace("!", "!<stop>")
    text = text.replace("<prd>", ".")
    sentences = [s.strip() for s in text.split("<stop>")]
    if sentences and not sentences[-1]:
        sentences = sentences[:-1]
    return sentences


def _occurrences(keyword: str, value: str) -> int:
    return len(re.findall(re.escape(keyword.strip()), value, flags=re.IGNORECASE))


def _repeat_phrase(value: str, *, phrase: str, small_n: int) -> bool:
    reference = phrase.strip().split()
    found = [value[a:b] for a, b in pair_spans(value, reference[0] + " ", " " + reference[-1])]
    if len(found) != small_n:
        return False
    changed_once = 0
    for words in (f.split() for f in found):
        if len(words) != len(reference):
            return False
        differences = sum(1 for w, r in zip(words, reference, strict=True) if w != r)
        if differences > 1:
            return False
        changed_once += differences == 1
    return changed_once == small_n


def _copy(value: str, *, prompt_to_repeat: str) -> bool:
    return value.strip().lower() == prompt_to_repeat.strip().lower()


def _copy_span(value: str, *, prompt_to_repeat: str, n_start: int, n_end: int) -> bool:
    return value.strip().lower() == prompt_to_repeat[n_start:n_end].strip().lower()


def _sentence_hyphens(value: str) -> bool:
    gold = split_into_sentences(value.replace("-", " "))
    return all(s.strip() == s and s == g for s, g in zip(value.split("-"), gold, strict=False))


def _no_adjacent_consecutive(value: str) -> bool:
    words = value.split()
    for first, second in itertools.pairwise(words):
        a, b = first[0].lower(), second[0].lower()
        if len(a) != 1 or len(b) != 1 or ord(b) - ord(a) == 1:
            return False
    return True


def _square_brackets(value: str) -> bool:
    return all(w.startswith("[") and w.endswith("]") for w in value.split())


def _word_once(value: str, *, keyword: str) -> bool:
    return _occurrences(keyword, value) == 1


def _word_count(value: str, *, keyword: str, frequency: int, relation: str) -> bool:
    found = _occurrences(keyword, value)
    return found < frequency if relation == "less than" else found >= frequency


def _exclude_word(value: str, *, keyword: str) -> bool:
    return " " + keyword.strip() + " " not in value


def _paragraphs(value: str) -> bool:
    return divided_paragraphs(re.split(r"\s?\*\*\*\s?", value)) == 2


def _paragraphs2(value: str) -> bool:
    return divided_paragraphs(value.split("\n\n")) == 2


def _first_word_sent(value: str, *, first_word: str) -> bool:
    wanted = first_word.strip().lower()
    return all(s.strip() and s.split()[0].lower() == wanted for s in split_into_sentences(value))


def _first_word_answer(value: str, *, first_word: str) -> bool:
    words = value.split()
    return bool(words) and words[0].lower() == first_word.strip().lower()


_PUNCTUATION = re.compile(r"[^\w\s]")


def _last_word(text: str) -> str:
    return _PUNCTUATION.sub("", text.split()[-1]).lower()


def _last_word_sent(value: str, *, last_word: str) -> bool:
    wanted = last_word.strip().lower()
    return all(s.strip() and _last_word(s) == wanted for s in split_into_sentences(value))


def _last_word_answer(value: str, *, last_word: str) -> bool:
    return bool(value.split()) and _last_word(value) == last_word.strip().lower()


def _bigram_wrapping(value: str) -> bool:
    words = value.split()
    return all(
        words[i].startswith("<<") and words[i + 1].endswith(">>")
        for i in range(0, len(words) - 1, 2)
    )


def _copying_multiple(value: str, *, prompt_to_repeat: str, N: int) -> bool:
    copies = value.split("******")
    wanted = prompt_to_repeat.strip().lower()
    return len(copies) == N and all(c.strip().lower() == wanted for c in copies)


def _no_dot(value: str) -> bool:
    return "." not in value


def _no_exclamation(value: str) -> bool:
    return "!" not in value


_LOWERCASE_WORD = re.compile(r"\b[a-z]+\b")
_LETTER = re.compile(r"[a-zA-Z]")


def _lowercase_counting(value: str, *, N: int) -> bool:
    return len(_LOWERCASE_WORD.findall(value)) <= N


def _letter_counting(value: str, *, N: int, relation: str) -> bool:
    letters = len(_LETTER.findall(value))
    return letters < N if relation == "less than" else letters >= N


def _counting_composition(value: str, *, n_sent: int, n_words: int) -> bool:
    # IFEvalG counts every part's sentences, an empty first or last one too: an empty part has
    # none, so it fails (n_sent >= 1), and three parts that pass are three paragraphs
    paragraphs = re.split(r"\s?\*\*\*\s?", value)
    for paragraph in paragraphs:
        sentences = split_into_sentences(paragraph)
        if len(sentences) != n_sent or any(len(word_tokenize(s)) != n_words for s in sentences):
            return False
    return len(paragraphs) == 3


def _count_unique(value: str) -> bool:
    words = word_tokenize(value)
    return len(words) == len(set(words))


def _count_increment(value: str, *, keyword1: str, keyword2: str) -> bool:
    return _occurrences(keyword1, value) == 1 and _occurrences(keyword2, value) == 2


def _palindrome(value: str) -> bool:
    return any(w == w[::-1] for w in value.split())


def _keyword_position(value: str, *, keyword: str, n: int, m: int) -> bool:
    sentences = split_into_sentences(value)
    if len(sentences) < n:
        return False
    words = word_tokenize(sentences[n - 1])
    return len(words) >= m and words[m - 1] == keyword.strip()


def _start_end(value: str) -> bool:
    words = word_tokenize(value)
    return len(words) >= 2 and words[0].lower() == words[-1].lower()


_FUNCTIONS: Final[dict[str, Callable[..., bool]]] = {
    "copy:repeat_phrase": _repeat_phrase,
    "copy:copy": _copy,
    "new:copy_span_idx": _copy_span,
    "detectable_format:sentence_hyphens": _sentence_hyphens,
    "keywords:no_adjacent_consecutive": _no_adjacent_consecutive,
    "detectable_format:square_brackets": _square_brackets,
    "keywords:word_once": _word_once,
    "keywords:word_count_different_numbers": _word_count,
    "keywords:exclude_word_harder": _exclude_word,
    "paragraphs:paragraphs": _paragraphs,
    "paragraphs:paragraphs2": _paragraphs2,
    "first_word:first_word_sent": _first_word_sent,
    "first_word:first_word_answer": _first_word_answer,
    "last_word:last_word_sent": _last_word_sent,
    "last_word:last_word_answer": _last_word_answer,
    "detectable_format:bigram_wrapping": _bigram_wrapping,
    "copy:copying_simple": _copy,
    "copy:copying_multiple": _copying_multiple,
    "punctuation:punctuation_dot": _no_dot,
    "punctuation:punctuation_exclamation": _no_exclamation,
    "count:lowercase_counting": _lowercase_counting,
    "letters:letter_counting": _letter_counting,
    "count:counting_composition": _counting_composition,
    "count:count_unique": _count_unique,
    "count:count_increment_word": _count_increment,
    "keywords:palindrome": _palindrome,
    "keywords:keyword_specific_position": _keyword_position,
    "keywords:start_end": _start_end,
}


IFEVALG_CHECKS: Final[Mapping[str, Callable[..., bool]]] = {
    name: on_answer(check) for name, check in _FUNCTIONS.items()
}
"""Each check on the text open-instruct's ``IFEvalVerifier`` checks (``answer_text``: answer
tags removed, stripped). ``letters:letter_counting2`` is IFEval's ``keywords:letter_frequency``
on that text (checkers.py)."""
