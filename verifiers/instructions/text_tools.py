"""The tokenizers and the language detector IFEval's checks count with, loaded lazily.

IFEval (google-research/instruction_following_eval, and lm-eval's copy in
``lm_eval/tasks/ifeval/instructions_util.py``) counts words with nltk's
``RegexpTokenizer(r"\\w+")``, sentences with nltk's Punkt English model, capital words with
``nltk.word_tokenize``, and detects the language with langdetect: the same libraries,
called the same way.

Punkt's English parameters are nltk *data* (``punkt_tab``), which no PyPI package ships and which
this service never downloads: where nltk finds them (``NLTK_DATA``, ``~/nltk_data``) they are used;
otherwise nltk's Punkt tokenizer runs with empty parameters (no learned abbreviations, so "Mr."
ends a sentence). :func:`sentence_model` says which one is in use; the grader's details report it.
langdetect is seeded (``DetectorFactory.seed = 0``) so a reward never changes between two calls.
"""

from __future__ import annotations

import functools
import re
from typing import Any

__all__ = [
    "LanguageUnknown",
    "count_sentences",
    "count_words",
    "detect_language",
    "divided_paragraphs",
    "sentence_model",
    "sentence_tokenizer",
    "word_tokenize",
]

_WORD = re.compile(r"\w+")


class LanguageUnknown(Exception):
    """langdetect found no language features in the text (IFEval counts the check as followed)."""


@functools.cache
def sentence_tokenizer() -> Any:
    """nltk's Punkt tokenizer with the English model when nltk has it, else untrained."""
    from nltk.tokenize.punkt import PunktSentenceTokenizer, PunktTokenizer

    try:
        return PunktTokenizer("english")
    except LookupError:
        return PunktSentenceTokenizer()


def sentence_model() -> str:
    """``"punkt english"`` or ``"punkt untrained"`` (no punkt_tab data on this machine)."""
    from nltk.tokenize.punkt import PunktTokenizer

    return (
        "punkt english" if isinstance(sentence_tokenizer(), PunktTokenizer) else "punkt untrained"
    )


def divided_paragraphs(paragraphs: list[str]) -> int | None:
    """IFEval's paragraph count of a split text: an empty first or last part not counted;
    None when an empty part lies inside (IFEval: not followed)."""
    count = len(paragraphs)
    for index, paragraph in enumerate(paragraphs):
        if not paragraph.strip():
            if index in (0, len(paragraphs) - 1):
                count -= 1
            else:
                return None
    return count


def count_words(text: str) -> int:
    """IFEval's word count: nltk ``RegexpTokenizer(r"\\w+")`` tokens (``re.findall``)."""
    return len(_WORD.findall(text))


def count_sentences(text: str) -> int:
    return len(sentence_tokenizer().tokenize(text))


@functools.cache
def _treebank() -> Any:
    from nltk.tokenize import NLTKWordTokenizer

    return NLTKWordTokenizer()


def word_tokenize(text: str) -> list[str]:
    """``nltk.word_tokenize``: Punkt sentences, then nltk's Treebank word tokenizer on each."""
    words = _treebank()
    return [tok for sent in sentence_tokenizer().tokenize(text) for tok in words.tokenize(sent)]


@functools.cache
def _langdetect() -> Any:
    import langdetect
    from langdetect import DetectorFactory

    DetectorFactory.seed = 0
    return langdetect


def detect_language(text: str) -> str:
    """langdetect's language code of ``text``; :class:`LanguageUnknown` when it finds none."""
    langdetect = _langdetect()
    try:
        return str(langdetect.detect(text))
    except langdetect.LangDetectException as exc:
        raise LanguageUnknown(str(exc)) from exc
